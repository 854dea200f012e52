// The two Compressor implementations of the log file sink: zlib's gz* API (when built with
// MANIFOLD_HAVE_ZLIB) and a `gzip -c -n` child process started by util::run_child.
#include "util/log_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <memory>
#include <stdexcept>

#if defined(MANIFOLD_HAVE_ZLIB)
#include <zlib.h>
#endif

#include "util/child_process.h"
#include "util/unique_fd.h"

namespace manifold::util {

namespace {

#if defined(MANIFOLD_HAVE_ZLIB)
// gzip with zlib's gz* API, level 6.
class ZlibCompressor final : public Compressor {
 public:
  void gzip_file(const std::string& src, const std::string& dst) override {
    UniqueFd in(::open(src.c_str(), O_RDONLY | O_CLOEXEC));
    if (in.get() < 0) throw std::runtime_error("cannot open " + src + ": " + std::strerror(errno));
    UniqueFd out(::open(dst.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600));
    if (out.get() < 0) throw std::runtime_error("cannot create " + dst + ": " + std::strerror(errno));
    gzFile gz = gzdopen(out.release(), "wb6");
    if (gz == nullptr) throw std::runtime_error("gzdopen failed for " + dst);
    std::unique_ptr<gzFile_s, int (*)(gzFile)> guard(gz, gzclose);
    char buf[1 << 16];
    for (;;) {
      ssize_t n = ::read(in.get(), buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) throw std::runtime_error("cannot read " + src + ": " + std::strerror(errno));
      if (n == 0) break;
      if (gzwrite(gz, buf, static_cast<unsigned>(n)) != static_cast<int>(n))
        throw std::runtime_error("cannot write " + dst);
    }
    if (gzclose(guard.release()) != Z_OK) throw std::runtime_error("cannot finish " + dst);
  }
  std::string name() const override { return "zlib"; }
};
#endif

// gzip as a child process: `gzip -c -n` with stdin = src and stdout = dst; no shell.
class GzipProcessCompressor final : public Compressor {
 public:
  void gzip_file(const std::string& src, const std::string& dst) override {
    std::string gzip;
    for (const char* candidate : {"/usr/bin/gzip", "/bin/gzip", "/usr/local/bin/gzip"}) {
      if (::access(candidate, X_OK) == 0) {
        gzip = candidate;
        break;
      }
    }
    if (gzip.empty()) throw std::runtime_error("no gzip executable found to compress " + src);
    UniqueFd in(::open(src.c_str(), O_RDONLY | O_CLOEXEC));
    if (in.get() < 0) throw std::runtime_error("cannot open " + src + ": " + std::strerror(errno));
    UniqueFd out(::open(dst.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600));
    if (out.get() < 0) throw std::runtime_error("cannot create " + dst + ": " + std::strerror(errno));
    ChildSpec spec;
    spec.path = gzip;
    spec.argv = {gzip, "-c", "-n"};
    spec.env = {"PATH=/usr/bin:/bin"};  // minimal: gzip honours a GZIP variable with options
    spec.stdin_fd = in.get();
    spec.stdout_fd = out.get();
    spec.timeout = std::chrono::hours(1);  // a log of maxSize takes seconds; this stops a hung gzip
    ChildResult r = run_child(spec);       // a ChildError is a std::runtime_error naming the failed call
    if (r.failed_step != ChildStep::None)
      throw std::runtime_error("cannot run " + gzip + ": " + std::strerror(r.start_errno));
    if (r.exit_code != 0) throw std::runtime_error(gzip + " failed compressing " + src);
  }
  std::string name() const override { return "gzip process"; }
};

}  // namespace

std::unique_ptr<Compressor> make_default_compressor() {
#if defined(MANIFOLD_HAVE_ZLIB)
  return std::make_unique<ZlibCompressor>();
#else
  return std::make_unique<GzipProcessCompressor>();
#endif
}

std::unique_ptr<Compressor> make_gzip_process_compressor() { return std::make_unique<GzipProcessCompressor>(); }

}  // namespace manifold::util
