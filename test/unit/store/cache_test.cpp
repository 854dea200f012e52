// Tests for lib/store/cache: byte-exact round trips, permissions under hostile umasks, corrupt,
// truncated, wrongly typed, oversized and symlinked files, container-ID validation, remove leaving
// no file behind, list, concurrent lockers (threads and forked processes) and lock timeouts, for
// FileCache in a temp dir and for the MemoryCache fake.
#include "store/cache.h"
#include "store/memory_cache.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "cni/error.h"
#include "temp_dir.h"
#include "cni_error_of.h"

namespace fs = std::filesystem;
using manifold::Json;
using manifold::cni::CniError;
using manifold::store::AttachmentRecord;
using manifold::store::ContainerRecord;
using manifold::store::EntryKey;
using manifold::store::FileCache;
using manifold::store::MemoryCache;
using manifold::util::FakeSleeper;
using namespace std::chrono_literals;
using manifold::test::code_of;
using manifold::test::TempDir;

namespace {

/// Sets the umask for a scope.
class ScopedUmask {
 public:
  explicit ScopedUmask(mode_t mask) : old_(::umask(mask)) {}
  ~ScopedUmask() { ::umask(old_); }

 private:
  mode_t old_;
};

/// Really sleeps 1 ms, and tells a waiting test that someone is waiting for a busy lock.
class SignallingSleeper final : public manifold::util::Sleeper {
 public:
  void sleep_for(std::chrono::milliseconds) override {
    {
      std::lock_guard lock(mu);
      waiting = true;
    }
    cv.notify_all();
    std::this_thread::sleep_for(1ms);
  }
  void wait_for_waiter() {
    std::unique_lock lock(mu);
    cv.wait(lock, [&] { return waiting; });
  }
  std::mutex mu;
  std::condition_variable cv;
  bool waiting = false;
};

/// The key of sample(id).
EntryKey key(const std::string& id) { return {id, "net", "eth0"}; }

ContainerRecord sample(const std::string& id = "0123456789abcdef") {
  ContainerRecord r;
  r.container_id = id;
  r.network = "net";
  r.cni_path = "/opt/cni/bin";
  r.netns = "/var/run/netns/cni-1234";
  r.ifname = "eth0";
  r.cni_version = "1.1.0";
  AttachmentRecord cluster;
  cluster.name = "default/cluster";
  cluster.ifname = "eth0";
  cluster.config = "{ \"cniVersion\" : \"1.0.0\",\t\"name\":\"ünïcødé 🚀\", \"x\":\"\\u00e9\" }\r\n  ";
  cluster.result = "{\"ips\":[{\"address\":\"10.0.0.5/24\"}]}\n";
  cluster.cluster_network = true;
  cluster.extra = {{"sourceRouting", {{"table", 100}}}};
  AttachmentRecord extra;
  extra.name = "ns/macvlan-conf";
  extra.ifname = "net1";
  extra.config = std::string("{\"a\":1}\0trailing", 16);
  extra.result = "";
  r.attachments = {cluster, extra};
  r.extra = {{"pod", "ns/name"}, {"uid", "u-1"}};
  return r;
}

mode_t mode_of(const fs::path& p) {
  struct stat st {};
  REQUIRE(::lstat(p.c_str(), &st) == 0);
  return st.st_mode & 07777;
}

void write_file(const fs::path& p, const std::string& text) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out << text;
}

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

/// Every regular file below `dir`, relative.
std::vector<std::string> files_below(const fs::path& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    if (!e.is_directory()) out.push_back(fs::relative(e.path(), dir).string());
  }
  return out;
}

/// True when somebody holds an flock on `path` right now.
bool flock_held(const fs::path& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  bool busy = ::flock(fd, LOCK_EX | LOCK_NB) != 0 && errno == EWOULDBLOCK;
  ::close(fd);
  return busy;
}

}  // namespace

TEST_CASE("file cache: round trip is byte-exact", "[store]") {
  TempDir dir;
  FileCache cache(dir.path() / "cache");
  ContainerRecord r = sample();
  cache.save(r);
  std::optional<ContainerRecord> back = cache.load(key(r.container_id));
  REQUIRE(back);
  CHECK(*back == r);
  CHECK(back->attachments[0].config == r.attachments[0].config);
  CHECK(back->attachments[1].config.size() == 16);
  CHECK(back->attachments[1].config == r.attachments[1].config);
  CHECK(back->attachments[0].extra.dump() == R"({"sourceRouting":{"table":100}})");
  CHECK(back->extra.dump() == R"({"pod":"ns/name","uid":"u-1"})");
}

TEST_CASE("file cache: save replaces the entry and leaves no temp file", "[store]") {
  TempDir dir;
  FileCache cache(dir.path());
  ContainerRecord r = sample();
  cache.save(r);
  r.attachments.pop_back();
  r.netns = "/proc/42/ns/net";
  cache.save(r);
  CHECK(cache.load(key(r.container_id)) == r);
  CHECK(files_below(dir.path()) == std::vector<std::string>{r.container_id + "/net@eth0.json"});
}

TEST_CASE("file cache: a progress mark sets delegates started in place, without rewriting the entry", "[store]") {
  TempDir dir;
  FileCache cache(dir.path());
  ContainerRecord r = sample();
  r.attachments.push_back(r.attachments[1]);
  r.attachments[2].ifname = "net2";
  r.attachments[1].delegate_started = false;
  r.attachments[2].delegate_started = false;
  cache.save(r);
  const fs::path file = cache.record_path(key(r.container_id));
  CHECK(cache.load(key(r.container_id)) == r);  // the flags round-trip through the file's JSON
  const std::string text = read_file(file);
  struct stat before {};
  REQUIRE(::stat(file.c_str(), &before) == 0);

  r.attachments[1].delegate_started = true;
  r.attachments[0].result = "{\"not\":\"written by a mark\"}";
  CHECK_FALSE(cache.mark_started(r, 2));  // in place: the caller's results are not on disk
  struct stat after {};
  REQUIRE(::stat(file.c_str(), &after) == 0);
  CHECK(after.st_ino == before.st_ino);
  CHECK(read_file(file) == text);
  std::optional<ContainerRecord> back = cache.load(key(r.container_id));
  REQUIRE(back);
  CHECK(back->attachments[0].result == sample().attachments[0].result);
  CHECK(back->attachments[1].delegate_started);
  CHECK_FALSE(back->attachments[2].delegate_started);

  SECTION("the next save writes the flags into a new file, which carries no mark") {
    r.attachments[2].delegate_started = true;
    cache.save(r);
    char buf[16];
    CHECK(::lgetxattr(file.c_str(), manifold::store::kStartedAttribute, buf, sizeof buf) < 0);
    CHECK(cache.load(key(r.container_id)) == r);
  }
  SECTION("a mark counting more attachments than the entry has marks them all") {
    CHECK_FALSE(cache.mark_started(r, 7));
    back = cache.load(key(r.container_id));
    REQUIRE(back);
    CHECK(back->attachments[2].delegate_started);
  }
  SECTION("a mark that is not a count makes the entry corrupt, naming the file and the attribute") {
    for (std::string bad : {"", "two", "-1", "12345678901", "3 "}) {
      REQUIRE(::lsetxattr(file.c_str(), manifold::store::kStartedAttribute, bad.data(), bad.size(), 0) == 0);
      try {
        cache.load(key(r.container_id));
        FAIL("loaded an entry whose mark is \"" << bad << "\"");
      } catch (const CniError& e) {
        CHECK(e.code() == 6);
        CHECK(e.msg().find(file.string()) != std::string::npos);
        CHECK(e.msg().find(manifold::store::kStartedAttribute) != std::string::npos);
      }
    }
  }
  SECTION("a delegateStarted that is not a boolean makes the entry corrupt") {
    std::string edited = text;
    const std::string flag = "\"delegateStarted\":false";
    REQUIRE(edited.find(flag) != std::string::npos);
    edited.replace(edited.find(flag), flag.size(), "\"delegateStarted\":0");
    write_file(file, edited);
    CHECK(code_of([&] { cache.load(key(r.container_id)); }) == 6);
  }
}

TEST_CASE("file cache: the entry's state is marked in place and overrides the file's", "[store]") {
  TempDir dir;
  FileCache cache(dir.path());
  ContainerRecord r = sample();
  r.extra["state"] = "complete";
  cache.save(r);
  const fs::path file = cache.record_path(key(r.container_id));
  const std::string text = read_file(file);
  struct stat before {};
  REQUIRE(::stat(file.c_str(), &before) == 0);
  r.extra["state"] = "deleting";
  CHECK_FALSE(cache.mark_state(r));
  struct stat after {};
  REQUIRE(::stat(file.c_str(), &after) == 0);
  CHECK(after.st_ino == before.st_ino);
  CHECK(read_file(file) == text);
  CHECK(cache.load(key(r.container_id)) == r);

  SECTION("a state no mark can hold is saved with the whole record") {
    r.extra["state"] = "Not A Mark";
    CHECK(cache.mark_state(r));
    CHECK(cache.load(key(r.container_id)) == r);
  }
  SECTION("a mark that is not a state makes the entry corrupt") {
    for (const std::string& bad : std::vector<std::string>{"", "DELETING", "deleting\n", std::string(40, 'a')}) {
      REQUIRE(::lsetxattr(file.c_str(), manifold::store::kStateAttribute, bad.data(), bad.size(), 0) == 0);
      CHECK(code_of([&] { cache.load(key(r.container_id)); }) == 6);
    }
  }
}

TEST_CASE("file cache: where no mark can be set, mark_started saves the whole record", "[store]") {
  TempDir dir;
  FileCache cache(dir.path());
  ContainerRecord r = sample();
  // The mark fails here because there is no entry file to set it on; on a file system without user
  // extended attributes it fails with ENOTSUP (test_faults_cache_dir.py runs one): either way the
  // whole record is written, results and all.
  CHECK(cache.mark_started(r, 2));
  CHECK(cache.load(key(r.container_id)) == r);
}

TEST_CASE("memory cache: progress marks change only the flags, or save when refused", "[store]") {
  MemoryCache cache;
  ContainerRecord r = sample("c1");
  r.attachments[1].delegate_started = false;
  cache.save(r);
  ContainerRecord next = r;
  next.attachments[1].delegate_started = true;
  next.attachments[0].result = "{}";
  CHECK_FALSE(cache.mark_started(next, 2));
  std::optional<ContainerRecord> back = cache.load(key("c1"));
  REQUIRE(back);
  CHECK(back->attachments[1].delegate_started);
  CHECK(back->attachments[0].result == r.attachments[0].result);
  ContainerRecord deleting = *cache.load(key("c1"));
  deleting.extra["state"] = "deleting";
  CHECK_FALSE(cache.mark_state(deleting));
  CHECK(cache.load(key("c1")) == deleting);
  cache.refuse_marks();
  CHECK(cache.mark_started(next, 2));
  CHECK(cache.load(key("c1")) == next);
  CHECK(cache.marks() == 3);
}

TEST_CASE("file cache: directories 0700 and files 0600 whatever the umask", "[store]") {
  for (mode_t mask : {mode_t{0}, mode_t{022}, mode_t{0277}}) {
    CAPTURE(mask);
    TempDir dir;
    fs::path root = dir.path() / "a" / "b" / "cache";
    {
      ScopedUmask umask(mask);
      FileCache cache(root);
      auto guard = cache.lock("c1");
      cache.save(sample("c1"));
      CHECK(mode_of(root / "c1.lock") == 0600);
    }
    CHECK(mode_of(dir.path() / "a") == 0700);
    CHECK(mode_of(dir.path() / "a" / "b") == 0700);
    CHECK(mode_of(root) == 0700);
    CHECK(mode_of(root / ".tmp") == 0700);
    CHECK(mode_of(root / "c1") == 0700);
    CHECK(mode_of(root / "c1" / "net@eth0.json") == 0600);
  }
}

TEST_CASE("file cache: an existing cache dir is used as it is", "[store]") {
  TempDir dir;
  REQUIRE(::chmod(dir.path().c_str(), 0711) == 0);
  FileCache cache(dir.path());
  cache.save(sample("c1"));
  CHECK(mode_of(dir.path()) == 0711);
}

TEST_CASE("file cache: missing directory is an empty cache and is not created by reads", "[store]") {
  TempDir dir;
  fs::path root = dir.path() / "never";
  FileCache cache(root);
  CHECK_FALSE(cache.load(key("c1")));
  CHECK(cache.list().empty());
  CHECK_NOTHROW(cache.remove(key("c1")));
  CHECK_FALSE(fs::exists(root));
}

TEST_CASE("file cache: invalid container IDs are rejected before touching the disk", "[store]") {
  TempDir dir;
  FileCache cache(dir.path() / "cache");
  for (std::string bad : {std::string("../x"), std::string("a/b"), std::string(""), std::string(".hidden"),
                          std::string("-x"), std::string("_x"), std::string("a b"), std::string("a\0b", 3),
                          std::string(manifold::store::kMaxContainerIdLength + 1, 'a'), std::string("..")}) {
    CAPTURE(bad);
    std::string msg;
    CHECK(code_of([&] { cache.load(key(bad)); }, &msg) == 4);
    CHECK(msg.find("invalid container ID") != std::string::npos);
    CHECK(code_of([&] { cache.save(sample(bad)); }) == 4);
    CHECK(code_of([&] { cache.remove(key(bad)); }) == 4);
    CHECK(code_of([&] { cache.lock(bad); }) == 4);
  }
  CHECK_FALSE(fs::exists(dir.path() / "cache"));
  std::string max_id(manifold::store::kMaxContainerIdLength, 'f');
  CHECK_NOTHROW(cache.save(sample(max_id)));
  CHECK(cache.load(key(max_id)) == sample(max_id));
  CHECK_NOTHROW(cache.lock(max_id));
  CHECK_NOTHROW(cache.remove(key(max_id)));
  CHECK_NOTHROW(cache.save(sample("A.b_c-D..9")));
}

TEST_CASE("file cache: corrupt files are Decoding errors naming the file", "[store]") {
  TempDir dir;
  FileCache cache(dir.path());
  ContainerRecord r = sample("c1");
  cache.save(r);
  fs::path file = cache.record_path(key("c1"));
  std::string good = read_file(file);
  Json j = Json::parse(good);

  auto expect_corrupt = [&](const std::string& text, const std::string& hint) {
    CAPTURE(hint);
    write_file(file, text);
    std::string msg;
    CHECK(code_of([&] { cache.load(key("c1")); }, &msg) == 6);
    CHECK(msg.find(file.string()) != std::string::npos);
    CHECK(msg.find(hint) != std::string::npos);
  };
  expect_corrupt("", "corrupt cache file");
  expect_corrupt("not json at all", "corrupt cache file");
  expect_corrupt(good.substr(0, good.size() / 2), "corrupt cache file");
  expect_corrupt("[]", "not a JSON object");
  expect_corrupt(std::string(100, '[') + std::string(100, ']'), "nested deeper");

  auto with = [&](const std::function<void(Json&)>& edit) {
    Json copy = j;
    edit(copy);
    return copy.dump();
  };
  expect_corrupt(with([](Json& x) { x["attachments"][0]["config"] = 5; }), "\"attachments[0].config\" is not a string");
  expect_corrupt(with([](Json& x) { x["attachments"][1].erase("result"); }), "\"attachments[1].result\" is missing");
  expect_corrupt(with([](Json& x) { x["attachments"][0]["clusterNetwork"] = "yes"; }),
                 "clusterNetwork\" is not a boolean");
  expect_corrupt(with([](Json& x) { x["attachments"][0]["extra"] = Json::array(); }), "extra\" is not an object");
  expect_corrupt(with([](Json& x) { x["attachments"] = Json::object(); }), "\"attachments\" is not an array");
  expect_corrupt(with([](Json& x) { x["attachments"][0] = "x"; }), "\"attachments[0]\" is not an object");
  expect_corrupt(with([](Json& x) { x["netns"] = nullptr; }), "\"netns\" is not a string");
  expect_corrupt(with([](Json& x) { x["containerId"] = "c2"; }), "another container ID");
  expect_corrupt(with([](Json& x) { x["version"] = 3; }), "unknown format");
  expect_corrupt(with([](Json& x) { x["network"] = "other"; }), "another network or interface");
  expect_corrupt(with([](Json& x) { x["ifname"] = "eth9"; }), "another network or interface");
  expect_corrupt(with([](Json& x) { x.erase("cniPath"); }), "\"cniPath\" is missing");
  expect_corrupt(with([](Json& x) { x.erase("kind"); }), "\"kind\" is missing");
  expect_corrupt(with([](Json& x) { x["extra"] = 1; }), "\"extra\" is not an object");

  write_file(file, good);
  CHECK(cache.load(key("c1")) == r);
}

TEST_CASE("file cache: oversized, symlinked and non-regular files are rejected", "[store]") {
  TempDir dir;
  FileCache cache(dir.path());
  fs::path file = cache.record_path(key("c1"));
  std::string msg;

  fs::create_directories(file.parent_path());
  write_file(file, std::string(manifold::store::kMaxCacheFileBytes + 1, ' '));
  CHECK(code_of([&] { cache.load(key("c1")); }, &msg) == 6);
  CHECK(msg.find("larger than") != std::string::npos);

  fs::remove(file);
  FileCache other(dir.path() / "other");
  other.save(sample("c1"));
  fs::create_symlink(other.record_path(key("c1")), file);
  CHECK(code_of([&] { cache.load(key("c1")); }, &msg) == 6);
  CHECK(msg.find("symbolic link") != std::string::npos);

  fs::remove(file);
  fs::create_directory(file);
  CHECK(code_of([&] { cache.load(key("c1")); }, &msg) == 6);
  CHECK(msg.find("not a regular file") != std::string::npos);
}

TEST_CASE("file cache: records that cannot be stored are refused and leave nothing behind", "[store]") {
  TempDir dir;
  FileCache cache(dir.path());
  ContainerRecord r = sample("c1");
  r.attachments[0].config = "invalid utf-8 \xff\xfe";
  CHECK(code_of([&] { cache.save(r); }) == 100);
  r = sample("c1");
  r.attachments[0].extra = 5;
  CHECK(code_of([&] { cache.save(r); }) == 100);
  r = sample("c1");
  r.attachments[0].result = std::string(manifold::store::kMaxCacheFileBytes, 'r');
  std::string msg;
  CHECK(code_of([&] { cache.save(r); }, &msg) == 5);
  CHECK(msg.find("more than the limit") != std::string::npos);
  CHECK(files_below(dir.path()).empty());
}

TEST_CASE("file cache: remove under the lock leaves no file of the container", "[store]") {
  TempDir dir;
  FileCache cache(dir.path());
  cache.save(sample("keep"));
  {
    auto guard = cache.lock("c1");
    cache.save(sample("c1"));
    CHECK(fs::exists(cache.lock_path("c1")));
    cache.remove(key("c1"));
    CHECK_FALSE(fs::exists(cache.record_path(key("c1"))));
  }
  // The lock file goes with the container's last entry, when the lock is released.
  CHECK_FALSE(fs::exists(cache.lock_path("c1")));
  CHECK(files_below(dir.path()) == std::vector<std::string>{"keep/net@eth0.json"});
  CHECK_FALSE(cache.load(key("c1")));
  CHECK_NOTHROW(cache.remove(key("c1")));  // idempotent, and still leaves nothing
  CHECK(files_below(dir.path()) == std::vector<std::string>{"keep/net@eth0.json"});
}

TEST_CASE("file cache: remove without holding the lock takes it and cleans up", "[store]") {
  TempDir dir;
  FileCache cache(dir.path());
  cache.save(sample("c1"));
  cache.remove(key("c1"));
  CHECK(files_below(dir.path()).empty());
  cache.remove(key("c1"));
  CHECK(files_below(dir.path()).empty());
}

TEST_CASE("file cache: a container is idle without entries and without a lock file", "[store]") {
  TempDir dir;
  FileCache cache(dir.path());
  CHECK(cache.is_idle("c1"));  // no cache directory at all
  cache.save(sample("keep"));
  CHECK(cache.is_idle("c1"));
  CHECK_FALSE(cache.is_idle("keep"));
  {
    auto guard = cache.lock("c1");  // a call is running: its lock file is there
    CHECK_FALSE(cache.is_idle("c1"));
  }
  CHECK(cache.is_idle("c1"));
  write_file(cache.lock_path("c2"), "");  // a call killed while holding it
  CHECK_FALSE(cache.is_idle("c2"));
  // Removing what is not there takes no lock and so creates no lock file.
  cache.remove(key("c3"));
  CHECK_FALSE(fs::exists(cache.lock_path("c3")));
  CHECK_THROWS_AS(cache.is_idle("../x"), CniError);
}

TEST_CASE("file cache: remove sweeps a crashed writer's temp files of that container only", "[store]") {
  TempDir dir;
  FileCache cache(dir.path());
  cache.save(sample("c1"));
  fs::path tmp = dir.path() / ".tmp";
  for (const char* name : {"c1.123.4.tmp", "c1.9.0.tmp", "c1.b.1.2.tmp", "c10.1.2.tmp", "c1.x.tmp"}) {
    write_file(tmp / name, "partial");
  }
  cache.remove(key("c1"));
  std::vector<std::string> left = files_below(dir.path());
  std::sort(left.begin(), left.end());
  CHECK(left == std::vector<std::string>{".tmp/c1.b.1.2.tmp", ".tmp/c1.x.tmp", ".tmp/c10.1.2.tmp"});
}

TEST_CASE("file cache: list returns the keys with a record, sorted", "[store]") {
  TempDir dir;
  FileCache cache(dir.path());
  cache.save(sample("zeta"));
  cache.save(sample("alpha"));
  cache.save(sample("x.lock"));
  ContainerRecord second = sample("alpha");
  second.network = "b/x@y";
  second.ifname = "eth1";
  cache.save(second);
  auto guard = cache.lock("only-locked");
  write_file(dir.path() / ".hidden.json", "{}");
  write_file(dir.path() / "notes.txt", "");
  write_file(dir.path() / ".json", "");
  write_file(dir.path() / "alpha" / "stray.txt", "");
  write_file(dir.path() / "alpha" / "net@eth0.json.tmp", "");
  CHECK(cache.list() == std::vector<EntryKey>{{"alpha", "b/x@y", "eth1"}, key("alpha"), key("x.lock"), key("zeta")});
  CHECK(cache.list("alpha") == std::vector<EntryKey>{{"alpha", "b/x@y", "eth1"}, key("alpha")});
  CHECK(cache.list("nobody").empty());
  CHECK(cache.load({"alpha", "b/x@y", "eth1"}) == second);
}

TEST_CASE("file cache: locking twice on one thread is a bug, not a 30 s hang", "[store]") {
  TempDir dir;
  FileCache cache(dir.path());
  auto guard = cache.lock("c1");
  CHECK(code_of([&] { cache.lock("c1"); }) == 100);
  auto other = cache.lock("c2");  // other containers are independent
  CHECK(other != nullptr);
}

TEST_CASE("file cache: lock wait is bounded and ends in TryAgainLater", "[store]") {
  TempDir dir;
  FileCache holder(dir.path());
  auto held = holder.lock("c1");
  FakeSleeper sleeper;
  FileCache cache(dir.path(), 100ms, sleeper);
  std::string msg;
  CHECK(code_of([&] { cache.lock("c1"); }, &msg) == 11);
  CHECK(msg.find(cache.lock_path("c1").string()) != std::string::npos);
  std::chrono::milliseconds total{0};
  for (auto p : sleeper.waits()) {
    CHECK(p <= manifold::store::FileLock::kMaxBackoff);
    total += p;
  }
  CHECK(total == 100ms);
  CHECK(sleeper.waits().front() == 1ms);
  held.reset();
  CHECK(cache.lock("c1") != nullptr);
}

TEST_CASE("file cache: a remove during a wait hands the waiter a fresh, real lock", "[store]") {
  TempDir dir;
  SignallingSleeper sleeper;
  FileCache cache(dir.path(), 60s, sleeper);
  auto first = cache.lock("c1");
  std::atomic<bool> acquired{false};
  std::unique_ptr<manifold::store::LockGuard> second;
  std::thread waiter([&] {
    second = cache.lock("c1");
    acquired = true;
  });
  sleeper.wait_for_waiter();  // the waiter has the old lock file open and found it busy
  cache.remove(key("c1"));    // deletes that lock file while holding it
  first.reset();
  waiter.join();
  CHECK(acquired);
  // The waiter must hold the lock on the file now at the path, so a third party is excluded.
  CHECK(fs::exists(cache.lock_path("c1")));
  CHECK(flock_held(cache.lock_path("c1")));
  second.reset();
  CHECK_FALSE(flock_held(cache.lock_path("c1")));
}

TEST_CASE("file cache: concurrent threads serialise on one container", "[store]") {
  TempDir dir;
  FileCache cache(dir.path());
  ContainerRecord r = sample("shared");
  r.extra = {{"count", 0}};
  cache.save(r);
  std::atomic<int> inside{0};
  std::atomic<bool> overlap{false};
  constexpr int kThreads = 4, kRounds = 25;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < kRounds; ++i) {
        auto guard = cache.lock("shared");
        if (++inside != 1) overlap = true;
        ContainerRecord cur = *cache.load(key("shared"));
        cur.extra["count"] = cur.extra["count"].get<int>() + 1;
        cache.save(cur);
        --inside;
      }
    });
  }
  for (auto& t : threads) t.join();
  CHECK_FALSE(overlap);
  CHECK(cache.load(key("shared"))->extra["count"] == kThreads * kRounds);
}

TEST_CASE("file cache: concurrent processes serialise on one container, even across removes", "[store]") {
  TempDir dir;
  {
    FileCache cache(dir.path());
    ContainerRecord r = sample("shared");
    r.extra = {{"count", 0}};
    cache.save(r);
  }
  const fs::path journal = dir.path() / "journal";
  constexpr int kProcs = 3, kRounds = 20;
  std::vector<pid_t> children;
  for (int p = 0; p < kProcs; ++p) {
    pid_t pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      int rc = 0;
      try {
        FileCache cache(dir.path());
        int log = ::open(journal.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
        if (log < 0) ::_exit(2);
        const std::string me = std::to_string(::getpid());
        const std::string enter = "E" + me + "\n", leave = "X" + me + "\n";
        for (int i = 0; i < kRounds; ++i) {
          {
            auto guard = cache.lock("shared");
            ContainerRecord cur = cache.load(key("shared")).value();
            cur.extra["count"] = cur.extra["count"].get<int>() + 1;
            cache.save(cur);
          }
          {
            // A full ADD/DEL cycle whose remove() deletes the lock file each time.
            auto guard = cache.lock("scratch");
            if (::write(log, enter.data(), enter.size()) < 0) rc = 3;
            cache.save(sample("scratch"));
            if (!cache.load(key("scratch"))) rc = 4;
            if (::write(log, leave.data(), leave.size()) < 0) rc = 3;
            cache.remove(key("scratch"));
          }
        }
        ::close(log);
      } catch (...) {
        rc = 1;
      }
      ::_exit(rc);
    }
    children.push_back(pid);
  }
  for (pid_t pid : children) {
    int status = 0;
    REQUIRE(::waitpid(pid, &status, 0) == pid);
    CHECK(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 0);
  }
  FileCache cache(dir.path());
  CHECK(cache.load(key("shared"))->extra["count"] == kProcs * kRounds);
  // Critical sections never interleaved: every enter is directly followed by the same pid's exit.
  std::istringstream lines(read_file(journal));
  std::string enter, leave;
  int sections = 0;
  while (std::getline(lines, enter)) {
    REQUIRE(std::getline(lines, leave));
    CHECK(enter[0] == 'E');
    CHECK(leave == "X" + enter.substr(1));
    ++sections;
  }
  CHECK(sections == kProcs * kRounds);
  CHECK_FALSE(fs::exists(cache.lock_path("scratch")));
  CHECK_FALSE(fs::exists(cache.record_path(key("scratch"))));
}

TEST_CASE("memory cache: behaves like the file cache", "[store]") {
  MemoryCache cache(20ms);
  ContainerRecord r = sample("c1");
  CHECK_FALSE(cache.load(key("c1")));
  cache.save(r);
  CHECK(cache.load(key("c1")) == r);
  cache.save(sample("a0"));
  CHECK(cache.list() == std::vector<EntryKey>{key("a0"), key("c1")});
  CHECK(cache.list("c1") == std::vector<EntryKey>{key("c1")});
  CHECK_FALSE(cache.is_idle("c1"));
  cache.remove(key("c1"));
  cache.remove(key("c1"));
  CHECK_FALSE(cache.load(key("c1")));
  CHECK(cache.is_idle("c1"));
  {
    auto guard = cache.lock("c1");
    CHECK_FALSE(cache.is_idle("c1"));
  }
  CHECK(code_of([&] { cache.load(key("../etc")); }) == 4);
  ContainerRecord bad = sample("c2");
  bad.extra = Json::array();
  CHECK(code_of([&] { cache.save(bad); }) == 100);
}

TEST_CASE("memory cache: corrupt entries fail to load until replaced", "[store]") {
  MemoryCache cache;
  cache.corrupt(key("c1"));
  CHECK(code_of([&] { cache.load(key("c1")); }) == 6);
  CHECK(cache.list() == std::vector<EntryKey>{key("c1")});
  cache.save(sample("c1"));
  CHECK(cache.load(key("c1")) == sample("c1"));
}

TEST_CASE("memory cache: locks serialise, time out and detect re-locking", "[store]") {
  MemoryCache cache(20ms);
  {
    auto guard = cache.lock("c1");
    CHECK(cache.is_locked("c1"));
    CHECK(code_of([&] { cache.lock("c1"); }) == 100);
    std::thread other([&] { CHECK(code_of([&] { cache.lock("c1"); }) == 11); });
    other.join();
  }
  CHECK_FALSE(cache.is_locked("c1"));

  MemoryCache shared(60s);
  std::atomic<int> inside{0};
  std::atomic<bool> overlap{false};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 50; ++i) {
        auto guard = shared.lock("c1");
        if (++inside != 1) overlap = true;
        --inside;
      }
    });
  }
  for (auto& t : threads) t.join();
  CHECK_FALSE(overlap);
}
