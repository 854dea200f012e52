// Tests for the cache's entry layout: one entry per (container, network, CNI_IFNAME), the encoded
// file names, key validation, entries of one container kept apart (podman `--network a,b`), the lock
// file going with the container's last entry (a refused call leaves nothing), and entries of the
// first layout (`<containerID>.json`, version 1) still read, answered for any network with their
// ifname, retired when saved over, and removed.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>

#include "cni_error_of.h"
#include "store/cache.h"
#include "temp_dir.h"

namespace fs = std::filesystem;
using manifold::Json;
using manifold::store::ContainerRecord;
using manifold::store::EntryKey;
using manifold::store::FileCache;
using manifold::test::code_of;
using manifold::test::TempDir;

namespace {

ContainerRecord entry(const std::string& id, const std::string& network, const std::string& ifname) {
  ContainerRecord r;
  r.container_id = id;
  r.network = network;
  r.ifname = ifname;
  r.netns = "/var/run/netns/x";
  r.cni_version = "1.0.0";
  r.cni_path = "/usr/lib/cni";
  manifold::store::AttachmentRecord a;
  a.name = network;
  a.ifname = ifname;
  a.config = R"({"cniVersion":"1.0.0","name":"n","type":"bridge"})";
  a.cluster_network = true;
  r.attachments = {a};
  return r;
}

/// A version-1 file, as the first layout wrote it.
void write_legacy(const fs::path& dir, const std::string& id, const std::string& ifname) {
  Json j = {{"kind", "manifold-cache"},
            {"version", 1},
            {"containerId", id},
            {"netns", "/var/run/netns/x"},
            {"ifname", ifname},
            {"cniVersion", "1.0.0"},
            {"attachments", Json::array({{{"name", "old"},
                                          {"ifname", ifname},
                                          {"config", R"({"cniVersion":"1.0.0","name":"old","type":"bridge"})"},
                                          {"result", ""},
                                          {"clusterNetwork", true},
                                          {"extra", Json::object()}}})},
            {"extra", Json::object()}};
  fs::create_directories(dir);
  std::ofstream(dir / (id + ".json")) << j.dump();
}

std::vector<std::string> files_below(const fs::path& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::recursive_directory_iterator(dir))
    if (!e.is_directory()) out.push_back(fs::relative(e.path(), dir).string());
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

TEST_CASE("cache layout: entry file names encode the network and round-trip", "[store]") {
  using manifold::store::entry_file_name;
  using manifold::store::parse_entry_file_name;
  CHECK(entry_file_name("podman-a", "eth0") == "podman-a@eth0.json");
  CHECK(entry_file_name("a.b/c@d %", "net1") == "a%2Eb%2Fc%40d%20%25@net1.json");
  CHECK(entry_file_name("ünï", "e") == "%C3%BCn%C3%AF@e.json");
  for (const std::string& network : std::vector<std::string>{"x", "a.b/c@d %", "..", std::string("z\0y", 3), "ünï"}) {
    auto parsed = parse_entry_file_name(entry_file_name(network, "eth1"));
    REQUIRE(parsed);
    CHECK(parsed->first == network);
    CHECK(parsed->second == "eth1");
  }
  for (const char* other : {"x.json", "@eth0.json", "a@eth0", "a%2@eth0.json", "a%zz@eth0.json", "a.b@eth0.json",
                            "a%2e@eth0.json", "c1.lock"})
    CHECK_FALSE(parse_entry_file_name(other));
}

TEST_CASE("cache layout: keys are validated before they name a file", "[store]") {
  using manifold::store::validate_entry_key;
  CHECK_NOTHROW(validate_entry_key({"c1", "net", "eth0"}));
  CHECK_NOTHROW(validate_entry_key({"c1", "", ""}));  // a first-layout entry
  CHECK(code_of([] { validate_entry_key({"../c", "net", "eth0"}); }) == 4);
  CHECK(code_of([] { validate_entry_key({"c1", "net", ""}); }) == 4);
  CHECK(code_of([] { validate_entry_key({"c1", "net", "eth0/x"}); }) == 4);
  CHECK(code_of([] { validate_entry_key({"c1", "net", "a-very-long-ifname"}); }) == 4);
  CHECK(code_of([] { validate_entry_key({"c1", "", "eth0"}); }) == 7);
  std::string msg;
  CHECK(code_of([] { validate_entry_key({"c1", std::string(201, 'n'), "eth0"}); }, &msg) == 7);
  CHECK(msg.find("too long") != std::string::npos);
  CHECK(code_of([] { validate_entry_key({"c1", std::string(67, '/'), "eth0"}); }) == 7);  // 201 encoded
  CHECK_NOTHROW(validate_entry_key({"c1", std::string(200, 'n'), "eth0"}));
}

TEST_CASE("cache layout: two networks of one container are two entries, removed one by one", "[store]") {
  TempDir dir;
  FileCache cache(dir.path());
  ContainerRecord a = entry("ctr", "a", "eth0"), b = entry("ctr", "b", "eth1");
  cache.save(a);
  cache.save(b);
  CHECK(cache.load({"ctr", "a", "eth0"}) == a);
  CHECK(cache.load({"ctr", "b", "eth1"}) == b);
  CHECK_FALSE(cache.load({"ctr", "a", "eth1"}));  // the same network under another ifname is another entry
  CHECK(files_below(dir.path()) == std::vector<std::string>{"ctr/a@eth0.json", "ctr/b@eth1.json"});
  {
    auto lock = cache.lock("ctr");
    cache.remove({"ctr", "a", "eth0"});
  }
  CHECK(cache.load({"ctr", "b", "eth1"}) == b);
  CHECK(fs::exists(cache.lock_path("ctr")));  // b still lives: its lock file stays
  cache.remove({"ctr", "b", "eth1"});
  CHECK(files_below(dir.path()).empty());
  CHECK_FALSE(fs::exists(dir.path() / "ctr"));
}

TEST_CASE("cache layout: a save creates whatever directory is missing, owner-only, and refuses a file in the way",
          "[store]") {
  TempDir dir;
  const fs::path root = dir.path() / "nested" / "cache";
  FileCache cache(root);  // a long-lived cache (the agent's): directories vanish under it
  ContainerRecord a = entry("ctr", "a", "eth0");
  auto owner_only = [](const fs::path& p) {
    return fs::status(p).permissions() == (fs::perms::owner_read | fs::perms::owner_write | fs::perms::owner_exec);
  };
  cache.save(a);
  CHECK(owner_only(root));
  CHECK(owner_only(root / "ctr"));
  cache.remove({"ctr", "a", "eth0"});  // the container's directory goes with its last entry
  REQUIRE_FALSE(fs::exists(root / "ctr"));
  cache.save(a);
  CHECK(cache.load({"ctr", "a", "eth0"}) == a);
  fs::remove_all(root);
  cache.save(a);
  CHECK(cache.load({"ctr", "a", "eth0"}) == a);
  CHECK(owner_only(root / "ctr"));

  fs::remove_all(root / "ctr");
  std::ofstream(root / "ctr") << "not a directory";
  CHECK(code_of([&] { cache.save(a); }) == 5);
  CHECK(fs::is_regular_file(root / "ctr"));
  CHECK(fs::is_empty(root / ".tmp"));  // the refused write's temp file is gone
}

TEST_CASE("cache layout: a lock taken by a call that saved nothing leaves no file", "[store]") {
  TempDir dir;
  FileCache cache(dir.path());
  { auto lock = cache.lock("refused"); }
  CHECK(files_below(dir.path()).empty());
  cache.save(entry("kept", "a", "eth0"));
  { auto lock = cache.lock("kept"); }
  CHECK(files_below(dir.path()) == std::vector<std::string>{"kept.lock", "kept/a@eth0.json"});
}

TEST_CASE("cache layout: a first-layout entry is read for its ifname, retired and removed", "[store]") {
  TempDir dir;
  write_legacy(dir.path(), "old1", "eth0");
  FileCache cache(dir.path());
  CHECK(cache.list() == std::vector<EntryKey>{{"old1", "", ""}});
  CHECK(cache.list("old1") == std::vector<EntryKey>{{"old1", "", ""}});
  auto legacy = cache.load({"old1", "", ""});
  REQUIRE(legacy);
  CHECK(legacy->network.empty());
  CHECK(legacy->cni_path.empty());
  CHECK(legacy->attachments.at(0).name == "old");
  // It answers for any network asked with its ifname, and for no other ifname.
  CHECK(cache.load({"old1", "any-net", "eth0"}) == legacy);
  CHECK_FALSE(cache.load({"old1", "any-net", "eth1"}));
  SECTION("removing the entry removes the legacy file") {
    cache.remove({"old1", "any-net", "eth0"});
    CHECK(files_below(dir.path()).empty());
  }
  SECTION("removing another ifname's entry keeps it") {
    cache.remove({"old1", "any-net", "eth1"});
    CHECK(files_below(dir.path()) == std::vector<std::string>{"old1.json", "old1.lock"});
  }
  SECTION("saving the entry under its network retires the legacy file") {
    ContainerRecord moved = *legacy;
    moved.network = "any-net";
    cache.save(moved);
    CHECK(files_below(dir.path()) == std::vector<std::string>{"old1/any-net@eth0.json"});
    CHECK(cache.load({"old1", "any-net", "eth0"}) == moved);
  }
  SECTION("an unreadable legacy file does not fail the save of the new entry, and stays") {
    std::ofstream(dir.path() / "old1.json", std::ios::trunc) << "{not json";
    ContainerRecord moved = *legacy;
    moved.network = "any-net";
    CHECK_NOTHROW(cache.save(moved));
    CHECK(cache.load({"old1", "any-net", "eth0"}) == moved);
    CHECK(files_below(dir.path()) == std::vector<std::string>{"old1.json", "old1/any-net@eth0.json"});
  }
  SECTION("a legacy key is removed directly, and cannot be saved") {
    CHECK(code_of([&] { cache.save(*legacy); }) != 0);
    cache.remove({"old1", "", ""});
    CHECK(files_below(dir.path()).empty());
  }
}

TEST_CASE("cache layout: the sweep removes lock files of containers without an entry, not busy ones", "[store]") {
  TempDir dir;
  FileCache cache(dir.path());
  cache.save(entry("live", "a", "eth0"));
  { auto lock = cache.lock("live"); }                 // its lock file stays: the container has an entry
  std::ofstream(dir.path() / "orphan.lock").close();  // a call killed between its two unlinks
  std::ofstream(dir.path() / "busy.lock").close();
  FileCache other(dir.path());
  auto held = other.lock("busy");  // a running call for a container that has no entry yet
  CHECK(cache.sweep_orphan_locks() == 1);
  CHECK(files_below(dir.path()) == std::vector<std::string>{"busy.lock", "live.lock", "live/a@eth0.json"});
  held.reset();
  CHECK(cache.sweep_orphan_locks() == 0);  // `busy` removed its own lock file when it let go
  CHECK(files_below(dir.path()) == std::vector<std::string>{"live.lock", "live/a@eth0.json"});
}
