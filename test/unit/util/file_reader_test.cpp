// Tests of the file readers: the real one against files in a private temporary directory (regular
// file, missing file, directory, size bound) and the in-memory fake.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>

#include "cni/error.h"
#include "temp_dir.h"
#include "util/error.h"
#include "util/file_reader.h"

using namespace manifold;
using namespace manifold::util;
using manifold::test::TempDir;

TEST_CASE("RealFileReader reads whole files and bounds their size", "[util]") {
  TempDir dir;
  RealFileReader reader;
  std::string big(40000, 'x');
  big[39999] = '\0';
  std::string path = dir.write("big", big);
  CHECK(reader.read(path) == big);
  CHECK(reader.read(dir.write("empty", "")).empty());
  CHECK_THROWS_WITH(reader.read(path, 39999), Catch::Contains(path) && Catch::Contains("larger than 39999 bytes"));
}

TEST_CASE("RealFileReader reports missing files and directories", "[util]") {
  TempDir dir;
  RealFileReader reader;
  try {
    reader.read(dir.str() + "/missing");
    FAIL("no error");
  } catch (const util::IoError& e) {
    // The CNI dispatcher reports an IoError as error 5 (skel_test covers the mapping).
    CHECK(e.msg() == "cannot read " + dir.str() + "/missing: No such file or directory");
  }
  CHECK_THROWS_WITH(reader.read(dir.str()), Catch::Contains("not a regular file"));
}

TEST_CASE("FakeFileReader serves added files and records reads", "[util]") {
  FakeFileReader files;
  files.add("/a", "alpha");
  CHECK(files.read("/a") == "alpha");
  CHECK_THROWS_WITH(files.read("/b"), "cannot read /b: No such file or directory");
  CHECK_THROWS_WITH(files.read("/a", 3), Catch::Contains("larger than 3 bytes"));
  files.remove("/a");
  CHECK_THROWS_AS(files.read("/a"), util::IoError);
  CHECK(files.reads() == std::vector<std::string>{"/a", "/b", "/a", "/a"});
}
