// Unit tests for network config lookup in confDir: by name, by file, by directory, in lexical
// order, skipping invalid files, and clear not-found errors.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

#include "cni/conf_files.h"
#include "cni/error.h"
#include "temp_dir.h"

using namespace manifold;
using namespace manifold::cni;

namespace {
void write(const std::filesystem::path& p, const std::string& text) { std::ofstream(p) << text; }
}  // namespace

TEST_CASE("networks are found by name in lexical file order", "[cni]") {
  test::TempDir dir;
  write(dir.path() / "20-b.conf", R"({"cniVersion":"0.3.1","name":"net","type":"second"})");
  write(dir.path() / "10-a.conflist", R"({"cniVersion":"0.3.1","name":"net","plugins":[{"type":"first"}]})");
  write(dir.path() / "05-broken.conf", "{not json");
  write(dir.path() / "00-other.json", R"({"name":"other","type":"o"})");
  write(dir.path() / "99-ignored.txt", R"({"name":"net","type":"txt"})");
  auto found = find_network_by_name(dir.str(), "net");
  REQUIRE(found);
  CHECK(found->config["plugins"][0]["type"] == "first");
  CHECK(find_network_by_name(dir.str(), "other")->config["type"] == "o");
  CHECK_FALSE(find_network_by_name(dir.str(), "nope"));
  CHECK_FALSE(find_network_by_name((dir.path() / "missing").string(), "net"));
}

TEST_CASE("paths load a file or a directory's first config", "[cni]") {
  test::TempDir dir;
  write(dir.path() / "b.conf", R"({"name":"b","type":"bb"})");
  write(dir.path() / "a.conf", R"({"name":"a","type":"aa"})");
  CHECK(load_network_path(dir.str()).config["name"] == "a");
  CHECK(load_network_path((dir.path() / "b.conf").string()).config["type"] == "bb");
  CHECK(resolve_file_network((dir.path() / "b.conf").string(), "/unused").config["name"] == "b");
  CHECK(resolve_file_network("a", dir.str()).config["type"] == "aa");
}

TEST_CASE("lookups fail clearly", "[cni]") {
  test::TempDir dir;
  write(dir.path() / "x.conf", R"({"name":"x"})");
  write(dir.path() / "y.conflist", R"({"name":"y","type":"t"})");
  try {
    resolve_file_network("nope", dir.str());
    FAIL("no error");
  } catch (const CniError& e) {
    CHECK(e.code() == 104);
    CHECK_THAT(e.msg(), Catch::Contains("\"nope\"") && Catch::Contains(dir.str()));
  }
  CHECK_THROWS_AS(load_network_path((dir.path() / "missing.conf").string()), CniError);
  try {
    load_network_path((dir.path() / "x.conf").string());
    FAIL("no error");
  } catch (const CniError& e) {
    CHECK(e.code() == 7);
    CHECK_THAT(e.msg(), Catch::Contains("perhaps this is a .conflist?"));
  }
  CHECK_THROWS_AS(load_network_path((dir.path() / "y.conflist").string()), CniError);
  test::TempDir empty;
  CHECK_THROWS_AS(load_network_path(empty.str()), CniError);
}
