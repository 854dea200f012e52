// Unit tests for the log file sink: rotation exactly at the configured size, backup count and age
// pruning, compression (fake and real compressor), rotation by another "process" (a second sink on
// the same path), the stderr fallback, and secret redaction in debug dumps.
#include <catch2/catch.hpp>

#include <sys/stat.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "temp_dir.h"
#include "util/log_file.h"

using namespace manifold;
using namespace manifold::util;
namespace fs = std::filesystem;

namespace {

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// A 50-byte line: "line NNNN " padded with x, then '\n'.
std::string line(int n) {
  std::string s = "line " + std::to_string(1000 + n) + " ";
  s.resize(49, 'x');
  return s + "\n";
}

// A compressor that writes "GZ:" + the source, so tests can see which file it compressed.
class FakeCompressor final : public Compressor {
 public:
  void gzip_file(const std::string& src, const std::string& dst) override {
    ++calls;
    if (fail) throw std::runtime_error("fake failure");
    std::ofstream(dst, std::ios::binary) << "GZ:" << slurp(src);
  }
  std::string name() const override { return "fake"; }
  int calls = 0;
  bool fail = false;
};

std::shared_ptr<FakeWallClock> fixed_clock() {
  // 2026-01-02T03:04:05Z
  return std::make_shared<FakeWallClock>(std::chrono::system_clock::from_time_t(1767323045));
}

RotationPolicy small_policy(int backups, int age_days, bool compress) {
  RotationPolicy p;
  p.max_size_bytes = 200;
  p.max_backups = backups;
  p.max_age_days = age_days;
  p.compress = compress;
  return p;
}

}  // namespace

TEST_CASE("the log file rotates before a line would cross maxSize", "[util]") {
  test::TempDir dir;
  auto path = (dir.path() / "manifold.log").string();
  FileLogSink sink(path, small_policy(0, 0, false), fixed_clock());
  REQUIRE(sink.ok());
  for (int i = 0; i < 4; ++i) sink.write_line(line(i));
  CHECK(fs::file_size(path) == 200);
  CHECK(list_log_backups(path).empty());
  sink.write_line(line(4));
  auto backups = list_log_backups(path);
  REQUIRE(backups.size() == 1);
  CHECK(fs::path(backups[0]).filename() == "manifold-2026-01-02T03-04-05.000.log");
  CHECK(slurp(backups[0]) == line(0) + line(1) + line(2) + line(3));
  CHECK(slurp(path) == line(4));
  struct stat st {};
  REQUIRE(::stat(path.c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0600);
}

TEST_CASE("maxBackups keeps only the newest backups", "[util]") {
  test::TempDir dir;
  auto path = (dir.path() / "cni.log").string();
  FileLogSink sink(path, small_policy(3, 0, false), fixed_clock());
  for (int i = 0; i < 40; ++i) sink.write_line(line(i));  // 10 files' worth
  auto backups = list_log_backups(path);
  REQUIRE(backups.size() == 3);
  // Newest first: lines 32-35, 28-31, 24-27; the live file holds 36-39.
  CHECK(slurp(backups[0]).rfind(line(32), 0) == 0);
  CHECK(slurp(backups[1]).rfind(line(28), 0) == 0);
  CHECK(slurp(backups[2]).rfind(line(24), 0) == 0);
  CHECK(slurp(path) == line(36) + line(37) + line(38) + line(39));
}

TEST_CASE("maxAge removes backups older than the limit", "[util]") {
  test::TempDir dir;
  auto path = (dir.path() / "cni.log").string();
  auto clock = fixed_clock();
  FileLogSink sink(path, small_policy(0, 5, false), clock);
  for (int round = 0; round < 4; ++round) {
    for (int i = 0; i < 4; ++i) sink.write_line(line(round * 4 + i));
    clock->advance(std::chrono::hours(24 * 2));  // rotations happen on day 2, 4 and 6
  }
  sink.write_line(line(99));  // rotates on day 8: the day-2 backup is now 6 days old and goes
  auto backups = list_log_backups(path);
  REQUIRE(backups.size() == 3);
  for (const auto& b : backups) CHECK(fs::path(b).filename().string().find("2026-01-04T") == std::string::npos);
  CHECK(fs::path(backups[2]).filename() == "cni-2026-01-06T03-04-05.000.log");
  CHECK(fs::path(backups[0]).filename() == "cni-2026-01-10T03-04-05.000.log");
}

TEST_CASE("compress gzips each backup and removes the plain one", "[util]") {
  test::TempDir dir;
  auto path = (dir.path() / "cni.log").string();
  auto fake = std::make_shared<FakeCompressor>();
  FileLogSink sink(path, small_policy(2, 0, true), fixed_clock(), fake);
  for (int i = 0; i < 5; ++i) sink.write_line(line(i));
  auto backups = list_log_backups(path);
  REQUIRE(backups.size() == 1);
  CHECK(fs::path(backups[0]).extension() == ".gz");
  CHECK(slurp(backups[0]) == "GZ:" + line(0) + line(1) + line(2) + line(3));
  CHECK(fake->calls == 1);
  for (int i = 5; i < 20; ++i) sink.write_line(line(i));
  CHECK(list_log_backups(path).size() == 2);
  for (const auto& e : fs::directory_iterator(dir.path()))
    CHECK(e.path().filename().string().find(".tmp") == std::string::npos);
}

TEST_CASE("a failing compressor keeps the plain backup and logging continues", "[util]") {
  test::TempDir dir;
  auto path = (dir.path() / "cni.log").string();
  auto fake = std::make_shared<FakeCompressor>();
  fake->fail = true;
  FileLogSink sink(path, small_policy(0, 0, true), fixed_clock(), fake);
  for (int i = 0; i < 6; ++i) sink.write_line(line(i));
  auto backups = list_log_backups(path);
  REQUIRE(backups.size() == 1);
  CHECK(fs::path(backups[0]).extension() == ".log");
  CHECK(slurp(path) == line(4) + line(5));
}

TEST_CASE("the default compressor writes real gzip", "[util]") {
  test::TempDir dir;
  auto path = (dir.path() / "cni.log").string();
  FileLogSink sink(path, small_policy(0, 0, true), fixed_clock());
  for (int i = 0; i < 5; ++i) sink.write_line(line(i));
  auto backups = list_log_backups(path);
  REQUIRE(backups.size() == 1);
  std::string gz = slurp(backups[0]);
  REQUIRE(gz.size() > 2);
  CHECK(static_cast<unsigned char>(gz[0]) == 0x1f);
  CHECK(static_cast<unsigned char>(gz[1]) == 0x8b);
  // Decompress with the system gzip to prove the stream is complete.
  std::string cmd = "gzip -dc '" + backups[0] + "'";
  FILE* p = ::popen(cmd.c_str(), "r");
  REQUIRE(p != nullptr);
  std::string out;
  char buf[512];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  CHECK(::pclose(p) == 0);
  CHECK(out == line(0) + line(1) + line(2) + line(3));
  CHECK_FALSE(make_default_compressor()->name().empty());
}

TEST_CASE("a sink whose file was rotated by another process follows the new file", "[util]") {
  test::TempDir dir;
  auto path = (dir.path() / "cni.log").string();
  auto clock = fixed_clock();
  FileLogSink a(path, small_policy(0, 0, false), clock);
  FileLogSink b(path, small_policy(0, 0, false), clock);  // opened before the rotation, like a 2nd CNI call
  for (int i = 0; i < 4; ++i) a.write_line(line(i));
  a.write_line(line(4));  // a rotates
  b.write_line(line(5));  // b must not write into the backup
  CHECK(slurp(path) == line(4) + line(5));
  auto backups = list_log_backups(path);
  REQUIRE(backups.size() == 1);
  CHECK(slurp(backups[0]) == line(0) + line(1) + line(2) + line(3));
  // The next rotation is done once, by whichever sink crosses the size first.
  b.write_line(line(6));
  b.write_line(line(7));
  a.write_line(line(8));
  CHECK(list_log_backups(path).size() == 2);
  CHECK(slurp(path) == line(8));
}

TEST_CASE("a log file removed underneath is recreated", "[util]") {
  test::TempDir dir;
  auto path = (dir.path() / "cni.log").string();
  FileLogSink sink(path, small_policy(0, 0, false), fixed_clock());
  sink.write_line(line(0));
  fs::remove(path);
  sink.write_line(line(1));
  CHECK(slurp(path) == line(1));
}

TEST_CASE("an unwritable log file falls back to stderr", "[util]") {
  test::TempDir dir;
  auto path = (dir.path() / "missing-dir" / "cni.log").string();
  FileLogSink sink(path, RotationPolicy{});
  CHECK_FALSE(sink.ok());
  sink.write_line("goes to stderr\n");  // must not crash or throw
  CHECK(open_log_file(path) == nullptr);
  CHECK(open_log_file((dir.path() / "ok.log").string()) != nullptr);
}

TEST_CASE("logOptions map to the lumberjack semantics", "[util]") {
  auto p = rotation_from_log_options(0, 5, 5, true);
  CHECK(p.max_size_bytes == 100ull << 20);
  p = rotation_from_log_options(7, 0, 0, false);
  CHECK(p.max_size_bytes == 7ull << 20);
  CHECK(p.max_backups == 0);
  CHECK(p.max_age_days == 0);
  CHECK_FALSE(p.compress);
  RotationPolicy defaults;
  CHECK(defaults.max_size_bytes == 100ull << 20);
  CHECK(defaults.max_backups == 5);
  CHECK(defaults.max_age_days == 5);
  CHECK(defaults.compress);
}

TEST_CASE("backups are recognised only by the exact name pattern", "[util]") {
  test::TempDir dir;
  auto path = (dir.path() / "cni.log").string();
  std::ofstream(dir.path() / "cni-2026-01-02T03-04-05.000.log") << "a";
  std::ofstream(dir.path() / "cni-2026-01-03T03-04-05.000.log.gz") << "b";
  std::ofstream(dir.path() / "cni-notastamp.log") << "c";
  std::ofstream(dir.path() / "other-2026-01-02T03-04-05.000.log") << "d";
  std::ofstream(dir.path() / "cni-2026-01-02T03-04-05.000.log.gz.tmp") << "e";
  auto backups = list_log_backups(path);
  REQUIRE(backups.size() == 2);
  CHECK(fs::path(backups[0]).filename() == "cni-2026-01-03T03-04-05.000.log.gz");
}

TEST_CASE("secret keys are recognised case-insensitively", "[util]") {
  for (const char* k : {"token", "Token", "bearerToken", "password", "PASSWORD", "secret", "clientSecret",
                        "client-key-data", "client-certificate-data", "certificate-authority-data", "key", "client-key",
                        "privateKey", "api_key", "Authorization", "credentials", "kubeconfigData", "sharedKeys"})
    CHECK(is_secret_key(k));
  for (const char* k : {"type", "name", "master", "tokenFile", "token-file", "client-key-file", "kubeconfig",
                        "certificate-authority", "ipam", "metadata", "keyDir", "mac", "cniVersion"})
    CHECK_FALSE(is_secret_key(k));
}

TEST_CASE("redaction removes every secret at any depth", "[util]") {
  const std::string token = "eyJhbGciOiJSUzI1NiIsImtpZCI6IlNFQ1JFVCJ9.c2VjcmV0";
  Json delegate = {
      {"cniVersion", "1.0.0"},
      {"name", "data"},
      {"type", "macvlan"},
      {"Token", token},
      {"ipam", {{"type", "static"}, {"addresses", Json::array({{{"address", "10.0.0.2/24"}}})}}},
      {"kubernetes",
       {{"kubeconfig", "/etc/kube.conf"},
        {"users", Json::array({{{"user", {{"token", token}, {"client-key-data", "LS0tLS1CRUdJTi1LRVk="}}}}})}}},
      {"args", {{"cni", {{"PASSWORD", "hunter2"}, {"keep", "visible"}}}}},
      {"auth", {{"tokenFile", "/var/run/token"}, {"secret", {{"nested", token}}}}},
      {"spec", {{"config", "{\"type\":\"x\",\"apiToken\":\"" + token + "\"}"}}},
  };
  std::string dump = redacted_dump(delegate);
  CHECK(dump.find(token) == std::string::npos);
  CHECK(dump.find("hunter2") == std::string::npos);
  CHECK(dump.find("LS0tLS1CRUdJTi1LRVk=") == std::string::npos);
  CHECK(dump.find("visible") != std::string::npos);
  CHECK(dump.find("/var/run/token") != std::string::npos);
  CHECK(dump.find("/etc/kube.conf") != std::string::npos);
  Json r = redact_secrets(delegate);
  CHECK(r["Token"] == "<redacted>");
  CHECK(r["auth"]["secret"] == "<redacted>");
  CHECK(r["kubernetes"]["users"][0]["user"]["token"] == "<redacted>");
  CHECK(r["ipam"] == delegate["ipam"]);
  CHECK(Json::parse(r["spec"]["config"].get<std::string>())["apiToken"] == "<redacted>");
  // Key order is kept, so the dump reads like the config.
  CHECK(r.begin().key() == "cniVersion");
}
