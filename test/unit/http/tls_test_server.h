// Test support for the real HTTPS transport: an in-memory PKI built with the OpenSSL API (EC P-256
// keys, so generation is instant) and a tiny HTTPS/1.1 server on a loopback port, serving each
// connection on a thread of its own, that records connections and requests and can be told to
// misbehave (close after each answer, never answer "/hang", announce an oversized body). A request
// for "/stream..." is answered with raw scripted bytes (StreamScript), each write optionally held
// back until the test releases it, then the connection hangs, closes or is dropped: the test decides
// when the server speaks. Everything is deterministic: no sleeps, and the server is stopped by
// shutting its sockets down, never by timing.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <set>
#include <utility>
#include <vector>

namespace manifold::http::testing {

/// A PEM certificate and its PEM private key.
struct CertAndKey {
  std::string cert_pem;
  std::string key_pem;
};

/// A self-signed certificate authority that issues leaf certificates.
class TestCa {
 public:
  /// Creates a CA with the given common name.
  explicit TestCa(const std::string& common_name);
  ~TestCa();
  TestCa(const TestCa&) = delete;
  TestCa& operator=(const TestCa&) = delete;
  /// The CA certificate, PEM.
  const std::string& cert_pem() const { return ca_.cert_pem; }
  /// Issues a leaf certificate; `sans` entries are "DNS:name" or "IP:address".
  CertAndKey issue(const std::string& common_name, const std::vector<std::string>& sans, bool client) const;

 private:
  struct Native;
  std::unique_ptr<Native> native_;
  CertAndKey ca_;
};

/// How the server treats each request.
enum class ServerMode {
  Respond,             ///< 200 with a small JSON body, keep-alive; a request for "/hang" is never answered
  CloseAfterResponse,  ///< 200, then closes the connection (as an idle-timeout would)
  HugeBody,            ///< announces a 20 MB body and sends none of it
  AnnounceClose,       ///< 200 with "Connection: close", then closes the connection
};

/// The answer to a request for "/stream...": raw bytes, framing included (see chunk()).
struct StreamScript {
  /// What the server does after the last write.
  enum class End {
    Hang,   ///< keeps the connection open, silent, until the server stops
    Close,  ///< sends TLS close_notify, then closes the TCP connection
    Drop,   ///< closes the TCP connection without close_notify
  };
  std::string head;                 ///< status line and header fields, with the empty line
  std::vector<std::string> writes;  ///< written one by one after the head
  bool gated = false;               ///< when true, each write waits for a release() of its own
  End end = End::Hang;
};

/// `data` framed as one HTTP/1.1 chunk, with an optional chunk extension (";name=value").
std::string chunk(const std::string& data, const std::string& extension = "");

/// One request as the server received it.
struct RecordedRequest {
  std::string method;
  std::string target;
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
  int connection = 0;  ///< which accepted connection carried it (1 = the first)
  /// True when the request's first bytes had arrived before the server began to read it (it was
  /// sent with an earlier one, pipelined), false when the server had to wait for it.
  bool arrived_early = false;
  /// The first header with this name (case-insensitive), "" when absent.
  std::string header(const std::string& name) const;
};

/// Server configuration.
struct ServerOptions {
  CertAndKey identity;        ///< the server's certificate and key
  std::string client_ca_pem;  ///< when set, a client certificate from this CA is required
  ServerMode mode = ServerMode::Respond;
  bool ipv6 = false;  ///< listen on [::1] instead of 127.0.0.1
};

/// HTTPS test server on a loopback port, serving every connection on a background thread of its own.
class TlsTestServer {
 public:
  /// Binds and starts serving, answering every request for "/stream..." with `stream`; throws
  /// std::exception when the loopback address cannot be bound.
  explicit TlsTestServer(ServerOptions options, StreamScript stream = {});
  /// Stops the thread: wakes any blocked accept, read or wait, then joins.
  ~TlsTestServer();
  TlsTestServer(const TlsTestServer&) = delete;
  TlsTestServer& operator=(const TlsTestServer&) = delete;

  /// The bound port.
  std::uint16_t port() const { return port_; }
  /// TCP connections accepted so far.
  int accepts() const { return accepts_.load(); }
  /// TLS handshakes completed so far.
  int handshakes() const { return handshakes_.load(); }
  /// Requests received so far.
  std::vector<RecordedRequest> requests() const;
  /// Common name of the last client certificate presented ("" when none).
  std::string client_common_name() const;
  /// Server name (SNI) sent in the last completed handshake ("" when none).
  std::string server_name_indication() const;
  /// Lets one more gated write of the stream script go out.
  void release();
  /// Stream script writes started so far (over all connections).
  int stream_writes() const;

 private:
  void serve();
  template <class Stream>
  void serve_connection(Stream& stream, int index);
  template <class Stream>
  void serve_stream(Stream& stream);
  struct Native;
  ServerOptions options_;
  StreamScript stream_;
  std::unique_ptr<Native> native_;
  std::uint16_t port_ = 0;
  std::atomic<int> accepts_{0};
  std::atomic<int> handshakes_{0};
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  int released_ = 0;
  int stream_writes_ = 0;
  std::set<int> connection_fds_;
  std::vector<std::thread> connection_threads_;
  std::vector<RecordedRequest> requests_;
  std::string client_cn_;
  std::string sni_;
  std::thread thread_;
};

}  // namespace manifold::http::testing
