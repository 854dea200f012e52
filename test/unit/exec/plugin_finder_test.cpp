// Tests for lib/exec/plugin_finder: type validation (paths, "..", NUL, length), the ordered search
// over real temp directories (missing, non-executable, directories, symlinks) and CNI_PATH
// splitting.
#include "exec/plugin_finder.h"

#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>

#include "cni/error.h"
#include "temp_dir.h"
#include "cni_error_of.h"

namespace fs = std::filesystem;
using manifold::cni::CniError;
using manifold::exec::find_plugin;
using manifold::exec::split_cni_path;
using manifold::test::code_of;
using manifold::test::TempDir;

TEST_CASE("finder: types that are not bare file names are invalid config", "[exec]") {
  TempDir dir;
  for (std::string bad : {std::string("../x"), std::string("a/b"), std::string(""), std::string(".."), std::string("."),
                          std::string("x.."), std::string("..x"), std::string("/bin/sh"), std::string("a\0b", 3),
                          std::string(256, 'a')}) {
    CAPTURE(bad);
    try {
      find_plugin(bad, {dir.str()});
      FAIL("accepted");
    } catch (const CniError& e) {
      CHECK(e.code() == 7);
      CHECK(e.msg().find("invalid plugin type") != std::string::npos);
      CHECK(e.msg().find("must be a file name") != std::string::npos);
    }
  }
}

TEST_CASE("finder: the message quotes a hostile type safely and bounded", "[exec]") {
  try {
    find_plugin(std::string("\xff/\n") + std::string(1000, 'z'), {"/tmp"});
    FAIL("accepted");
  } catch (const CniError& e) {
    CHECK(e.msg().size() < 200);
    CHECK(e.msg().find('\n') == std::string::npos);
    CHECK_NOTHROW(e.to_json("1.0.0").dump());
  }
}

TEST_CASE("finder: a 255-byte name is valid", "[exec]") {
  TempDir dir;
  std::string name(255, 'p');
  std::string path = dir.script(name, "", 0755);
  CHECK(find_plugin(name, {dir.str()}) == path);
}

TEST_CASE("finder: first directory with an executable regular file wins", "[exec]") {
  TempDir a, b, c;
  b.script("bridge", "", 0755);
  std::string in_c = c.script("bridge", "", 0755);
  a.script("bridge", "", 0644);  // not executable: skipped
  std::string in_b = (fs::path(b.str()) / "bridge").string();
  CHECK(find_plugin("bridge", {a.str(), b.str(), c.str()}) == in_b);
  CHECK(find_plugin("bridge", {"/nonexistent-dir", "", c.str()}) == in_c);
  CHECK(find_plugin("bridge", {c.str() + "/"}) == in_c);
}

TEST_CASE("finder: directories and dangling symlinks are not plugins, symlinks to plugins are", "[exec]") {
  TempDir dir;
  fs::create_directory(fs::path(dir.str()) / "macvlan");
  fs::create_symlink("/nonexistent/target", fs::path(dir.str()) / "ipvlan");
  std::string real = dir.script("real-ptp", "", 0755);
  fs::create_symlink(real, fs::path(dir.str()) / "ptp");
  CHECK(code_of([&] { find_plugin("macvlan", {dir.str()}); }) == 101);
  CHECK(code_of([&] { find_plugin("ipvlan", {dir.str()}); }) == 101);
  CHECK(find_plugin("ptp", {dir.str()}) == (fs::path(dir.str()) / "ptp").string());
}

TEST_CASE("finder: not found names the plugin and the searched path", "[exec]") {
  TempDir a;
  a.script("other", "", 0755);
  a.script("noexec", "", 0600);
  try {
    find_plugin("noexec", {a.str(), "/nonexistent-dir"});
    FAIL("found");
  } catch (const CniError& e) {
    CHECK(e.code() == 101);
    CHECK(e.msg() == "failed to find plugin \"noexec\" in path [" + a.str() + " /nonexistent-dir]");
  }
  CHECK(code_of([&] { find_plugin("x", {}); }) == 101);
}

TEST_CASE("finder: split_cni_path drops empty elements", "[exec]") {
  CHECK(split_cni_path("") == std::vector<std::string>{});
  CHECK(split_cni_path(":::") == std::vector<std::string>{});
  CHECK(split_cni_path("/opt/cni/bin") == std::vector<std::string>{"/opt/cni/bin"});
  CHECK(split_cni_path(":/a::/b c:") == std::vector<std::string>{"/a", "/b c"});
}
