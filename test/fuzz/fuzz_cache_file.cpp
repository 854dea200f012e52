// Fuzz target: a container's cache file in cniDir (corrupt, truncated or hostile). The input is
// written as `<cniDir>/<id>.json` and loaded with FileCache::load; an accepted record is replayed
// the way DEL and CHECK replay it — every attachment's cached config and result go through
// DelegateRunner::del/check (with a FakeProcessRunner standing in for the plugins found in a
// temporary binDir) and its result through the result decoder — and stored and loaded again.
// Checks: only CniError escapes (DEL reports a corrupt cache, it must not crash on it), and a
// loaded record survives record_to_json → file → load unchanged.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>

#include "cni/delegate_config.h"
#include "cni/result_codec.h"
#include "exec/delegate_runner.h"
#include "exec/plugin_invoker.h"
#include "exec/process.h"
#include "store/cache.h"
#include "fuzz_common.h"

using namespace manifold;

namespace {

const bool kQuiet = fuzz::quiet_logging();

constexpr const char* kContainerId = "3f0a9c5e1b2d4f6a8c0e2a4c6e8a0c2e";
/// The first-layout key: its file `<id>.json` accepts both format versions.
const store::EntryKey kKey{kContainerId, "", ""};

/// A temporary cniDir and binDir (with executable plugin stubs), removed at exit.
struct Dirs {
  std::filesystem::path root, cache, bin;
  Dirs() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "manifold-fuzz-cache-XXXXXX").string();
    if (!::mkdtemp(tmpl.data())) std::abort();
    root = tmpl;
    cache = root / "cache";
    bin = root / "bin";
    std::filesystem::create_directories(cache);
    std::filesystem::create_directories(bin);
    for (const char* plugin : {"bridge", "macvlan", "host-local", "portmap", "tuning", "sbr"}) {
      int fd = ::open((bin / plugin).c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0755);
      if (fd < 0) std::abort();
      ::close(fd);
    }
  }
  ~Dirs() {
    std::error_code ec;
    std::filesystem::remove_all(root, ec);
  }
};

Dirs& dirs() {
  static Dirs d;
  return d;
}

void write_file(const std::filesystem::path& path, std::string_view text) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) std::abort();
  while (!text.empty()) {
    ssize_t n = ::write(fd, text.data(), text.size());
    if (n <= 0) std::abort();
    text.remove_prefix(static_cast<size_t>(n));
  }
  ::close(fd);
}

void replay(const store::ContainerRecord& record) {
  exec::FakeProcessRunner runner;
  runner.set_handler([](const exec::ProcessRequest&) {
    exec::ProcessResult r;
    r.exit_code = 0;
    return r;
  });
  exec::PluginInvoker invoker(runner, {dirs().bin.string()}, std::chrono::seconds(5), {"PATH=/usr/bin"});
  exec::DelegateRunner delegates(invoker);
  for (const store::AttachmentRecord& a : record.attachments) {
    exec::DelegateTarget target{record.container_id, record.netns, a.ifname, "IgnoreUnknown=1", "/opt/cni/bin"};
    fuzz::accepts([&] { delegates.del(a.config, a.result, target); });
    fuzz::accepts([&] { (void)delegates.check(a.config, a.result, target); });
    if (!a.result.empty()) {
      Json conf = Json::parse(a.config, nullptr, false);
      const std::string version = conf.is_object() ? cni::delegate_version(conf) : std::string();
      fuzz::accepts([&] { (void)cni::decode_result_text(a.result, version); });
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input = fuzz::as_text(data, size);
  store::FileCache cache(dirs().cache);
  write_file(cache.record_path(kKey), input);

  std::optional<store::ContainerRecord> record;
  if (!fuzz::accepts([&] { record = cache.load(kKey); })) return 0;
  if (!record) fuzz::fuzz_bug("an existing cache file loaded as absent");
  if (record->container_id != kContainerId) fuzz::fuzz_bug("loaded another container's record");
  replay(*record);

  // The record as manifold would store it again must load back unchanged.
  write_file(cache.record_path(kKey), store::record_to_json(*record).dump() + "\n");
  std::optional<store::ContainerRecord> again;
  if (!fuzz::accepts([&] { again = cache.load(kKey); }) || !again || !(*again == *record))
    fuzz::fuzz_bug("a loaded cache record does not survive being stored and loaded again");
  return 0;
}
