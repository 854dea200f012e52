// The HTTP transport seam between the Kubernetes API client and the network. ApiClient speaks
// HttpRequest/HttpResponse through the abstract HttpTransport; BeastTransport (beast_transport.h) is
// the real HTTPS implementation and FakeHttpTransport below is the scripted one used by unit tests.
// Besides one request/one response, a transport streams: a watch answer is a body that does not end
// on its own, handed to the caller piece by piece (stream(), StreamOptions, StreamResult). And a batch
// is several requests sent at once and answered in order (send_batch(): pipelined by the real
// transport, so a batch costs one round trip; one at a time by default). Also
// here: TransportError (the failure of one exchange) and the parser for the API server URL, shared
// by the kubeconfig loader, the transport and the client.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "cni/error.h"

namespace manifold::http {

/// Ordered list of HTTP header fields (name, value).
using HttpHeaders = std::vector<std::pair<std::string, std::string>>;

/// One HTTP request. `target` is the origin-form path (and query), e.g. "/api/v1/namespaces".
struct HttpRequest {
  std::string method;   ///< "GET", "PUT", "POST", …
  std::string target;   ///< must start with '/'
  HttpHeaders headers;  ///< Host and Content-Length are added by the transport
  std::string body;
};

/// One HTTP response.
struct HttpResponse {
  int status = 0;
  HttpHeaders headers;
  std::string body;
  /// The value of the first header named `name` (ASCII case-insensitive), or "" when absent.
  std::string header(std::string_view name) const;
};

/// Failure of one HTTP exchange below the HTTP layer (DNS, TCP, TLS, timeout, connection loss,
/// unparsable or oversized response). Code 103 (Kubernetes).
class TransportError : public cni::CniError {
 public:
  /// What went wrong; decides whether the exchange is worth retrying.
  enum class Kind {
    Resolve,    ///< the host name could not be resolved
    Connect,    ///< TCP connection refused / unreachable
    Tls,        ///< TLS handshake failed for a reason other than certificate verification
    TlsVerify,  ///< the server's certificate was rejected (wrong CA, wrong host name, expired)
    Timeout,    ///< the per-request time bound expired
    Closed,     ///< the connection was closed or reset mid-exchange
    Protocol,   ///< the response was not valid HTTP/1.1
    TooLarge,   ///< the response exceeded the size limits
  };
  /// Creates an error of `kind` with a message that names the server (and never a secret).
  TransportError(Kind kind, std::string msg);
  /// The failure category.
  Kind kind() const noexcept { return kind_; }
  /// True for failures that may succeed on another attempt (resolve, connect, TLS handshake,
  /// timeout, connection closed); false for certificate, protocol and size errors.
  bool retryable() const noexcept;

 private:
  Kind kind_;
};

/// The parsed `server` URL of a cluster: https only, host (name, IPv4 or [IPv6]), port, path prefix.
struct ServerUrl {
  std::string host;  ///< name or address, IPv6 without brackets
  std::uint16_t port = 443;
  std::string base_path;  ///< path prefix without trailing '/', "" for none (e.g. "/k8s/clusters/c-1")
  bool host_is_ip = false;
  bool host_is_ipv6 = false;
  /// "host:port" as sent in the Host header ("[::1]:6443" for IPv6).
  std::string authority() const;
  /// "https://host:port" followed by the base path; safe to log (no user info is ever accepted).
  std::string to_string() const;
};

/// Parses and validates an API server URL. Throws CniError(InvalidConfig) for anything but
/// `https://host[:port][/path]` with a valid host; the message never repeats user info.
ServerUrl parse_server_url(std::string_view url);

/// Bounds and hooks of one streamed exchange (HttpTransport::stream).
struct StreamOptions {
  std::chrono::milliseconds open_timeout{10000};  ///< connect + TLS + request written + response header read
  std::chrono::milliseconds idle_timeout{60000};  ///< longest silence allowed between two reads of body bytes
  std::chrono::milliseconds tick{250};            ///< on_tick runs at least this often while waiting for bytes
  /// Runs while waiting (and between body pieces); returning false ends the stream at once
  /// (StreamEnd::Stopped). Unset = always true.
  std::function<bool()> on_tick;
};

/// Why HttpTransport::stream returned.
enum class StreamEnd {
  Completed,  ///< the server ended the body (last chunk, or Content-Length reached, or close after a close-delimited body)
  Stopped,  ///< on_data or on_tick returned false
};

/// The outcome of a streamed exchange.
struct StreamResult {
  /// Status and headers; for a status outside 200-299 also the whole body (bounded like send()),
  /// on_data never called. Status 0 when stopped before the response header arrived.
  HttpResponse head;
  StreamEnd end = StreamEnd::Completed;  ///< why the stream ended
};

/// The outcome of one request of a batch: its response (whatever its status), or the failure that
/// kept it from getting one.
using BatchOutcome = std::variant<HttpResponse, TransportError>;

/// The transport interface: one request in, one response out; several requests in, their responses
/// out in order; or one request in, a body streamed out.
class HttpTransport {
 public:
  virtual ~HttpTransport() = default;
  /// Sends one request and returns the response, whatever its status. Throws TransportError
  /// (connect/TLS/timeout/reset) when no complete response was received within `timeout`.
  virtual HttpResponse send(const HttpRequest& request, std::chrono::milliseconds timeout) = 0;
  /// Sends every request of `requests` within `timeout` (all of them together) and returns one
  /// outcome per request, in order: a TransportError for a request that got no complete response
  /// (each failure is the request's own; the others may still have succeeded). The default sends
  /// them one at a time through send(), each bounded by what is left of `timeout`.
  virtual std::vector<BatchOutcome> send_batch(const std::vector<HttpRequest>& requests,
                                               std::chrono::milliseconds timeout);
  /// Sends `request` on a connection of its own and hands every piece of a 2xx body to `on_data` as it
  /// arrives (returning false stops). Throws TransportError: Timeout when opening exceeds
  /// open_timeout or the body is silent for idle_timeout, Closed when the connection drops before the
  /// body ended, TooLarge for an oversized header block or error body, and the same kinds send() throws
  /// otherwise. The default implementation (for transports that cannot stream, such as test doubles
  /// that only forward send()) throws CniError(Internal).
  virtual StreamResult stream(const HttpRequest& request, const StreamOptions& options,
                              const std::function<bool(std::string_view)>& on_data);
};

/// A scripted transport for tests: answers from one queue of responses, errors and streamed answers
/// (so a test can interleave send() and stream() in order), records requests.
class FakeHttpTransport final : public HttpTransport {
 public:
  /// Queues a response.
  void push_response(HttpResponse response);
  /// Queues a response built from a status, a body and optional headers.
  void push_response(int status, std::string body, HttpHeaders headers = {});
  /// Queues a thrown TransportError.
  void push_error(TransportError error);
  /// Queues a streamed answer: `status`, then `pieces` handed one by one to on_data (on_tick runs once
  /// before each piece), then `end_error` thrown if given (else StreamEnd::Completed). For a non-2xx
  /// status the pieces are joined into head.body.
  void push_stream(int status, std::vector<std::string> pieces, std::optional<TransportError> end_error = std::nullopt,
                   HttpHeaders headers = {});
  /// Called at the start of every send and stream (before the scripted answer), e.g. to advance a fake clock.
  void on_send(std::function<void(const HttpRequest&)> hook) { hook_ = std::move(hook); }
  /// Every request sent, in order.
  const std::vector<HttpRequest>& requests() const { return requests_; }
  /// The size of every batch sent through send_batch(), in order (send() alone records nothing here).
  const std::vector<std::size_t>& batches() const { return batches_; }
  /// The timeout passed with every request, in order (a stream's open_timeout).
  const std::vector<std::chrono::milliseconds>& timeouts() const { return timeouts_; }
  /// Scripted answers not consumed yet.
  std::size_t pending() const { return script_.size(); }
  /// Pops the next scripted answer; throws CniError(Internal) when the script is exhausted or the
  /// answer is a streamed one.
  HttpResponse send(const HttpRequest& request, std::chrono::milliseconds timeout) override;
  /// Pops the next scripted answer and plays it: a streamed answer as push_stream() describes, a
  /// response as a stream whose body is one piece, an error by throwing it. Throws CniError(Internal)
  /// when the script is exhausted.
  StreamResult stream(const HttpRequest& request, const StreamOptions& options,
                      const std::function<bool(std::string_view)>& on_data) override;
  /// Records the batch's size, then answers its requests one by one from the script, a scripted
  /// error becoming that request's outcome.
  std::vector<BatchOutcome> send_batch(const std::vector<HttpRequest>& requests,
                                       std::chrono::milliseconds timeout) override;

 private:
  struct ScriptedStream {
    int status = 0;
    std::vector<std::string> pieces;
    std::optional<TransportError> end_error;
    HttpHeaders headers;
  };
  using Answer = std::variant<HttpResponse, TransportError, ScriptedStream>;
  /// Records the request, runs the hook and pops the next answer.
  Answer next_answer(const HttpRequest& request, std::chrono::milliseconds timeout);
  std::deque<Answer> script_;
  std::vector<HttpRequest> requests_;
  std::vector<std::chrono::milliseconds> timeouts_;
  std::vector<std::size_t> batches_;
  std::function<void(const HttpRequest&)> hook_;
};

}  // namespace manifold::http
