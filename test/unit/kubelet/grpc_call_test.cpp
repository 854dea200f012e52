// Tests of the unary gRPC call's own parts without a gRPC server: the message framing both ways,
// and how the call classifies servers that are not there (no socket, a socket nobody listens on),
// that never answer (bounded by the deadline), that close at once, or that speak something other
// than HTTP/2. A real gRPC server (test/integration/kubelet) answers in the integration tests.
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstring>
#include <string>
#include <thread>

#include "kubelet/grpc_call.h"
#include "temp_dir.h"
#include "util/unique_fd.h"

using namespace manifold::kubelet;
using manifold::test::TempDir;
using manifold::util::UniqueFd;

namespace {

UniqueFd bound_socket(const std::string& path, bool listening) {
  UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, path.data(), path.size());
  REQUIRE(::bind(fd.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof addr) == 0);
  if (listening) REQUIRE(::listen(fd.get(), 4) == 0);
  return fd;
}

GrpcFailure failure_of(const std::string& socket, std::chrono::milliseconds timeout = std::chrono::seconds(5)) {
  GrpcCallOptions options;
  options.timeout = timeout;
  try {
    grpc_unary_call(socket, "/v1.PodResourcesLister/List", {}, options);
  } catch (const GrpcError& e) {
    CHECK(std::string(e.what()).find(socket) != std::string::npos);
    return e.failure();
  }
  FAIL("the call succeeded");
  return GrpcFailure::Protocol;
}

/// Accepts one connection and hands it to `serve` on a thread.
struct OneShotServer {
  UniqueFd listener;
  std::thread thread;
  OneShotServer(const std::string& path, std::function<void(int)> serve) : listener(bound_socket(path, true)) {
    thread = std::thread([this, serve] {
      UniqueFd conn(::accept(listener.get(), nullptr, nullptr));
      if (conn.valid()) serve(conn.get());
    });
  }
  ~OneShotServer() { thread.join(); }
};

}  // namespace

TEST_CASE("gRPC framing: a flag byte, a big-endian length, the message", "[kubelet]") {
  CHECK(grpc_frame("") == std::string(5, '\0'));
  CHECK(grpc_frame("ab") == std::string("\0\0\0\0\2ab", 7));
  CHECK(grpc_unframe(grpc_frame("hello"), 16) == "hello");
  std::string big(300, 'x');
  CHECK(grpc_unframe(grpc_frame(big), 300) == big);
  auto failure = [](std::string_view body, std::size_t max) {
    try {
      grpc_unframe(body, max);
    } catch (const GrpcError& e) {
      return e.failure();
    }
    return GrpcFailure::Unreachable;  // "no error"
  };
  CHECK(failure("", 16) == GrpcFailure::Protocol);
  CHECK(failure(std::string("\0\0\0", 3), 16) == GrpcFailure::Protocol);
  CHECK(failure(std::string("\1\0\0\0\1x", 6), 16) == GrpcFailure::Protocol);       // compressed
  CHECK(failure(std::string("\0\0\0\0\2x", 6), 16) == GrpcFailure::Protocol);       // short
  CHECK(failure(grpc_frame("ab") + grpc_frame("c"), 16) == GrpcFailure::Protocol);  // two messages
  CHECK(failure(grpc_frame(big), 299) == GrpcFailure::TooLarge);
}

TEST_CASE("gRPC call: no server is Unreachable, whether the socket is missing or stale", "[kubelet]") {
  TempDir dir;
  CHECK(failure_of(dir.str() + "/absent.sock") == GrpcFailure::Unreachable);
  const std::string stale = dir.str() + "/stale.sock";
  { UniqueFd fd = bound_socket(stale, false); }  // bound, closed, file left behind
  CHECK(failure_of(stale) == GrpcFailure::Unreachable);
  CHECK(failure_of(dir.str() + "/" + std::string(120, 'x')) == GrpcFailure::Transport);  // path too long
}

TEST_CASE("gRPC call: a server that never answers ends at the deadline", "[kubelet]") {
  TempDir dir;
  const std::string path = dir.str() + "/silent.sock";
  UniqueFd listener = bound_socket(path, true);  // the kernel accepts; nobody ever reads or writes
  CHECK(failure_of(path, std::chrono::milliseconds(200)) == GrpcFailure::Timeout);
}

TEST_CASE("gRPC call: a server that closes or speaks something else fails the transport", "[kubelet]") {
  TempDir dir;
  const std::string closing = dir.str() + "/closing.sock";
  {
    OneShotServer server(closing, [](int) {});
    CHECK(failure_of(closing) == GrpcFailure::Transport);
  }
  const std::string http1 = dir.str() + "/http1.sock";
  {
    OneShotServer server(http1, [](int fd) {
      const char reply[] = "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n";
      (void)!::write(fd, reply, sizeof reply - 1);
    });
    CHECK(failure_of(http1) == GrpcFailure::Transport);
  }
}
