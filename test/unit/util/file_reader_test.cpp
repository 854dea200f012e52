// Tests of the file readers: the real one against files in a private temporary directory (regular
// file, missing file, directory, symbolic link, size bound), the failure reasons of try_read_file,
// and the in-memory fake.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <cerrno>
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

TEST_CASE("try_read_file says why a read failed, and refuses links only when asked", "[util]") {
  TempDir dir;
  const std::string target = dir.write("target", "data");
  const std::string link = dir.str() + "/link";
  REQUIRE(::symlink(target.c_str(), link.c_str()) == 0);

  FileRead ok = try_read_file(link, 100);
  CHECK(ok.ok());
  CHECK(ok.data == "data");

  FileRead refused = try_read_file(link, 100, /*follow_symlinks=*/false);
  CHECK(refused.failure == ReadFailure::SymbolicLink);
  CHECK(refused.data.empty());
  CHECK(refused.reason(100) == "it is a symbolic link");

  FileRead missing = try_read_file(dir.str() + "/none", 100);
  CHECK(missing.failure == ReadFailure::Missing);
  CHECK(missing.error == ENOENT);

  CHECK(try_read_file(dir.str(), 100).failure == ReadFailure::NotRegular);
  FileRead big = try_read_file(target, 3);
  CHECK(big.failure == ReadFailure::TooLarge);
  CHECK(big.reason(3) == "file is larger than 3 bytes");
  CHECK(try_read_file(target, 4).data == "data");  // exactly the bound is fine

  // /proc/self/mem is a regular file whose read at offset 0 fails (EIO): a system error.
  FileRead unreadable = try_read_file("/proc/self/mem", 100);
  CHECK(unreadable.failure == ReadFailure::System);
  CHECK(unreadable.error == EIO);

  // A NUL byte would end the name open() sees: "target\0junk" must not read "target".
  FileRead cut = try_read_file(target + std::string("\0junk", 5), 100);
  CHECK(cut.failure == ReadFailure::System);
  CHECK(cut.error == EINVAL);
  CHECK(cut.data.empty());
}
