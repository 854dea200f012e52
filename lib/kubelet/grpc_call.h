// A unary gRPC call over a unix socket, as the kubelet's local APIs (PodResources) are served:
// cleartext HTTP/2 with prior knowledge (h2c), one request message, one answer message. HTTP/2
// framing, flow control and HPACK are nghttp2's; this file owns the socket, the deadline that bounds
// the whole call (connect included), the gRPC message framing (a flag byte and a 4-byte length)
// and the answer's checks: HTTP status 200, an application/grpc content type, grpc-status 0 in the
// trailers, exactly one uncompressed message no larger than the bound. Every failure is a GrpcError
// saying which of these went wrong, so the caller can tell a kubelet that is not there from one
// that misbehaves.
#pragma once

#include <chrono>
#include <cstddef>
#include <stdexcept>
#include <string>
#include <string_view>

namespace manifold::kubelet {

/// What went wrong in a gRPC call.
enum class GrpcFailure {
  Unreachable,  ///< nothing listens on the socket (ENOENT, ECONNREFUSED): the server is not running
  Timeout,      ///< the deadline passed before the answer was complete
  Transport,    ///< the connection failed or closed, or HTTP/2 itself failed
  Protocol,     ///< the answer is not a well-formed gRPC answer
  Status,       ///< the server answered a gRPC error status
  TooLarge,     ///< the answer message is larger than the bound
};

/// A failed gRPC call; what() names the method and the socket.
class GrpcError : public std::runtime_error {
 public:
  /// An error of kind `failure` with message `what`.
  GrpcError(GrpcFailure failure, const std::string& what) : std::runtime_error(what), failure_(failure) {}
  /// The kind of failure.
  GrpcFailure failure() const { return failure_; }

 private:
  GrpcFailure failure_;
};

/// Bounds of one call.
struct GrpcCallOptions {
  std::chrono::milliseconds timeout{10000};  ///< the whole call, connect included
  std::size_t max_message = 16u << 20;       ///< largest answer message accepted (the kubelet client's 16 MiB)
};

/// Calls `method` ("/package.Service/Method") on the gRPC server listening on the unix socket
/// `socket_path` with the serialised request `request`; returns the serialised answer message.
/// Throws GrpcError.
std::string grpc_unary_call(const std::string& socket_path, const std::string& method, std::string_view request,
                            const GrpcCallOptions& options);

/// The 5-byte gRPC length prefix (uncompressed) followed by `message`.
std::string grpc_frame(std::string_view message);

/// The one message of a gRPC answer body: throws GrpcError(Protocol) when the body is not exactly
/// one length-prefixed message or is compressed, GrpcError(TooLarge) when it exceeds `max_message`.
std::string grpc_unframe(std::string_view body, std::size_t max_message);

}  // namespace manifold::kubelet
