// Tests of the real file writer against a private temporary directory: atomic replacement with the
// requested mode, parent directories created, removal, and the sweep of temp files that a writer
// killed between creating and renaming its temp file left behind (only old ones, only of the same
// destination, only regular files).
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/time.h>

#include <filesystem>
#include <string>

#include "temp_dir.h"
#include "util/atomic_file.h"
#include "util/file_reader.h"
#include "util/file_writer.h"

using namespace manifold;
using namespace manifold::util;
using manifold::test::TempDir;

namespace {

/// Sets the access and modification times of `path` to `seconds_ago` seconds in the past.
void age(const std::string& path, long seconds_ago) {
  struct timeval now {};
  ::gettimeofday(&now, nullptr);
  struct timeval times[2] = {{now.tv_sec - seconds_ago, 0}, {now.tv_sec - seconds_ago, 0}};
  REQUIRE(::lutimes(path.c_str(), times) == 0);
}

bool exists(const std::filesystem::path& p) {
  return std::filesystem::symlink_status(p).type() != std::filesystem::file_type::not_found;
}

}  // namespace

TEST_CASE("RealFileWriter replaces files atomically with their mode and removes them", "[util]") {
  TempDir dir;
  RealFileWriter writer;
  const std::string path = (dir.path() / "a" / "b" / "session").string();
  writer.write(path, "one", 0600);
  writer.write(path, "two", 0600);
  CHECK(RealFileReader().read(path) == "two");
  struct stat st {};
  REQUIRE(::stat(path.c_str(), &st) == 0);
  CHECK((st.st_mode & 07777) == 0600);
  CHECK(std::distance(std::filesystem::directory_iterator(dir.path() / "a" / "b"), {}) == 1);
  CHECK(writer.remove(path));
  CHECK_FALSE(writer.remove(path));
}

TEST_CASE("a write sweeps the old temp files killed writers of the same path left", "[util]") {
  TempDir dir;
  const std::string stale = dir.write(".session.tmp-Ab12Cd", "partial");
  const std::string fresh = dir.write(".session.tmp-Xy34Zw", "in progress");
  const std::string other = dir.write(".device.tmp-Ab12Cd", "another destination's");
  const std::string longer = dir.write(".session.tmp-Ab12Cde", "not mkostemp's shape");
  const std::string link = (dir.path() / ".session.tmp-Li12nk").string();
  std::filesystem::create_symlink(other, link);
  for (const std::string& p : {stale, other, longer, link}) age(p, RealFileWriter::kStaleTempSeconds + 5);
  age(fresh, RealFileWriter::kStaleTempSeconds - 60);

  RealFileWriter().write((dir.path() / "session").string(), "stored", 0600);
  CHECK_FALSE(exists(stale));
  CHECK(exists(fresh));  // may belong to a write in progress
  CHECK(exists(other));
  CHECK(exists(longer));
  CHECK(exists(link));  // only regular files are removed
  CHECK(RealFileReader().read((dir.path() / "session").string()) == "stored");

  age(fresh, RealFileWriter::kStaleTempSeconds + 5);
  CHECK(remove_stale_temp_files((dir.path() / "session").string(), RealFileWriter::kStaleTempSeconds) == 1);
  CHECK_FALSE(exists(fresh));
  CHECK(remove_stale_temp_files((dir.path() / "session").string(), 0) == 0);
  CHECK(remove_stale_temp_files((dir.path() / "missing-dir" / "session").string(), 0) == 0);
}
