// RelayTransport implementation: a fresh non-blocking Unix connection per batch (connecting costs
// tens of microseconds, and a kept connection could be found closed by the agent after a frame was
// written, when nobody could tell whether it had been read), one frame out, one frame in.
#include "relay/relay_transport.h"

#include <sys/socket.h>
#include <sys/un.h>

#include <cerrno>
#include <cstring>
#include <strings.h>

#include "cni/error.h"
#include "relay/relay_protocol.h"
#include "util/log.h"
#include "util/unique_fd.h"

namespace manifold::relay {
namespace {

using Clock = std::chrono::steady_clock;

/// The agent's share of a batch's time: a little less than the caller's bound, so that its answer
/// (even one saying the upstream timed out) arrives before the caller stops waiting.
std::chrono::milliseconds agent_bound(std::chrono::milliseconds timeout) {
  auto margin = std::min(std::chrono::milliseconds(200), timeout / 10);
  return std::max(std::chrono::milliseconds(1), timeout - margin);
}

/// What is left of the time until `deadline` (at least 1 ms, so the direct path still gets a try).
std::chrono::milliseconds left(Clock::time_point deadline) {
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  return std::max(std::chrono::milliseconds(1), ms);
}

/// Connects to the agent; an invalid descriptor and the reason when it is not there.
util::UniqueFd connect_agent(const std::string& path, std::string& why) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.size() >= sizeof addr.sun_path) {
    why = "socket path too long";
    return {};
  }
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  util::UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!fd.valid() || ::connect(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    why = std::strerror(errno);  // EAGAIN: the agent's backlog is full
    return {};
  }
  return fd;
}

}  // namespace

RelayTransport::RelayTransport(std::string socket_path, std::string server, DirectFactory direct,
                               std::shared_ptr<AgentTrust> trust, std::string pod_uid)
    : socket_path_(std::move(socket_path)),
      server_(std::move(server)),
      open_direct_(std::move(direct)),
      trust_(trust ? std::move(trust) : std::make_shared<OwnerTrust>(0)),
      pod_uid_(std::move(pod_uid)) {}

RelayTransport::~RelayTransport() = default;

http::HttpTransport& RelayTransport::direct() {
  if (!direct_) direct_ = open_direct_();
  return *direct_;
}

std::vector<http::BatchOutcome> RelayTransport::fall_back(const std::string& why,
                                                          const std::vector<http::HttpRequest>& requests,
                                                          std::chrono::milliseconds timeout) {
  use_agent_ = false;
  util::log_verbose("node agent relay at ", socket_path_, " not used (", why, "): calling the API server directly");
  return direct().send_batch(requests, timeout);
}

std::vector<http::BatchOutcome> RelayTransport::send_batch(const std::vector<http::HttpRequest>& requests,
                                                           std::chrono::milliseconds timeout) {
  if (!use_agent_) return direct().send_batch(requests, timeout);
  auto deadline = Clock::now() + timeout;
  if (std::string why = trust_->check_socket(socket_path_); !why.empty())
    return fall_back("not trusted: " + why, requests, timeout);
  std::string why;
  util::UniqueFd fd = connect_agent(socket_path_, why);
  if (!fd.valid()) return fall_back(why, requests, timeout);
  if (why = trust_->check_peer(fd.get()); !why.empty()) return fall_back("not trusted: " + why, requests, timeout);
  relay::RelayRequest frame{server_, agent_bound(timeout), {}, pod_uid_};
  for (const http::HttpRequest& r : requests) {
    http::HttpRequest copy{r.method, r.target, {}, r.body};
    for (const auto& header : r.headers)
      if (::strcasecmp(header.first.c_str(), "Authorization") != 0) copy.headers.push_back(header);
    frame.requests.push_back(std::move(copy));
  }
  try {
    relay::write_frame(fd.get(), relay::encode_request(frame), deadline);
  } catch (const http::TransportError& e) {
    return fall_back("request not delivered: " + e.msg(), requests, left(deadline));
  }
  relay::RelayAnswer answer;
  std::string lost;
  try {
    answer = relay::decode_answer(relay::read_frame(fd.get(), relay::kMaxAnswerFrame, deadline), requests.size());
  } catch (const http::TransportError& e) {
    lost = e.msg();
  } catch (const cni::CniError& e) {
    lost = e.msg();
  }
  if (!answer.refused.empty()) return fall_back("refused: " + answer.refused, requests, left(deadline));
  if (!lost.empty()) {
    use_agent_ = false;  // retries go direct
    std::vector<http::BatchOutcome> out;
    for (std::size_t i = 0; i < requests.size(); ++i)
      out.emplace_back(
          http::TransportError(http::TransportError::Kind::Closed,
                               "the request was handed to the node agent, whose answer was lost: " + lost));
    return out;
  }
  if (++relayed_ == 1) util::log_verbose("Kubernetes API requests go through the node agent at ", socket_path_);
  for (http::BatchOutcome& o : answer.outcomes)
    if (auto* e = std::get_if<http::TransportError>(&o))
      o = http::TransportError(e->kind(), "(through the node agent) " + e->msg());
  return std::move(answer.outcomes);
}

http::HttpResponse RelayTransport::send(const http::HttpRequest& request, std::chrono::milliseconds timeout) {
  std::vector<http::BatchOutcome> outcomes = send_batch({request}, timeout);
  if (auto* e = std::get_if<http::TransportError>(&outcomes.front())) throw *e;
  return std::get<http::HttpResponse>(std::move(outcomes.front()));
}

http::StreamResult RelayTransport::stream(const http::HttpRequest& request, const http::StreamOptions& options,
                                          const std::function<bool(std::string_view)>& on_data) {
  return direct().stream(request, options, on_data);
}

}  // namespace manifold::relay
