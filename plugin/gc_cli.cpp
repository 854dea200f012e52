// Implementation of `manifold gc`: list, lock, load, decide by the netns path, remove. Entries
// without a recorded netns and unreadable entries are kept and reported (an operator can look at
// them with `manifold inspect`).
#include "plugin/gc_cli.h"

#include <filesystem>
#include <iostream>

#include "cni/error.h"
#include "store/cache.h"

namespace manifold::plugin {

int run_gc(const GcOptions& options) {
  if (options.cni_dir.empty()) {
    std::cerr << "manifold gc: --cni-dir must not be empty\n";
    return 2;
  }
  store::RealSleeper sleeper;
  store::FileCache cache(options.cni_dir, std::chrono::milliseconds(5000), sleeper);
  int removed = 0, kept = 0, failed = 0;
  std::vector<std::string> ids;
  try {
    ids = cache.list();
  } catch (const cni::CniError& e) {
    std::cerr << "manifold gc: " << e.msg() << "\n";
    return 1;
  }
  for (const auto& id : ids) {
    try {
      // A dry run must not create lock files; a real run serialises with CNI calls for the container.
      std::unique_ptr<store::LockGuard> lock;
      if (!options.dry_run) lock = cache.lock(id);
      auto record = cache.load(id);
      if (!record) continue;
      std::error_code ec;
      if (record->netns.empty()) {
        std::cout << "kept " << id << ": no network namespace recorded\n";
        ++kept;
        continue;
      }
      if (std::filesystem::exists(record->netns, ec) || (ec && ec != std::errc::no_such_file_or_directory)) {
        ++kept;
        continue;
      }
      if (!options.dry_run) cache.remove(id);
      std::cout << (options.dry_run ? "would remove " : "removed ") << id << ": network namespace " << record->netns
                << " no longer exists\n";
      ++removed;
    } catch (const cni::CniError& e) {
      std::cout << "kept " << id << ": " << e.msg() << "\n";
      ++failed;
    }
  }
  std::cout << (options.dry_run ? "would remove " : "removed ") << removed << ", kept " << kept + failed
            << " cache entr" << (kept + failed == 1 ? "y" : "ies") << " in " << options.cni_dir << "\n";
  return failed > 0 ? 1 : 0;
}

}  // namespace manifold::plugin
