// RelayServer implementation: plain sockets and threads. One thread accepts (poll on the listening
// socket and a wake-up pipe); each accepted connection gets a worker thread that runs one exchange:
// peer check, request frame, policy, node scope, upstream waves, answer frame. A worker never
// closes its own socket: the accepting thread joins finished workers and closes their sockets, so
// stop() can shut down the socket of every worker still running without racing a descriptor's reuse.
#include "relay/relay_server.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <list>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "cni/error.h"
#include "relay/relay_exchange.h"
#include "relay/relay_policy.h"
#include "relay/relay_protocol.h"
#include "relay/relay_scope.h"
#include "util/log.h"
#include "util/unique_fd.h"

namespace manifold::relay {
namespace {

using Clock = std::chrono::steady_clock;
constexpr std::chrono::milliseconds kAnswerWrite(5000);
constexpr std::chrono::milliseconds kBusyAnswer(200);
constexpr int kReapEveryMs = 1000;

[[noreturn]] void fail(cni::ErrorCode code, const std::string& msg) {
  throw cni::CniError(code, "agent relay: " + msg);
}

std::string errno_text() { return std::strerror(errno); }

sockaddr_un address_of(const std::string& path) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.empty() || path.size() >= sizeof addr.sun_path)
    fail(cni::ErrorCode::InvalidConfig,
         "socket path \"" + path + "\" is empty or longer than " + std::to_string(sizeof addr.sun_path - 1) + " bytes");
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  return addr;
}

/// Writes a refusal; the client is told nothing but GETs was sent upstream.
void write_refusal(int fd, const std::string& why, std::chrono::milliseconds bound) {
  relay::RelayAnswer answer;
  answer.refused = why;
  try {
    relay::write_frame(fd, relay::encode_answer(answer), Clock::now() + bound);
  } catch (const http::TransportError&) {
    // the client is gone: nothing to tell it
  }
}

}  // namespace

struct RelayServer::Impl {
  struct Worker {
    util::UniqueFd fd;
    std::shared_ptr<std::atomic<bool>> done;
    std::thread thread;
  };

  RelayServerOptions options;
  TransportFactory upstream;
  Authorization authorization;
  RelayCounters& counters;
  std::string base_path;
  util::UniqueFd listener;
  util::UniqueFd wake_read;
  util::UniqueFd wake_write;
  struct stat socket_stat {};
  std::thread acceptor;
  std::atomic<bool> stopping{false};
  std::mutex mu;  // guards idle and workers
  std::vector<std::unique_ptr<http::HttpTransport>> idle;
  std::list<Worker> workers;
  ByteBudget budget;
  InFlight in_flight;
  std::shared_ptr<RelayScope> scope;

  Impl(RelayServerOptions o, TransportFactory u, Authorization a, RelayCounters& c)
      : options(std::move(o)),
        upstream(std::move(u)),
        authorization(std::move(a)),
        counters(c),
        base_path(http::parse_server_url(options.server).base_path),
        budget(options.max_buffered_bytes),
        in_flight(options.max_in_flight),
        scope(options.scope ? options.scope : std::make_shared<NodeScope>(options.node_name, base_path)) {
    options.server = http::parse_server_url(options.server).to_string();
    int pipe_fds[2];
    if (::pipe2(pipe_fds, O_CLOEXEC | O_NONBLOCK) != 0) fail(cni::ErrorCode::Internal, "pipe: " + errno_text());
    wake_read.reset(pipe_fds[0]);
    wake_write.reset(pipe_fds[1]);
    bind_socket();
    acceptor = std::thread([this] { accept_loop(); });
  }

  void bind_socket() {
    const std::string& path = options.socket_path;
    sockaddr_un addr = address_of(path);
    std::filesystem::path dir = std::filesystem::path(path).parent_path();
    if (!dir.empty() && ::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST)
      fail(cni::ErrorCode::Internal, "cannot create " + dir.string() + ": " + errno_text());
    struct stat st {};
    if (::lstat(path.c_str(), &st) == 0) {
      if (!S_ISSOCK(st.st_mode)) fail(cni::ErrorCode::InvalidConfig, path + " exists and is not a socket");
      util::UniqueFd probe(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
      if (probe.valid() && ::connect(probe.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0)
        fail(cni::ErrorCode::InvalidConfig, "another process serves " + path);
      if (::unlink(path.c_str()) != 0 && errno != ENOENT)
        fail(cni::ErrorCode::Internal, "cannot replace the stale socket " + path + ": " + errno_text());
    }
    listener.reset(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
    if (!listener.valid()) fail(cni::ErrorCode::Internal, "socket: " + errno_text());
    if (::bind(listener.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0)
      fail(cni::ErrorCode::Internal, "cannot bind " + path + ": " + errno_text());
    if (::chmod(path.c_str(), 0600) != 0 || ::lstat(path.c_str(), &socket_stat) != 0 ||
        ::listen(listener.get(), 128) != 0) {
      std::string why = errno_text();
      ::unlink(path.c_str());
      fail(cni::ErrorCode::Internal, "cannot serve " + path + ": " + why);
    }
  }

  void accept_loop() {
    while (!stopping) {
      pollfd fds[2] = {{listener.get(), POLLIN, 0}, {wake_read.get(), POLLIN, 0}};
      int n = ::poll(fds, 2, kReapEveryMs);
      reap(false);
      if (n <= 0 || stopping || !(fds[0].revents & POLLIN)) continue;
      util::UniqueFd fd(::accept4(listener.get(), nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK));
      if (!fd.valid()) continue;  // EAGAIN, ECONNABORTED, EMFILE…: try again at the next poll
      std::lock_guard lock(mu);
      if (workers.size() >= options.max_connections) {
        counters.refused();
        write_refusal(fd.get(), "busy: " + std::to_string(workers.size()) + " exchanges in progress", kBusyAnswer);
        continue;
      }
      auto done = std::make_shared<std::atomic<bool>>(false);
      int raw = fd.get();
      workers.push_back(Worker{std::move(fd), done, {}});
      workers.back().thread = std::thread([this, raw, done] {
        serve(raw);
        *done = true;
      });
    }
    reap(true);
  }

  /// Joins finished workers (all of them when `all`) and closes their sockets.
  void reap(bool all) {
    std::list<Worker> finished;
    {
      std::lock_guard lock(mu);
      for (auto it = workers.begin(); it != workers.end();) {
        if (all || *it->done) {
          auto next = std::next(it);
          finished.splice(finished.end(), workers, it);
          it = next;
        } else {
          ++it;
        }
      }
    }
    for (Worker& w : finished) w.thread.join();
  }

  void refuse(int fd, const std::string& why) {
    counters.refused();
    util::log_verbose("agent relay: refused an exchange: ", why);
    write_refusal(fd, why, kAnswerWrite);
  }

  std::unique_ptr<http::HttpTransport> take_transport() {
    {
      std::lock_guard lock(mu);
      if (!idle.empty()) {
        auto t = std::move(idle.back());
        idle.pop_back();
        return t;
      }
    }
    return upstream();
  }

  void give_back(std::unique_ptr<http::HttpTransport> t) {
    std::lock_guard lock(mu);
    if (idle.size() < options.max_connections) idle.push_back(std::move(t));
  }

  /// The request frame of the exchange on `fd` (its bytes held in `hold`), decoded; nothing when it
  /// was refused or not read.
  std::optional<relay::RelayRequest> read_request(int fd, BudgetHold& hold) {
    try {
      return relay::decode_request(
          relay::read_frame(fd, relay::kMaxRequestFrame, Clock::now() + options.request_read, &hold));
    } catch (const http::TransportError& e) {
      if (e.kind() == http::TransportError::Kind::TooLarge)
        refuse(fd, e.msg());
      else
        util::log_verbose("agent relay: no request read: ", e.msg());
    } catch (const cni::CniError& e) {
      refuse(fd, e.msg());
    }
    return std::nullopt;
  }

  /// One exchange on the accepted socket `fd`.
  void serve(int fd) {
    ucred peer{};
    socklen_t len = sizeof peer;
    if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &peer, &len) != 0 || peer.uid != options.allowed_uid)
      return refuse(fd, "peer uid " + std::to_string(peer.uid) + " is not allowed");
    BudgetHold hold(&budget);
    std::optional<relay::RelayRequest> request = read_request(fd, hold);
    if (!request) return;
    if (request->server != options.server)
      return refuse(fd,
                    "this agent serves the API server " + options.server + ", not " + request->server.substr(0, 300));
    for (http::HttpRequest& r : request->requests) {
      if (std::string why = relay_refusal(r, base_path); !why.empty()) return refuse(fd, why);
      r.headers = relay_headers(r.headers);
    }
    if (answer_from_memory(fd, *request, hold)) return;
    ExchangeResult result;
    try {
      result = send_upstream(request->requests, std::min(request->timeout, options.max_exchange), hold);
    } catch (const cni::CniError& e) {
      return refuse(fd, "the agent cannot send it: " + e.msg());
    } catch (const std::exception& e) {
      return refuse(fd, std::string("the agent cannot send it: ") + e.what());
    }
    if (!result.refused.empty()) return refuse(fd, result.refused);
    counters.answered();
    try {
      relay::write_frame(fd, result.payload, Clock::now() + kAnswerWrite);
    } catch (const http::TransportError& e) {
      util::log_verbose("agent relay: answer not delivered: ", e.msg());
    }
  }

  /// True when the exchange was answered from memory (options.answers), its answer written.
  bool answer_from_memory(int fd, const relay::RelayRequest& request, BudgetHold& hold) {
    if (!options.answers) return false;
    auto deadline = Clock::now() + std::min(request.timeout, options.max_exchange) / 2;
    std::optional<std::vector<http::HttpResponse>> answers =
        options.answers->answer(request.requests, request.pod_uid, deadline);
    if (!answers) return false;
    relay::RelayAnswer answer;
    for (std::size_t i = 0; i < answers->size(); ++i) {
      // The node scope learns from a pod answered from memory as from the API server's answer, so
      // the call's status PUT and events need no GET to prove the pod is of this node.
      if (i < request.requests.size()) scope->check_answer(request.requests[i], (*answers)[i]);
      answer.outcomes.emplace_back(std::move((*answers)[i]));
    }
    std::string payload = relay::encode_answer(answer);
    if (payload.size() > relay::kMaxAnswerFrame || !hold.grow(payload.size())) return false;
    counters.answered();
    try {
      relay::write_frame(fd, payload, Clock::now() + kAnswerWrite);
    } catch (const http::TransportError& e) {
      util::log_verbose("agent relay: answer not delivered: ", e.msg());
    }
    return true;
  }

  /// The node scope's verdict, then the requests through an upstream transport of the pool.
  ExchangeResult send_upstream(std::vector<http::HttpRequest>& requests, std::chrono::milliseconds timeout,
                               BudgetHold& hold) {
    auto deadline = Clock::now() + timeout;
    std::string auth = authorization();
    auto transport = take_transport();
    bool check_answers = false;
    std::string why = scope->authorize(requests, *transport, auth, timeout, check_answers);
    if (!why.empty()) {
      give_back(std::move(transport));
      return {"", why};
    }
    if (!auth.empty())
      for (http::HttpRequest& r : requests) r.headers.emplace_back("Authorization", auth);
    AnswerCheck check;
    if (check_answers || options.answers)
      check = [this, check_answers](const http::HttpRequest& r, const http::BatchOutcome& o) {
        if (options.answers) options.answers->upstream_answer(r, o);
        return check_answers ? scope->check_answer(r, o) : std::string();
      };
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    ExchangeResult result = run_exchange(*transport, requests, std::max(left, std::chrono::milliseconds(1)),
                                         options.wave, hold, check, &in_flight);
    give_back(std::move(transport));
    return result;
  }

  void stop() {
    if (stopping.exchange(true)) return;
    char byte = 1;
    [[maybe_unused]] ssize_t w = ::write(wake_write.get(), &byte, 1);
    {
      std::lock_guard lock(mu);
      for (Worker& worker : workers) ::shutdown(worker.fd.get(), SHUT_RDWR);
    }
    if (acceptor.joinable()) acceptor.join();
    struct stat st {};
    if (::lstat(options.socket_path.c_str(), &st) == 0 && st.st_ino == socket_stat.st_ino &&
        st.st_dev == socket_stat.st_dev)
      ::unlink(options.socket_path.c_str());
    listener.reset();
  }
};

RelayServer::RelayServer(RelayServerOptions options, TransportFactory upstream, Authorization authorization,
                         RelayCounters& counters)
    : impl_(std::make_unique<Impl>(std::move(options), std::move(upstream), std::move(authorization), counters)) {}

RelayServer::~RelayServer() { stop(); }

void RelayServer::stop() {
  if (impl_) impl_->stop();
}

}  // namespace manifold::relay
