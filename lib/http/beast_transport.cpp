// BeastTransport implementation. Every network step is an asynchronous Asio/Beast operation run on an
// io_context until it completes (beast_connection.h); beast::tcp_stream's expiry guarantees
// completion, so no step outlives its bound. send() keeps one connection on the transport's own
// io_context. stream() opens a connection of its own on an io_context of its own, reads the response
// header with Beast's response parser and then the body in pieces into a caller-sized buffer
// (buffer_body), re-arming the expiry with the idle bound before every read; when the caller's
// on_tick asks to stop, the pending read is cancelled and its handler awaited before stream()
// returns, and the connection is closed on every exit. A request is serialised into one buffer by
// serialize_request (http_wire.h: the bytes Beast's request serializer would write, for a quarter of
// its instructions) and written in one write; a batch is pipelined: all its requests in one write on
// the kept connection, then their answers read in order (HTTP/1.1 pipelining), so it costs one round trip.
#include "http/beast_transport.h"

#include <poll.h>
#include <sys/socket.h>

#include <limits>
#include <boost/asio/write.hpp>
#include <boost/beast/http.hpp>
#include <openssl/crypto.h>

#include "http/beast_connection.h"
#include "http/http_wire.h"
#include "util/log.h"

namespace manifold::http {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
using tcp = asio::ip::tcp;
using beast_detail::OpResult;
using beast_detail::Record;
using beast_detail::SteadyTime;
using beast_detail::StopRequested;
using beast_detail::TlsStream;
using beast_detail::to_ms;
using Kind = TransportError::Kind;

/// Thrown inside send() when a reused keep-alive connection turns out to be dead before any byte of
/// the answer arrived; send() then reconnects once.
struct StaleConnection {
  TransportError error;
};

[[noreturn]] void fail(Kind kind, const std::string& what) { throw TransportError(kind, what); }

bool timed_out(const beast::error_code& ec) {
  return ec == beast::error::timeout || ec == asio::error::operation_aborted;
}

/// Status line fields of a parsed response header.
template <class Message>
HttpResponse head_of(const Message& message) {
  HttpResponse out;
  out.status = static_cast<int>(message.result_int());
  for (const auto& field : message)
    out.headers.emplace_back(std::string(field.name_string()), std::string(field.value()));
  return out;
}

/// Writes the serialised request on `stream` before `deadline`; Timeout or Closed on failure.
void write_request(asio::io_context& ioc, TlsStream& stream, const std::string& wire, SteadyTime deadline,
                   beast_detail::Ticker* ticker, const std::string& server, std::chrono::milliseconds timeout,
                   bool reused) {
  beast::get_lowest_layer(stream).expires_at(deadline);
  auto op = std::make_shared<OpResult>();
  asio::async_write(stream, asio::buffer(wire), Record{op});
  beast_detail::run_until(ioc, &stream, *op, deadline, ticker);
  if (timed_out(op->ec))
    fail(Kind::Timeout,
         "sending the request to Kubernetes API server " + server + " took longer than " + to_ms(timeout));
  if (op->ec) {
    TransportError error(Kind::Closed, "connection to Kubernetes API server " + server +
                                           " failed while sending the request: " + op->ec.message());
    if (reused && beast_detail::is_connection_loss(op->ec)) throw StaleConnection{error};
    throw error;
  }
}

/// Maps the failure of reading an answer (header or whole message) to a TransportError; on a reused
/// connection that failed before any byte of the answer, throws StaleConnection instead.
[[noreturn]] void answer_failed(const beast::error_code& ec, bool got_some, bool reused, const std::string& server,
                                std::chrono::milliseconds timeout) {
  if (timed_out(ec))
    fail(Kind::Timeout, "Kubernetes API server " + server + " did not answer within " + to_ms(timeout));
  if (ec == beast::http::error::body_limit)
    fail(Kind::TooLarge, "the answer of Kubernetes API server " + server + " is larger than " +
                             std::to_string(BeastTransport::kMaxBodyBytes >> 20) + " MiB");
  if (ec == beast::http::error::header_limit)
    fail(Kind::TooLarge, "the answer of Kubernetes API server " + server + " has more than " +
                             std::to_string(BeastTransport::kMaxHeaderBytes >> 10) + " KiB of headers");
  if (beast_detail::is_connection_loss(ec)) {
    TransportError error(Kind::Closed, "connection to Kubernetes API server " + server + " closed " +
                                           (got_some ? "in the middle of the answer" : "before an answer") + ": " +
                                           ec.message());
    if (reused && !got_some) throw StaleConnection{error};
    throw error;
  }
  fail(Kind::Protocol, "invalid HTTP answer from Kubernetes API server " + server + ": " + ec.message());
}

/// One streamed exchange on a connection and io_context of its own. The destructor cancels whatever
/// is pending and waits for its handler, so no handler outlives the state it refers to.
class StreamSession {
 public:
  StreamSession(beast_detail::TlsConnector& connector, const StreamOptions& options)
      : connector_(connector),
        options_(options),
        ticker_(options),
        open_deadline_(std::chrono::steady_clock::now() + options.open_timeout) {}
  ~StreamSession() {
    if (!stream_) return;
    beast::get_lowest_layer(*stream_).close();
    try {
      ioc_.restart();
      ioc_.run_for(std::chrono::seconds(1));  // returns at once when nothing is pending
    } catch (...) {
      // Handlers here only store results; nothing else can throw.
    }
  }
  StreamSession(const StreamSession&) = delete;
  StreamSession& operator=(const StreamSession&) = delete;

  /// Connects, writes the request and reads the response header, all before the open deadline.
  void open(const HttpRequest& request) {
    stream_ = connector_.connect(ioc_, open_deadline_, options_.open_timeout, &ticker_);
    const std::string wire = serialize_request(request, connector_.url().authority());
    write_request(ioc_, *stream_, wire, open_deadline_, &ticker_, connector_.server(), options_.open_timeout, false);
    parser_.header_limit(static_cast<std::uint32_t>(BeastTransport::kMaxHeaderBytes));
    // A watch body has no end (an error body is bounded in read_error_body). Not boost::none: Beast
    // 1.74 compares a Content-Length with an empty limit as larger than it.
    parser_.body_limit(std::numeric_limits<std::uint64_t>::max());
    beast::get_lowest_layer(*stream_).expires_at(open_deadline_);
    auto op = std::make_shared<OpResult>();
    beast::http::async_read_header(*stream_, buffer_, parser_, Record{op});
    beast_detail::run_until(ioc_, stream_.get(), *op, open_deadline_, &ticker_);
    if (op->ec) answer_failed(op->ec, parser_.got_some(), false, connector_.server(), options_.open_timeout);
    head_ = head_of(parser_.get());
  }

  /// The response header (status 0 before it arrived) and, after read_error_body, the body.
  HttpResponse& head() { return head_; }

  /// Reads a non-2xx answer's whole body into head().body, bounded like send(), before the open deadline.
  void read_error_body() {
    const auto too_large = [&] {
      fail(Kind::TooLarge, "the answer of Kubernetes API server " + connector_.server() + " is larger than " +
                               std::to_string(BeastTransport::kMaxBodyBytes >> 20) + " MiB");
    };
    if (parser_.content_length() && *parser_.content_length() > BeastTransport::kMaxBodyBytes) too_large();
    while (!parser_.is_done()) {
      std::size_t n = read_piece(open_deadline_, false);
      if (head_.body.size() + n > BeastTransport::kMaxBodyBytes) too_large();
      head_.body.append(piece_, n);
    }
  }

  /// Hands the 2xx body to `on_data` piece by piece until it ends or a hook says stop.
  StreamEnd pump(const std::function<bool(std::string_view)>& on_data) {
    while (!parser_.is_done()) {
      std::size_t n = read_piece(std::chrono::steady_clock::now() + options_.idle_timeout, true);
      if (n == 0) continue;
      if (!on_data(std::string_view(piece_, n)) || !ticker_.fire()) return StreamEnd::Stopped;
    }
    return StreamEnd::Completed;
  }

 private:
  /// Reads the next body bytes into piece_ before `deadline`; returns how many arrived (maybe 0 when
  /// only framing did).
  std::size_t read_piece(SteadyTime deadline, bool watch) {
    auto& body = parser_.get().body();
    body.data = piece_;
    body.size = sizeof piece_;
    beast::get_lowest_layer(*stream_).expires_at(deadline);
    auto op = std::make_shared<OpResult>();
    beast::http::async_read_some(*stream_, buffer_, parser_, Record{op});
    beast_detail::run_until(ioc_, stream_.get(), *op, deadline, &ticker_);
    const std::size_t n = sizeof piece_ - body.size;
    body.data = nullptr;
    if (!op->ec || op->ec == beast::http::error::need_buffer) return n;
    const std::string& server = connector_.server();
    if (!watch) answer_failed(op->ec, true, false, server, options_.open_timeout);
    if (timed_out(op->ec))
      fail(Kind::Timeout, "Kubernetes API server " + server + " sent nothing for " + to_ms(options_.idle_timeout) +
                              " on the watch stream");
    if (beast_detail::is_connection_loss(op->ec))
      fail(Kind::Closed,
           "Kubernetes API server " + server + " closed the watch stream before its end: " + op->ec.message());
    fail(Kind::Protocol,
         "invalid HTTP body on the watch stream of Kubernetes API server " + server + ": " + op->ec.message());
  }

  beast_detail::TlsConnector& connector_;
  const StreamOptions& options_;
  beast_detail::Ticker ticker_;
  const SteadyTime open_deadline_;
  // Declaration order matters: the stream must be destroyed before the io_context.
  asio::io_context ioc_{1};
  std::unique_ptr<TlsStream> stream_;
  beast::flat_buffer buffer_;
  beast::http::response_parser<beast::http::buffer_body> parser_;
  HttpResponse head_;
  char piece_[16384];
};

}  // namespace

struct BeastTransport::Impl {
  beast_detail::TlsConnector connector;
  // Declaration order matters: the stream must be destroyed before the io_context.
  std::unique_ptr<asio::io_context> ioc;
  std::unique_ptr<TlsStream> stream;
  beast::flat_buffer buffer;

  Impl(ClusterAuth a, std::shared_ptr<TlsSessionStore> sessions) : connector(std::move(a), std::move(sessions)) {}

  void close() {
    if (stream) {
      beast::error_code ignored;
      beast::get_lowest_layer(*stream).socket().shutdown(tcp::socket::shutdown_both, ignored);
      beast::get_lowest_layer(*stream).socket().close(ignored);
      stream.reset();
    }
    buffer.clear();
  }

  /// True when the kept connection can be reused: no buffered leftovers and the server has not
  /// closed it (a zero-length peek means EOF).
  bool connection_usable() {
    if (!stream) return false;
    if (buffer.size() != 0) return false;
    int fd = beast::get_lowest_layer(*stream).socket().native_handle();
    pollfd p{fd, POLLIN, 0};
    int ready = ::poll(&p, 1, 0);
    if (ready == 0) return true;
    if (ready < 0 || (p.revents & (POLLERR | POLLHUP | POLLNVAL)) != 0) return false;
    char byte;
    return ::recv(fd, &byte, 1, MSG_PEEK | MSG_DONTWAIT) > 0;
  }

  void connect(SteadyTime deadline, std::chrono::milliseconds timeout) {
    close();
    stream = connector.connect(*ioc, deadline, timeout, nullptr);
  }

  /// Reads the next answer on the current connection before `deadline`. When `stale_if_none` (a reused
  /// connection on which nothing was answered yet) and the connection turns out dead before any byte
  /// of the answer, throws StaleConnection instead of TransportError. Closes the connection after an
  /// answer that does not keep it alive.
  HttpResponse read_answer(SteadyTime deadline, std::chrono::milliseconds timeout, bool stale_if_none) {
    beast::http::response_parser<beast::http::string_body> parser;
    parser.body_limit(kMaxBodyBytes);
    parser.header_limit(static_cast<std::uint32_t>(kMaxHeaderBytes));
    beast::get_lowest_layer(*stream).expires_at(deadline);
    auto op = std::make_shared<OpResult>();
    beast::http::async_read(*stream, buffer, parser, Record{op});
    beast_detail::run_until(*ioc, stream.get(), *op, deadline, nullptr);
    if (op->ec) answer_failed(op->ec, parser.got_some(), stale_if_none, connector.server(), timeout);

    beast::http::response<beast::http::string_body> res = parser.release();
    HttpResponse out = head_of(res);
    out.body = std::move(res.body());
    if (!res.keep_alive()) close();
    return out;
  }

  /// Opens a connection unless the kept one is usable; true when the kept one is reused.
  bool ready(SteadyTime deadline, std::chrono::milliseconds timeout) {
    if (!ioc) ioc = std::make_unique<asio::io_context>(1);
    connector.ensure_initialized();
    bool reused = connection_usable();
    if (!reused) connect(deadline, timeout);
    return reused;
  }

  /// Writes requests [first, end) of `requests` in one write (pipelined) on a ready connection, then
  /// reads their answers in order into `out` until all are answered or the server ends the
  /// connection after an answer (the unanswered rest is then sent again on a new connection). A
  /// reused connection found dead before its first answer is replaced once; any other failure
  /// becomes the outcome of every request not answered yet.
  void pipeline(const std::vector<HttpRequest>& requests, std::vector<BatchOutcome>& out, SteadyTime deadline,
                std::chrono::milliseconds timeout) {
    bool replaced = false;
    while (out.size() < requests.size()) {
      try {
        bool reused = ready(deadline, timeout) && !replaced;
        std::string wire;
        for (std::size_t i = out.size(); i < requests.size(); ++i)
          wire += serialize_request(requests[i], connector.url().authority());
        write_request(*ioc, *stream, wire, deadline, nullptr, connector.server(), timeout, reused);
        bool first = true;
        while (out.size() < requests.size() && stream) {
          out.emplace_back(read_answer(deadline, timeout, reused && first));
          first = false;
        }
      } catch (const StaleConnection& stale) {
        util::log_debug("kept connection to ", connector.server(), " was closed by the server (", stale.error.msg(),
                        "); reconnecting");
        close();
        replaced = true;
      } catch (const TransportError& e) {
        close();  // the connection's state is unknown after any failure
        while (out.size() < requests.size()) out.emplace_back(e);
      }
    }
  }

  HttpResponse send(const HttpRequest& request, std::chrono::milliseconds timeout) {
    std::vector<BatchOutcome> out = send_batch({request}, timeout);
    if (auto* error = std::get_if<TransportError>(&out.front())) throw *error;
    return std::get<HttpResponse>(std::move(out.front()));
  }

  std::vector<BatchOutcome> send_batch(const std::vector<HttpRequest>& requests, std::chrono::milliseconds timeout) {
    for (const auto& request : requests) validate_request(request);
    const SteadyTime deadline = std::chrono::steady_clock::now() + timeout;
    std::vector<BatchOutcome> out;
    out.reserve(requests.size());
    try {
      pipeline(requests, out, deadline, timeout);
    } catch (...) {
      close();
      throw;
    }
    connector.persist_session();  // a TLS 1.3 session arrives with the first answer
    return out;
  }

  StreamResult stream_body(const HttpRequest& request, const StreamOptions& options,
                           const std::function<bool(std::string_view)>& on_data) {
    validate_request(request);
    connector.ensure_initialized();
    StreamSession session(connector, options);
    StreamResult result;
    try {
      session.open(request);
      if (session.head().status < 200 || session.head().status > 299) {
        session.read_error_body();
      } else {
        result.end = session.pump(on_data);
      }
    } catch (const StopRequested&) {
      result.end = StreamEnd::Stopped;
    }
    result.head = std::move(session.head());
    return result;
  }
};

BeastTransport::BeastTransport(ClusterAuth auth, std::shared_ptr<TlsSessionStore> sessions)
    : impl_(std::make_unique<Impl>(std::move(auth), std::move(sessions))) {}

BeastTransport::~BeastTransport() = default;

HttpResponse BeastTransport::send(const HttpRequest& request, std::chrono::milliseconds timeout) {
  return impl_->send(request, timeout);
}

std::vector<BatchOutcome> BeastTransport::send_batch(const std::vector<HttpRequest>& requests,
                                                     std::chrono::milliseconds timeout) {
  return impl_->send_batch(requests, timeout);
}

StreamResult BeastTransport::stream(const HttpRequest& request, const StreamOptions& options,
                                    const std::function<bool(std::string_view)>& on_data) {
  return impl_->stream_body(request, options, on_data);
}

bool BeastTransport::tls_initialized() const { return impl_->connector.initialized(); }

int BeastTransport::connections_opened() const { return impl_->connector.connections(); }

int BeastTransport::resumed_handshakes() const { return impl_->connector.resumed_handshakes(); }

std::string tls_library_version() { return OpenSSL_version(OPENSSL_VERSION); }

}  // namespace manifold::http
