// How ApiClient runs its calls: every call, alone or with others, goes through run(), which sends the
// calls still pending as one batch (HttpTransport::send_batch pipelines it, so a batch costs one
// round trip), judges each answer (success, final error, or a failure worth another attempt), and
// sends only the retryable ones again after the RetryBudget's backoff or the server's Retry-After,
// within the one budget of the whole batch. Calls marked not to be retried (Events) get one attempt.
// A successful answer is decoded into a JSON object of the expected kind, with bounded nesting.
// Also here, on the same machinery: one page of a LIST of any collection (limit/continue, an
// optional metadata-only Accept header) and one WATCH attempt of any collection.
#include <algorithm>
#include <functional>
#include <iomanip>
#include <sstream>

#include "k8s/api_client.h"
#include "util/log.h"
#include "util/quote.h"

namespace manifold::k8s {

using std::chrono::milliseconds;

namespace {

/// Deepest nesting accepted in an answer (pods, managedFields included, nest about 20 levels).
constexpr int kMaxAnswerDepth = 256;

std::string format_seconds(milliseconds d) {
  std::ostringstream os;
  os << std::fixed << std::setprecision(1) << static_cast<double>(d.count()) / 1000.0 << "s";
  return os.str();
}

}  // namespace

Json ApiOutcome::take() && {
  if (error) std::rethrow_exception(error);
  return std::move(object);
}

std::string ApiClient::Call::describe() const {
  std::string what = resource + (name.empty() ? std::string() : " \"" + name + "\"");
  return what + (ns.empty() ? " in every namespace" : " in namespace \"" + ns + "\"");
}

/// The last retryable failure of a call: an HTTP status (with the Status's reason and message) or,
/// for status 0, a transport failure.
struct ApiClient::LastFailure {
  int status = 0;
  std::string reason, message, transport_error;
};

Json ApiClient::decode(const http::HttpResponse& response, const Call& call) const {
  const std::string what = "Kubernetes API answer to " + call.method + " " + call.describe();
  Json j;
  try {
    // Bounded nesting: the pod is printed again for PUT, and printing recurses.
    j = Json::parse(response.body, [&what](int depth, Json::parse_event_t, Json&) {
      if (depth > kMaxAnswerDepth)
        throw cni::CniError(cni::ErrorCode::Decoding,
                            what + " is nested deeper than " + std::to_string(kMaxAnswerDepth) + " levels");
      return true;
    });
  } catch (const Json::parse_error& e) {
    throw cni::CniError(cni::ErrorCode::Decoding,
                        what + " is not valid JSON (error at byte " + std::to_string(e.byte) + ")");
  } catch (const Json::exception&) {  // out_of_range: a number beyond the range of a double
    throw cni::CniError(cni::ErrorCode::Decoding, what + " is not valid JSON (a number is out of range)");
  }
  if (!j.is_object()) throw cni::CniError(cni::ErrorCode::Decoding, what + " is not a JSON object");
  if (auto k = j.find("kind"); k != j.end() && k->is_string() && k->get<std::string>() != call.kind)
    throw cni::CniError(cni::ErrorCode::Decoding, what + " has kind " +
                                                      util::quote_bytes(sanitize(k->get<std::string>()), 80) +
                                                      ", expected " + std::string(call.kind));
  return j;
}

ApiError ApiClient::unanswered(const Call& call, const LastFailure& last, const http::RetryBudget& budget) const {
  std::string over = " after " + std::to_string(budget.attempts()) + " attempt" + (budget.attempts() == 1 ? "" : "s") +
                     " over " + format_seconds(budget.elapsed());
  std::string why = " (deadline of " + format_seconds(policy_.total_deadline) + " reached)";
  if (!call.retry)
    why = " (sent once, never retried)";
  else if (budget.attempts_exhausted())
    why = " (limit of " + std::to_string(policy_.max_attempts) + " attempts reached)";
  std::string text;
  if (last.status != 0) {
    text = "Kubernetes API still answering " + std::to_string(last.status) +
           (last.reason.empty() ? "" : " " + last.reason) + " to " + call.method + " " + call.describe() + over + why +
           (last.message.empty() ? "" : ": " + last.message);
  } else {
    text = "Kubernetes API unreachable for " + call.method + " " + call.describe() + over + why +
           (last.transport_error.empty() ? "" : ": " + last.transport_error);
  }
  return ApiError(last.status, last.reason, last.message, std::move(text));
}

bool ApiClient::judge(const Call& call, const http::BatchOutcome& answer, int attempt, ApiOutcome& out,
                      LastFailure& last, std::optional<milliseconds>& retry_after) const {
  if (const auto* response = std::get_if<http::HttpResponse>(&answer)) {
    if (response->status >= 200 && response->status < 300) {
      try {
        if (!call.kind.empty()) out.object = decode(*response, call);
      } catch (const cni::CniError& e) {
        out.error = std::make_exception_ptr(e);
      }
      return false;
    }
    ApiError error = error_for_response(call, *response);
    if (!http::is_retryable_status(response->status)) {
      out.error = std::make_exception_ptr(std::move(error));
      return false;
    }
    last = {response->status, error.reason(), error.api_message(), {}};
    if (auto after = http::parse_retry_after(response->header("Retry-After")))
      retry_after = std::max(retry_after.value_or(milliseconds(0)), *after);
    util::log_verbose("Kubernetes API ", call.method, " ", call.describe(), ": attempt ", attempt, " answered HTTP ",
                      response->status);
    return true;
  }
  const auto& e = std::get<http::TransportError>(answer);
  if (!e.retryable()) {
    out.error = std::make_exception_ptr(
        ApiError(0, "", "", "Kubernetes API " + call.method + " " + call.describe() + " failed: " + e.msg()));
    return false;
  }
  last = {0, {}, {}, e.msg()};
  util::log_verbose("Kubernetes API ", call.method, " ", call.describe(), ": attempt ", attempt, " failed: ", e.msg());
  return true;
}

std::vector<ApiOutcome> ApiClient::run(std::vector<Call> calls, const std::string& accept) {
  std::vector<http::HttpRequest> requests;
  for (auto& call : calls) {
    requests.push_back({call.method, base_path_ + call.path, {}, std::move(call.body)});
    add_headers(requests.back(), accept);
  }
  std::vector<ApiOutcome> out(calls.size());
  std::vector<LastFailure> last(calls.size());
  std::vector<std::size_t> pending(calls.size());
  for (std::size_t i = 0; i < pending.size(); ++i) pending[i] = i;
  http::RetryBudget budget(policy_, clock_, jitter_);
  while (!pending.empty()) {
    std::optional<milliseconds> timeout = budget.begin_attempt();
    if (!timeout) break;
    std::vector<http::HttpRequest> batch;
    for (std::size_t i : pending) batch.push_back(requests[i]);
    requests_ += static_cast<int>(batch.size());
    std::vector<http::BatchOutcome> answers = transport_.send_batch(batch, *timeout);
    if (answers.size() != batch.size())
      throw cni::CniError(cni::ErrorCode::Internal, "the HTTP transport answered " + std::to_string(answers.size()) +
                                                        " of a batch of " + std::to_string(batch.size()) + " requests");
    std::vector<std::size_t> again;
    std::optional<milliseconds> retry_after;
    for (std::size_t k = 0; k < pending.size(); ++k) {
      const std::size_t i = pending[k];
      if (!judge(calls[i], answers.at(k), budget.attempts(), out[i], last[i], retry_after)) continue;
      if (calls[i].retry)
        again.push_back(i);
      else
        out[i].error = std::make_exception_ptr(unanswered(calls[i], last[i], budget));
    }
    pending = std::move(again);
    if (pending.empty()) break;
    std::optional<milliseconds> wait = budget.wait_before_retry(retry_after);
    if (!wait) break;
    sleeper_.sleep_for(*wait);
  }
  for (std::size_t i : pending) out[i].error = std::make_exception_ptr(unanswered(calls[i], last[i], budget));
  return out;
}

// The generic collection reads: one LIST page (paging, an optional metadata-only Accept header)
// and one WATCH attempt of any collection.
namespace {

std::string watch_query_value(std::string_view value) { return util::percent_encode(value, "-._~"); }

std::string collection_path(const std::string& collection, const std::string& query, const std::string& more) {
  std::string path = collection + "?" + query;
  if (!query.empty() && !more.empty()) path += "&";
  return path + more;
}

}  // namespace

Json ApiClient::list_page(const std::string& resource, const std::string& collection, const std::string& query,
                          std::string_view list_kind, const std::string& accept, int limit,
                          const std::string& continue_token) {
  std::string paging;
  if (limit > 0) paging = "limit=" + std::to_string(limit);
  if (!continue_token.empty())
    paging += (paging.empty() ? "" : "&") + ("continue=" + watch_query_value(continue_token));
  Call t{resource, "", "", collection_path(collection, query, paging), "GET", {}, list_kind, true};
  std::vector<Call> calls{t};
  Json list = std::move(run(std::move(calls), accept).front()).take();
  if (!list.contains("items") || !list["items"].is_array())
    throw cni::CniError(cni::ErrorCode::Decoding,
                        "Kubernetes API answer to GET " + t.describe() + " has no items list");
  return list;
}

http::StreamEnd ApiClient::watch_collection(const std::string& resource, const std::string& collection,
                                            const std::string& query, const std::string& resource_version,
                                            int timeout_seconds, const std::string& accept,
                                            const http::StreamOptions& options,
                                            const std::function<bool(std::string_view)>& on_data) {
  std::string more = "watch=1&allowWatchBookmarks=true&timeoutSeconds=" + std::to_string(timeout_seconds);
  if (!resource_version.empty()) more += "&resourceVersion=" + watch_query_value(resource_version);
  const std::string path = collection_path(collection, query, more);
  Call t{resource, "", "", path, "WATCH", {}, {}, false};
  http::HttpRequest request{"GET", base_path_ + path, {}, {}};
  add_headers(request, accept);
  ++requests_;
  http::StreamResult result;
  try {
    result = transport_.stream(request, options, on_data);
  } catch (const http::TransportError& e) {
    throw ApiError(0, "", "", "Kubernetes API WATCH " + t.describe() + " failed: " + e.msg());
  }
  if (result.head.status < 200 || result.head.status >= 300) throw error_for_response(t, result.head);
  return result.end;
}

}  // namespace manifold::k8s
