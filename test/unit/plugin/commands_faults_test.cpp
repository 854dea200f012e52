// Tests for how the CNI verbs (plugin/cni/verbs over lib/engine) survive faults: corrupt cache records
// (a cniArgs that is not a string, a cached config that is not JSON), an unreadable entry met by
// ADD, a cache that cannot be written or removed while ADD rolls back or DEL finishes, and GC
// (no CNI_NETNS for collected containers; an entry leaves the cache only when its DEL succeeded).
#include <catch2/catch.hpp>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "cni/error.h"
#include "plugin/cni/verbs.h"
#include "plugin/fakes.h"

using manifold::Json;
using manifold::cni::DispatchOutput;
using manifold::test::Call;
using manifold::test::cni_error_answer;
using manifold::test::Env;
using manifold::test::World;
using Strings = std::vector<std::string>;

namespace {

/// Two confs: bridge (0.4.0, eth0) and macvlan (1.0.0, net1).
Json two_delegates(const World& w, const std::string& version = "1.0.0") {
  return Json{{"cniVersion", version},
              {"name", "manifold-net"},
              {"type", "manifold"},
              {"cniDir", "/var/lib/cni/manifold-test"},
              {"logToStderr", false},
              {"binDir", w.bin.str()},
              {"delegates", Json::parse(R"([
                {"cniVersion": "0.4.0", "name": "cluster", "type": "bridge"},
                {"cniVersion": "1.1.0", "name": "storage", "type": "macvlan"}])")}};
}

Json error_of(const DispatchOutput& out) {
  REQUIRE(out.exit_code == 1);
  Json e = Json::parse(out.stdout_text);
  REQUIRE(e.contains("code"));
  return e;
}

/// Edits the cached record of `id` in place.
template <typename Fn>
void edit_record(World& w, const std::string& id, Fn fn) {
  auto record = w.cache.load(w.key(id));
  REQUIRE(record);
  fn(*record);
  w.cache.save(*record);
}

/// A Cache over the world's cache whose save (after `saves_allowed` successful ones), progress mark and remove
/// fail like a full or read-only disk.
class BrokenDiskCache final : public manifold::store::Cache {
 public:
  BrokenDiskCache(manifold::store::Cache& inner, int saves_allowed, bool remove_fails, bool marks_refused)
      : inner_(inner), saves_left_(saves_allowed), remove_fails_(remove_fails), marks_refused_(marks_refused) {}
  std::optional<manifold::store::ContainerRecord> load(const manifold::store::EntryKey& key) override {
    return inner_.load(key);
  }
  void save(const manifold::store::ContainerRecord& record) override {
    if (saves_left_ >= 0 && saves_left_-- == 0)
      throw manifold::cni::CniError(manifold::cni::ErrorCode::Io, "cannot write cache: No space left on device");
    if (saves_left_ < -1) saves_left_ = -1;
    inner_.save(record);
  }
  /// A mark in place, or (a file system without extended attributes) a save that counts as one.
  bool mark_started(const manifold::store::ContainerRecord& record, std::size_t count) override {
    if (!marks_refused_) return inner_.mark_started(record, count);
    save(record);
    return true;
  }
  /// Like mark_started.
  bool mark_state(const manifold::store::ContainerRecord& record) override {
    if (!marks_refused_) return inner_.mark_state(record);
    save(record);
    return true;
  }
  void remove(const manifold::store::EntryKey& key) override {
    if (remove_fails_)
      throw manifold::cni::CniError(manifold::cni::ErrorCode::Io, "cannot remove cache: Read-only file system");
    inner_.remove(key);
  }
  std::vector<manifold::store::EntryKey> list() override { return inner_.list(); }
  std::vector<manifold::store::EntryKey> list(const std::string& id) override { return inner_.list(id); }
  bool is_idle(const std::string& id) override { return inner_.is_idle(id); }
  int sweep_orphan_locks() override { return inner_.sweep_orphan_locks(); }
  std::unique_ptr<manifold::store::LockGuard> lock(const std::string& id) override { return inner_.lock(id); }

 private:
  manifold::store::Cache& inner_;
  int saves_left_;
  bool remove_fails_;
  bool marks_refused_;
};

/// Runs one verb like World::run, with the cache replaced by a BrokenDiskCache (`marks_refused`: its
/// progress marks fall back to saves).
DispatchOutput run_on_broken_disk(World& w, const std::string& command, const Json& config, int saves_allowed,
                                  bool remove_fails, bool marks_refused = false) {
  manifold::plugin::Services s = w.services();
  s.open_cache = [&w, saves_allowed, remove_fails,
                  marks_refused](const std::string&) -> std::unique_ptr<manifold::store::Cache> {
    return std::make_unique<BrokenDiskCache>(w.cache, saves_allowed, remove_fails, marks_refused);
  };
  std::map<std::string, std::string> env = {{"CNI_COMMAND", command},         {"CNI_CONTAINERID", "ctr1"},
                                            {"CNI_IFNAME", "eth0"},           {"CNI_NETNS", w.netns_path},
                                            {"CNI_ARGS", "K8S_POD_NAME=web"}, {"CNI_PATH", "/nonexistent/cni/bin"}};
  manifold::plugin::Commands commands(s);
  return manifold::cni::dispatch(env, config.dump(), commands);
}

Env with_args(const std::string& args) {
  Env e;
  e.args = args;
  return e;
}

}  // namespace

TEST_CASE("DEL of a record whose cached cniArgs is not a string deletes every network best-effort",
          "[plugin][commands]") {
  World w;
  Json config = two_delegates(w);
  REQUIRE(w.run("ADD", config, with_args("K8S_POD_NAME=web")).exit_code == 0);
  edit_record(w, "ctr1", [](auto& r) { r.attachments[1].cni_args = 42; });
  size_t before = w.call_count();
  auto out = w.run("DEL", config, with_args("K8S_POD_NAME=web"));
  INFO(out.stdout_text);
  REQUIRE(out.exit_code == 0);
  auto calls = w.calls_since(before);
  REQUIRE(w.briefs_since(before) == Strings{"macvlan DEL net1", "bridge DEL eth0"});
  // The entry's own value is unusable: the runtime's CNI_ARGS stand in; the namespace is kept.
  CHECK(calls[0].args == "K8S_POD_NAME=web");
  CHECK(calls[0].netns == w.netns_path);
  CHECK(calls[1].args == "IgnoreUnknown=true;K8S_POD_NAME=web");
  CHECK(w.cache.list().empty());
  CHECK_FALSE(w.has_link(w.netns_path, "net1"));
  CHECK_FALSE(w.has_link(w.netns_path, "eth0"));
}

TEST_CASE("CHECK of a corrupt cached attachment is a clear decoding error", "[plugin][commands]") {
  World w;
  Json config = two_delegates(w);
  REQUIRE(w.run("ADD", config).exit_code == 0);
  SECTION("cniArgs that is not a string") {
    edit_record(w, "ctr1", [](auto& r) { r.attachments[1].cni_args = Json::array({"IP=1.2.3.4"}); });
    Json e = error_of(w.run("CHECK", config));
    CHECK(e["code"] == 6);
    CHECK_THAT(e["msg"].get<std::string>(), Catch::Contains("\"storage\" (net1)") && Catch::Contains("cniArgs"));
  }
  SECTION("a cached config that is not JSON") {
    edit_record(w, "ctr1", [](auto& r) { r.attachments[0].config = "{\"cniVersion\": \"0.4"; });
    Json e = error_of(w.run("CHECK", config));
    CHECK(e["code"] == 6);
    CHECK_THAT(e["msg"].get<std::string>(), Catch::Contains("\"cluster\" (eth0)"));
  }
  SECTION("a truncated cached result") {
    edit_record(w, "ctr1", [](auto& r) { r.attachments[1].result.resize(r.attachments[1].result.size() / 2); });
    Json e = error_of(w.run("CHECK", config));
    CHECK(e["code"] == 6);
    CHECK_THAT(e["msg"].get<std::string>(), Catch::Contains("\"storage\" (net1)"));
  }
}

TEST_CASE("DEL of a record with an unusable cached config deletes the configured networks best-effort",
          "[plugin][commands]") {
  World w;
  Json config = two_delegates(w);
  REQUIRE(w.run("ADD", config).exit_code == 0);
  edit_record(w, "ctr1", [](auto& r) { r.attachments[1].config = "not json"; });
  size_t before = w.call_count();
  auto out = w.run("DEL", config);
  INFO(out.stdout_text);
  REQUIRE(out.exit_code == 0);
  REQUIRE(w.briefs_since(before) == Strings{"macvlan DEL net1", "bridge DEL eth0"});
  for (const Call& c : w.calls_since(before)) CHECK_FALSE(c.netns);
  CHECK(w.cache.list().empty());
}

TEST_CASE("ADD refuses to overwrite an unreadable cache entry of the same container", "[plugin][commands]") {
  World w;
  Json config = two_delegates(w);
  REQUIRE(w.run("ADD", config).exit_code == 0);
  w.cache.corrupt(w.key("ctr1"));
  std::filesystem::remove(w.netns_path);  // a new sandbox at a new path, same container ID
  Env fresh;
  fresh.netns = w.make_netns_file("pod-netns-2");
  size_t before = w.call_count();
  Json e = error_of(w.run("ADD", config, fresh));
  CHECK(e["code"] == 6);
  CHECK_THAT(e["msg"].get<std::string>(), Catch::Contains("container ctr1") && Catch::Contains("DEL"));
  CHECK(w.call_count() == before);
  CHECK_THROWS_AS(w.cache.load(w.key("ctr1")), manifold::cni::CniError);  // kept for the DEL

  REQUIRE(w.run("DEL", config, fresh).exit_code == 0);
  CHECK(w.cache.list().empty());
  REQUIRE(w.run("ADD", config, fresh).exit_code == 0);
}

TEST_CASE("ADD on a failing disk rolls back and reports the disk error, even when the entry cannot be removed",
          "[plugin][commands]") {
  World w;
  Json config = two_delegates(w);
  // Saves: both networks before bridge, both results with the complete mark (fails).
  auto out = run_on_broken_disk(w, "ADD", config, 1, true);
  Json e = error_of(out);
  CHECK(e["code"] == 5);
  CHECK(e["msg"] == "cannot write cache: No space left on device");
  CHECK(w.briefs_since(0) == Strings{"bridge ADD eth0", "macvlan ADD net1", "macvlan DEL net1", "bridge DEL eth0"});
  CHECK_FALSE(w.has_link(w.netns_path, "eth0"));
  CHECK_FALSE(w.has_link(w.netns_path, "net1"));
  CHECK_FALSE(w.cache.is_locked("ctr1"));

  SECTION("when the entry can be removed, nothing is left") {
    World v;
    auto again = run_on_broken_disk(v, "ADD", two_delegates(v), 1, false);
    CHECK(error_of(again)["code"] == 5);
    CHECK(v.cache.list().empty());
  }
  SECTION("those two saves are all an ADD of two networks writes") {
    World v;
    REQUIRE(run_on_broken_disk(v, "ADD", two_delegates(v), 2, false).exit_code == 0);
    CHECK(v.cache.load(v.key("ctr1")));
  }
}

TEST_CASE("every network is recorded before the first delegate runs, in one write, results after",
          "[plugin][commands]") {
  World w;
  std::vector<manifold::store::ContainerRecord> seen;  // the entry while each delegate's ADD runs
  w.intercept = [&](const Call& c) -> std::optional<manifold::exec::ProcessResult> {
    if (c.command == "ADD") seen.push_back(*w.cache.load(w.key("ctr1")));
    return std::nullopt;
  };
  // One save allowed: the record of both networks. The second, both results with the complete
  // mark, fails and the ADD rolls back.
  DispatchOutput out = run_on_broken_disk(w, "ADD", two_delegates(w), 1, false);
  REQUIRE(seen.size() == 2);
  for (const manifold::store::ContainerRecord& r : seen) {
    REQUIRE(r.attachments.size() == 2);
    CHECK(r.attachments[0].ifname == "eth0");
    CHECK(r.attachments[1].ifname == "net1");
    CHECK(r.attachments[0].result.empty());
    CHECK(r.attachments[1].result.empty());
    CHECK(r.attachments[0].delegate_started);
  }
  // macvlan is marked started (in place, no save) before it runs, not before.
  CHECK_FALSE(seen[0].attachments[1].delegate_started);
  CHECK(seen[1].attachments[1].delegate_started);
  CHECK(w.cache.marks() == 1);
  CHECK(error_of(out)["code"] == 5);
  CHECK(w.briefs_since(0) == Strings{"bridge ADD eth0", "macvlan ADD net1", "macvlan DEL net1", "bridge DEL eth0"});
  CHECK(w.cache.list().empty());

  SECTION("a delegate that fails leaves the networks after it out of the rollback") {
    World v;
    v.intercept = [](const Call& c) -> std::optional<manifold::exec::ProcessResult> {
      if (c.command == "ADD" && c.type == "bridge") return cni_error_answer(11, "bridge is busy");
      return std::nullopt;
    };
    CHECK(error_of(v.run("ADD", two_delegates(v)))["code"] == 11);
    CHECK(v.briefs_since(0) == Strings{"bridge ADD eth0", "bridge DEL eth0"});
    CHECK(v.cache.list().empty());
  }
}

TEST_CASE("where no progress mark can be set, each later delegate's start is a save that writes the results before it",
          "[plugin][commands]") {
  World w;
  std::vector<manifold::store::ContainerRecord> seen;
  w.intercept = [&](const Call& c) -> std::optional<manifold::exec::ProcessResult> {
    if (c.command == "ADD") seen.push_back(*w.cache.load(w.key("ctr1")));
    return std::nullopt;
  };
  // Saves: both networks, macvlan's start (with bridge's result), the complete mark.
  REQUIRE(run_on_broken_disk(w, "ADD", two_delegates(w), 3, false, true).exit_code == 0);
  REQUIRE(seen.size() == 2);
  CHECK_FALSE(seen[1].attachments[0].result.empty());
  CHECK(seen[1].attachments[1].delegate_started);

  SECTION("a full disk at that save rolls back what ran, and the delegate never starts") {
    World v;
    CHECK(error_of(run_on_broken_disk(v, "ADD", two_delegates(v), 1, false, true))["code"] == 5);
    CHECK(v.briefs_since(0) == Strings{"bridge ADD eth0", "bridge DEL eth0"});
    CHECK(v.cache.list().empty());
  }
}

TEST_CASE("DEL after a kill mid-ADD skips the networks whose delegate never started, also with retryDeleteOnError",
          "[plugin][commands]") {
  World w;
  Json config = two_delegates(w);
  config["retryDeleteOnError"] = true;
  std::optional<manifold::store::ContainerRecord> at_kill;  // the entry while bridge's ADD runs
  w.intercept = [&](const Call& c) -> std::optional<manifold::exec::ProcessResult> {
    if (c.command == "ADD" && c.type == "bridge") at_kill = w.cache.load(w.key("ctr1"));
    return std::nullopt;
  };
  REQUIRE(w.run("ADD", config).exit_code == 0);
  REQUIRE(at_kill);
  REQUIRE_FALSE(at_kill->attachments[1].delegate_started);
  REQUIRE(w.run("DEL", config).exit_code == 0);
  // The runtime's DEL after manifold was killed inside bridge's ADD: macvlan never ran, and its
  // DEL would fail the way host-device's does for an interface it never moved.
  w.cache.save(*at_kill);
  w.intercept = [](const Call& c) -> std::optional<manifold::exec::ProcessResult> {
    if (c.command == "DEL" && c.type == "macvlan") return cni_error_answer(11, "failed to find net1");
    return std::nullopt;
  };
  size_t before = w.call_count();
  DispatchOutput out = w.run("DEL", config);
  INFO(out.stdout_text);
  CHECK(out.exit_code == 0);
  CHECK(w.briefs_since(before) == Strings{"bridge DEL eth0"});
  CHECK(w.cache.list().empty());

  SECTION("a network whose delegate had started is DELeted, and kept while its DEL fails") {
    at_kill->attachments[1].delegate_started = true;
    w.cache.save(*at_kill);
    before = w.call_count();
    CHECK(error_of(w.run("DEL", config))["code"] == 11);
    CHECK(w.briefs_since(before) == Strings{"macvlan DEL net1", "bridge DEL eth0"});
    CHECK(w.ids() == Strings{"ctr1"});
  }
}

TEST_CASE("DEL succeeds when every network was deleted but the cache entry cannot be removed", "[plugin][commands]") {
  World w;
  Json config = two_delegates(w);
  REQUIRE(w.run("ADD", config).exit_code == 0);
  size_t before = w.call_count();
  auto out = run_on_broken_disk(w, "DEL", config, -1, true);
  INFO(out.stdout_text);
  CHECK(out.exit_code == 0);
  CHECK(w.briefs_since(before) == Strings{"macvlan DEL net1", "bridge DEL eth0"});
  CHECK(w.ids() == Strings{"ctr1"});  // stale but harmless: the next DEL is idempotent
  REQUIRE(w.run("DEL", config).exit_code == 0);
  CHECK(w.cache.list().empty());

  SECTION("a failing delegate still reports its own error, not the disk's") {
    REQUIRE(w.run("ADD", config).exit_code == 0);
    w.intercept = [](const Call& c) -> std::optional<manifold::exec::ProcessResult> {
      if (c.command == "DEL" && c.type == "macvlan") return cni_error_answer(11, "macvlan is busy");
      return std::nullopt;
    };
    Json retrying = config;
    retrying["retryDeleteOnError"] = true;
    Json e = error_of(run_on_broken_disk(w, "DEL", retrying, 0, true));
    CHECK(e["code"] == 11);
    CHECK_THAT(e["msg"].get<std::string>(), Catch::Contains("macvlan is busy"));
  }
}

TEST_CASE("GC deletes collected containers without CNI_NETNS and keeps entries whose DEL failed",
          "[plugin][commands]") {
  World w;
  Json config = two_delegates(w, "1.1.0");
  Env a;
  a.container_id = "ctr-a";
  a.netns = w.make_netns_file("netns-a");
  REQUIRE(w.run("ADD", config, a).exit_code == 0);
  auto recorded = *w.cache.load(w.key("ctr-a"));
  Json gc = config;
  gc["cni.dev/valid-attachments"] = Json::array();
  Env none;
  none.container_id = "";
  none.ifname = "";
  none.netns = "";

  bool fail_macvlan = true;
  w.intercept = [&](const Call& c) -> std::optional<manifold::exec::ProcessResult> {
    if (c.command == "DEL" && c.type == "macvlan" && fail_macvlan) return cni_error_answer(11, "macvlan is busy");
    return std::nullopt;
  };
  size_t before = w.call_count();
  Json e = error_of(w.run("GC", gc, none));
  CHECK(e["code"] == 11);
  auto calls = w.calls_since(before);
  REQUIRE(w.briefs_since(before) == Strings{"macvlan DEL net1", "bridge DEL eth0", "macvlan GC "});
  // The namespace file still exists, yet a collected container's delegates get no CNI_NETNS.
  CHECK_FALSE(calls[0].netns);
  CHECK_FALSE(calls[1].netns);
  auto kept = w.cache.load(w.key("ctr-a"));
  REQUIRE(kept);
  REQUIRE(kept->attachments.size() == 1);
  CHECK(kept->attachments[0] == recorded.attachments[1]);

  fail_macvlan = false;
  before = w.call_count();
  REQUIRE(w.run("GC", gc, none).exit_code == 0);
  CHECK(w.briefs_since(before) == Strings{"macvlan DEL net1", "macvlan GC "});
  CHECK(w.cache.list().empty());
}

TEST_CASE("GC keeps an unreadable entry of a live container and releases a dead one's networks best-effort",
          "[plugin][commands]") {
  World w;
  Json config = two_delegates(w, "1.1.0");
  Env live;
  live.container_id = "ctr-live";
  live.netns = w.make_netns_file("netns-live");
  Env dead;
  dead.container_id = "ctr-dead";
  dead.netns = w.make_netns_file("netns-dead");
  REQUIRE(w.run("ADD", config, live).exit_code == 0);
  REQUIRE(w.run("ADD", config, dead).exit_code == 0);
  w.cache.corrupt(w.key("ctr-live"));
  w.cache.corrupt(w.key("ctr-dead"));
  Json gc = config;
  gc["cni.dev/valid-attachments"] = Json::array({{{"containerID", "ctr-live"}, {"ifname", "eth0"}}});
  Env none;
  none.container_id = "";
  none.ifname = "";
  none.netns = "";

  size_t before = w.call_count();
  auto out = w.run("GC", gc, none);
  INFO(out.stdout_text);
  REQUIRE(out.exit_code == 0);
  // The dead container's configured networks are DELed in reverse, without a namespace, under its
  // own container ID (what host-local releases by); then the delegates' own GC runs.
  REQUIRE(w.briefs_since(before) == Strings{"macvlan DEL net1", "bridge DEL eth0", "macvlan GC "});
  auto calls = w.calls_since(before);
  for (size_t i = 0; i < 2; ++i) {
    CHECK_FALSE(calls[i].netns);
    CHECK(calls[i].container_id == "ctr-dead");
  }
  CHECK(w.ids() == Strings{"ctr-live"});
  CHECK_THROWS_AS(w.cache.load(w.key("ctr-live")), manifold::cni::CniError);  // kept for its own DEL
}

TEST_CASE("ADD rejects a delegate result its cniVersion cannot decode, names the network and rolls back",
          "[plugin][commands]") {
  World w;
  w.intercept = [](const Call& c) -> std::optional<manifold::exec::ProcessResult> {
    if (c.command != "ADD" || c.type != "macvlan") return std::nullopt;
    manifold::exec::ProcessResult r;
    r.exit_code = 0;
    r.stdout_data = R"({"cniVersion":"1.1.0","ips":[{"address":"not-an-address"}]})";
    return r;
  };
  DispatchOutput out = w.run("ADD", two_delegates(w));
  INFO(out.stdout_text);
  Json e = error_of(out);
  CHECK(e["code"] == 101);
  CHECK_THAT(e["msg"].get<std::string>(), Catch::Contains("network \"storage\" returned an invalid result"));
  CHECK(w.briefs_since(0) == Strings{"bridge ADD eth0", "macvlan ADD net1", "macvlan DEL net1", "bridge DEL eth0"});
  CHECK(w.cache.list().empty());
}
