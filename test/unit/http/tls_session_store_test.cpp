// Tests of the stored TLS sessions with in-memory files: a session comes back only for its own
// binding and before its expiry, is written 0600 and atomically through the FileWriter, and a
// missing, malformed, foreign, oversized or too long-lived file is ignored rather than an error.
#include <catch2/catch.hpp>
#include <stdexcept>

#include "http/tls_session_store.h"
#include "util/error.h"

using namespace manifold;
using manifold::http::TlsSessionStore;

namespace {

const std::string kBinding(64, 'a');
const std::string kOtherBinding = std::string(32, 'a') + std::string(32, 'b');
constexpr std::int64_t kNow = 1'800'000'000;

struct Store {
  std::shared_ptr<util::FakeFileReader> files = std::make_shared<util::FakeFileReader>();
  std::shared_ptr<util::FakeFileWriter> writer = std::make_shared<util::FakeFileWriter>(*files);
  TlsSessionStore store{"/var/lib/cni/manifold/.tls", files, writer};
};

class FailingWriter final : public util::FileWriter {
 public:
  void write(const std::string& path, std::string_view, mode_t) override {
    throw util::IoError("cannot write " + path + ": Read-only file system");
  }
  bool remove(const std::string&) override { return false; }
};

}  // namespace

TEST_CASE("TLS session store: a saved session comes back for its binding until it expires", "[http]") {
  Store s;
  const std::string session("\x30\x82\x01\x00\xff binary\n", 13);
  s.store.save(kBinding, session, kNow + 3600, kNow);
  const std::string path = s.store.path();
  CHECK(path == "/var/lib/cni/manifold/.tls/session");
  REQUIRE(s.writer->written().count(path) == 1);
  CHECK(s.writer->written().at(path) == 0600);
  CHECK(s.store.load(kBinding, kNow) == session);
  CHECK(s.store.load(kBinding, kNow + 3599) == session);
  CHECK_FALSE(s.store.load(kBinding, kNow + 3600));       // expired
  CHECK_FALSE(s.store.load(kOtherBinding, kNow));         // another identity
  s.store.save(kOtherBinding, "other", kNow + 60, kNow);  // replaces it: one file, never more
  CHECK(s.writer->written().size() == 1);
  CHECK(s.store.load(kOtherBinding, kNow) == "other");
  CHECK_FALSE(s.store.load(kBinding, kNow));
  CHECK_FALSE(s.store.load("not-a-digest", kNow));        // never a path from a malformed binding
  CHECK_FALSE(s.store.load(std::string(64, 'A'), kNow));  // digests are lowercase hex
}

TEST_CASE("TLS session store: nothing is stored that could not be used", "[http]") {
  Store s;
  s.store.save(kBinding, "session", kNow, kNow);  // already expired
  s.store.save(kBinding, "session", kNow + TlsSessionStore::kMaxLifetimeSeconds + 1, kNow);
  s.store.save(kBinding, "", kNow + 60, kNow);
  s.store.save("../../etc/passwd", "session", kNow + 60, kNow);
  s.store.save(kBinding, std::string(TlsSessionStore::kMaxFileBytes, 'x'), kNow + 60, kNow);
  CHECK(s.writer->written().empty());
}

TEST_CASE("TLS session store: missing, malformed and foreign files are ignored", "[http]") {
  Store s;
  const std::string path = s.store.path();
  CHECK_FALSE(s.store.load(kBinding, kNow));  // none yet
  const std::string good_head = "manifold-tls-session 1\nbinding " + kBinding + "\n";
  const std::vector<std::string> bad = {
      "",
      "garbage",
      good_head + "expires 1800003600\nsession 0a0b\n" + "extra line\n",
      good_head + "expires 1800003600\nsession 0a0b",  // no final newline
      good_head + "expires soon\nsession 0a0b\n",
      good_head + "expires 1800003600\nsession 0a0\n",  // odd number of digits
      good_head + "expires 1800003600\nsession zz\n",
      good_head + "expires 1800003600\nsession \n",
      good_head + "expires 1800003600\n",
      "manifold-tls-session 2\nbinding " + kBinding + "\nexpires 1800003600\nsession 0a0b\n",
      "manifold-tls-session 1\nbinding " + kOtherBinding + "\nexpires 1800003600\nsession 0a0b\n",
      // a lifetime no TLS 1.3 ticket can have: the file was not written by us, or the clock jumped
      good_head + "expires 1900000000\nsession 0a0b\n",
      good_head + "expires 1799999999\nsession 0a0b\n",
  };
  for (const std::string& text : bad) {
    CAPTURE(text);
    s.files->add(path, text);
    CHECK_FALSE(s.store.load(kBinding, kNow));
  }
  s.files->add(path, good_head + "expires 1800003600\nsession 0a0b\n");
  CHECK(s.store.load(kBinding, kNow) == std::string("\x0a\x0b"));
}

TEST_CASE("TLS session store: a failed write is logged, never thrown", "[http]") {
  auto files = std::make_shared<util::FakeFileReader>();
  TlsSessionStore store("/ro/.tls", files, std::make_shared<FailingWriter>());
  CHECK_NOTHROW(store.save(kBinding, "session", kNow + 60, kNow));
  CHECK_FALSE(store.load(kBinding, kNow));
}
