// Implementation of atomic file writes and copies: mkostemp in the target directory, write, fchmod,
// fsync, rename over the destination, fsync the directory. Every fd is owned by an RAII guard and
// the temp file is unlinked on every failure path; only a killed process leaves one, which the
// stale-temp sweep removes later.
#include "util/atomic_file.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <memory>

#include "util/error.h"
#include "util/unique_fd.h"

namespace manifold::util {

namespace {

// The temp files of destination file name `name` are this prefix and mkostemp's six characters.
std::string temp_prefix(const std::string& name) { return "." + name + ".tmp-"; }
constexpr std::size_t kTempSuffixLength = 6;

[[noreturn]] void io_error(const std::string& what, const std::string& path, int err) {
  throw IoError(what + " " + path + ": " + std::strerror(err));
}

void write_or_throw(int fd, std::string_view data, const std::string& path) {
  if (int err = write_all(fd, data)) io_error("cannot write", path, err);
}

// A temp file next to the destination; unlinked unless committed.
class TempFile {
 public:
  explicit TempFile(const std::string& dst) : dst_(dst) {
    std::filesystem::path p(dst);
    std::string name = p.filename().string();
    if (name.empty()) throw IoError("invalid destination path " + dst);
    path_ = (p.parent_path() / (temp_prefix(name) + "XXXXXX")).string();
    fd_.reset(::mkostemp(path_.data(), O_CLOEXEC));
    if (fd_.get() < 0) {
      int err = errno;
      path_.clear();
      io_error("cannot create a temp file for", dst, err);
    }
  }
  ~TempFile() {
    fd_.reset();
    if (!path_.empty()) ::unlink(path_.c_str());
  }
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;

  int fd() const { return fd_.get(); }

  // fchmod + fsync + close + rename + directory fsync.
  void commit(mode_t mode) {
    if (::fchmod(fd_.get(), mode) != 0) io_error("cannot chmod temp file for", dst_, errno);
    if (::fsync(fd_.get()) != 0) io_error("cannot fsync temp file for", dst_, errno);
    if (int err = fd_.close_checked(); err != 0) io_error("cannot close temp file for", dst_, err);
    if (::rename(path_.c_str(), dst_.c_str()) != 0) io_error("cannot rename into", dst_, errno);
    path_.clear();
    std::string dir = std::filesystem::path(dst_).parent_path().string();
    UniqueFd dfd(::open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (dfd.get() >= 0) (void)::fsync(dfd.get());
  }

 private:
  std::string dst_;
  std::string path_;
  UniqueFd fd_;
};

}  // namespace

void write_file_atomic(const std::string& path, std::string_view data, mode_t mode) {
  TempFile tmp(path);
  write_or_throw(tmp.fd(), data, path);
  tmp.commit(mode);
}

void copy_file_atomic(const std::string& src, const std::string& dst, mode_t mode) {
  UniqueFd in(::open(src.c_str(), O_RDONLY | O_CLOEXEC));
  if (in.get() < 0) io_error("cannot open", src, errno);
  struct stat st {};
  if (::fstat(in.get(), &st) != 0) io_error("cannot stat", src, errno);
  if (!S_ISREG(st.st_mode)) throw IoError("not a regular file: " + src);
  TempFile tmp(dst);
  char buf[1 << 16];
  for (;;) {
    ssize_t n = ::read(in.get(), buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) io_error("cannot read", src, errno);
    if (n == 0) break;
    write_or_throw(tmp.fd(), std::string_view(buf, static_cast<size_t>(n)), dst);
  }
  tmp.commit(mode);
}

int remove_stale_temp_files(const std::string& path, std::int64_t min_age_seconds) noexcept {
  try {
    const std::filesystem::path p(path);
    const std::string prefix = temp_prefix(p.filename().string());
    const std::string dir = p.parent_path().empty() ? "." : p.parent_path().string();
    std::unique_ptr<DIR, int (*)(DIR*)> listing(::opendir(dir.c_str()), ::closedir);
    if (!listing) return 0;
    const std::int64_t cutoff = static_cast<std::int64_t>(std::time(nullptr)) - min_age_seconds;
    int removed = 0;
    while (const dirent* entry = ::readdir(listing.get())) {
      const std::string_view name = entry->d_name;
      if (name.size() != prefix.size() + kTempSuffixLength || name.substr(0, prefix.size()) != prefix) continue;
      struct stat st {};
      if (::fstatat(::dirfd(listing.get()), entry->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode) ||
          static_cast<std::int64_t>(st.st_mtime) > cutoff)
        continue;
      if (::unlinkat(::dirfd(listing.get()), entry->d_name, 0) == 0) ++removed;
    }
    return removed;
  } catch (...) {  // allocation failure: leave the leftovers for the next sweep
    return 0;
  }
}

}  // namespace manifold::util
