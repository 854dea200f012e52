// Implementation of `manifold gc`: list, lock, load, decide by the netns path, DEL without a
// namespace, then forget or keep what failed. Unreadable entries are kept and reported (an operator
// can look at them with `manifold inspect`; the runtime's DEL or GC releases them best-effort).
#include "plugin/cli/gc.h"

#include <filesystem>
#include <iostream>

#include "cni/error.h"
#include "exec/delegate_runner.h"
#include "exec/plugin_finder.h"
#include "exec/plugin_invoker.h"
#include "exec/process.h"
#include "engine/detach.h"
#include "engine/session.h"
#include "store/cache.h"
#include "util/clock.h"
#include "util/file_writer.h"

extern char** environ;

namespace manifold::plugin {

namespace {

/// What happened to one entry.
enum class Outcome { Alive, Collected, Kept };

bool netns_gone(const std::string& path) {
  std::error_code ec;
  return !std::filesystem::exists(path, ec) && (!ec || ec == std::errc::no_such_file_or_directory);
}

std::string networks_of(const store::ContainerRecord& record) {
  std::string names;
  for (const auto& a : record.attachments) names += (names.empty() ? "" : ", ") + a.name + " (" + a.ifname + ")";
  return names;
}

/// Collects one entry whose namespace is gone: DEL of every attachment without a namespace, then
/// the entry goes, or stays with the attachments whose DEL failed.
Outcome collect(store::Cache& cache, const store::ContainerRecord& record, const GcOptions& options,
                const std::vector<std::string>& env) {
  exec::RealProcessRunner processes;
  std::vector<std::string> dirs{options.bin_dir};
  for (auto& d : exec::split_cni_path(record.cni_path)) dirs.push_back(std::move(d));
  engine::Session session;  // only what a DEL of cached attachments uses
  session.invoker =
      std::make_unique<exec::PluginInvoker>(processes, dirs, std::chrono::seconds(options.delegate_timeout_s), env);
  session.runner = std::make_unique<exec::DelegateRunner>(*session.invoker);
  session.file_writer = std::make_shared<util::RealFileWriter>();
  std::optional<cni::CniError> error;
  auto failed = engine::delete_attachments(session, engine::invocation_for(record), record, "", error);
  if (failed.empty()) {
    cache.remove(record.key());
    std::cout << "removed " << record.key().str() << ": network namespace " << record.netns
              << " no longer exists; released " << networks_of(record) << "\n";
    return Outcome::Collected;
  }
  // A first-layout entry stays as it is (every DEL is idempotent); others keep what failed.
  if (!record.network.empty()) engine::keep_failed(cache, record, failed);
  store::ContainerRecord left = record;
  left.attachments = failed;
  std::cout << "kept " << record.key().str() << ": DEL of " << networks_of(left)
            << " failed: " << (error ? error->msg() : std::string("unknown error")) << "\n";
  return Outcome::Kept;
}

/// Examines one entry under its container's lock (none for a dry run, which must not create lock
/// files).
Outcome handle(store::FileCache& cache, const store::EntryKey& key, const GcOptions& options,
               const std::vector<std::string>& env) {
  std::unique_ptr<store::LockGuard> lock;
  if (!options.dry_run) lock = cache.lock(key.container_id);
  auto record = cache.load(key);
  if (!record || !netns_gone(record->netns)) return Outcome::Alive;
  if (options.dry_run) {
    std::cout << "would DEL " << networks_of(*record) << " of " << key.str() << " without a namespace and remove it: "
              << "network namespace " << record->netns << " no longer exists\n";
    return Outcome::Collected;
  }
  return collect(cache, *record, options, env);
}

}  // namespace

int run_gc(const GcOptions& options) {
  if (options.cni_dir.empty()) {
    std::cerr << "manifold gc: --cni-dir must not be empty\n";
    return 2;
  }
  std::vector<std::string> env;
  for (char** e = environ; e && *e; ++e) env.emplace_back(*e);
  util::RealSleeper sleeper;
  store::FileCache cache(options.cni_dir, std::chrono::milliseconds(5000), sleeper);
  std::vector<store::EntryKey> keys;
  try {
    keys = cache.list();
  } catch (const cni::CniError& e) {
    std::cerr << "manifold gc: " << e.msg() << "\n";
    return 1;
  }
  try {
    if (!options.dry_run)
      if (int swept = cache.sweep_orphan_locks()) std::cout << "removed " << swept << " orphaned lock file(s)\n";
  } catch (const cni::CniError& e) {
    std::cout << "kept the lock files: " << e.msg() << "\n";
  }
  int collected = 0, kept = 0, failed = 0;
  for (const auto& key : keys) {
    try {
      switch (handle(cache, key, options, env)) {
        case Outcome::Alive:
          ++kept;
          break;
        case Outcome::Collected:
          ++collected;
          break;
        case Outcome::Kept:
          ++failed;
          break;
      }
    } catch (const cni::CniError& e) {
      std::cout << "kept " << key.str() << ": " << e.msg() << "\n";
      ++failed;
    }
  }
  std::cout << (options.dry_run ? "would collect " : "collected ") << collected << ", kept " << kept + failed
            << " cache entr" << (kept + failed == 1 ? "y" : "ies") << " in " << options.cni_dir << "\n";
  return failed > 0 ? 1 : 0;
}

}  // namespace manifold::plugin
