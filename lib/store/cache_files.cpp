// Implementation of FileCache's file primitives.
#include "store/cache_files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>

#include "cni/error.h"
#include "util/file_reader.h"

namespace manifold::store {

namespace {

/// Attempts at finding an unused temp-file name before giving up.
constexpr int kTempNameAttempts = 100;

std::atomic<unsigned long> temp_sequence{0};

[[noreturn]] void corrupt_file(const std::filesystem::path& path, const std::string& problem) {
  throw cni::CniError(cni::ErrorCode::Decoding, "corrupt cache file " + path.string() + ": " + problem);
}

}  // namespace

[[noreturn]] void throw_io(const std::string& what, const std::filesystem::path& path, int err) {
  throw cni::CniError(cni::ErrorCode::Io, what + " " + path.string() + ": " + std::strerror(err));
}

void ensure_dir(const std::filesystem::path& dir) {
  if (::mkdir(dir.c_str(), 0700) == 0) {
    if (::chmod(dir.c_str(), 0700) != 0) throw_io("cannot chmod directory", dir, errno);
    return;
  }
  int err = errno;
  if (err == ENOENT && dir.has_relative_path() && dir.parent_path() != dir) {
    ensure_dir(dir.parent_path());
    return ensure_dir(dir);
  }
  if (err != EEXIST) throw_io("cannot create directory", dir, err);
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0) throw_io("cannot stat directory", dir, errno);
  if (!S_ISDIR(st.st_mode)) throw cni::CniError(cni::ErrorCode::Io, dir.string() + " is not a directory");
}

void write_all(const util::UniqueFd& fd, std::string_view data, const std::filesystem::path& path) {
  if (int err = util::write_all(fd.get(), data)) throw_io("cannot write", path, err);
}

std::optional<std::string> read_bounded(const std::filesystem::path& path, std::size_t max_bytes) {
  util::FileRead r = util::try_read_file(path.string(), max_bytes, /*follow_symlinks=*/false);
  switch (r.failure) {
    case util::ReadFailure::None:
      return std::move(r.data);
    case util::ReadFailure::Missing:
      return std::nullopt;
    case util::ReadFailure::SymbolicLink:
    case util::ReadFailure::NotRegular:
    case util::ReadFailure::TooLarge:
      corrupt_file(path, r.reason(max_bytes));
    case util::ReadFailure::System:
      break;
  }
  throw_io("cannot read", path, r.error);
}

bool is_temp_suffix(std::string_view rest) {
  constexpr std::string_view kExt = ".tmp";
  if (rest.size() <= kExt.size() || rest.substr(rest.size() - kExt.size()) != kExt) return false;
  rest.remove_suffix(kExt.size());
  size_t dot = rest.find('.');
  if (dot == 0 || dot == std::string_view::npos || dot + 1 == rest.size()) return false;
  auto digits = [](std::string_view s) {
    return std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
  };
  return digits(rest.substr(0, dot)) && digits(rest.substr(dot + 1));
}

void unlink_if_present(const std::filesystem::path& path) {
  if (::unlink(path.c_str()) != 0 && errno != ENOENT) throw_io("cannot remove", path, errno);
}

TempFile::TempFile(const std::filesystem::path& dir, const std::string& container_id,
                   const std::function<void()>& make_dir) {
  bool made_dir = false;
  for (int attempt = 0; attempt < kTempNameAttempts; ++attempt) {
    path_ = dir / (container_id + "." + std::to_string(::getpid()) + "." + std::to_string(temp_sequence++) + ".tmp");
    fd_ = util::UniqueFd(::open(path_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600));
    if (fd_.valid()) break;
    if (errno == ENOENT && !made_dir) {
      make_dir();
      made_dir = true;
      continue;
    }
    if (errno != EEXIST) throw_io("cannot create", path_, errno);
  }
  if (!fd_.valid()) throw_io("cannot create", path_, EEXIST);
  owned_ = true;
}

TempFile::~TempFile() {
  fd_.reset();
  if (owned_) ::unlink(path_.c_str());
}

void TempFile::commit(std::string_view data, const std::filesystem::path& target,
                      const std::function<void()>& make_target_dir) {
  if (::fchmod(fd_.get(), 0600) != 0) throw_io("cannot chmod", path_, errno);
  write_all(fd_, data, path_);
  if (int err = fd_.close_checked()) throw_io("cannot close", path_, err);
  int renamed = ::rename(path_.c_str(), target.c_str());
  if (renamed != 0 && errno == ENOENT) {
    make_target_dir();
    renamed = ::rename(path_.c_str(), target.c_str());
  }
  if (renamed != 0) throw_io("cannot rename " + path_.string() + " to", target, errno);
  owned_ = false;
}

}  // namespace manifold::store
