// Implementation of the answers from memory: the target's path read segment by segment (a query
// string or any other path is not a lookup), each lookup checked in order, the pod's NADs claimed
// once every one of them was found.
#include "lookup/cache_answers.h"

#include "relay/relay_policy.h"

namespace manifold::lookup {
namespace {

constexpr std::string_view kNadGroup = "k8s.cni.cncf.io";
constexpr std::string_view kNadResource = "network-attachment-definitions";

}  // namespace

CacheAnswers::CacheAnswers(PodCache& pods, NadCache& nads, std::string base_path, std::chrono::milliseconds max_wait,
                           LookupCounters& counters)
    : pods_(pods), nads_(nads), base_path_(std::move(base_path)), max_wait_(max_wait), counters_(counters) {}

std::optional<CacheAnswers::Lookup> CacheAnswers::classify(const http::HttpRequest& request) const {
  std::string_view target = request.target;
  if (request.method != "GET" || target.substr(0, base_path_.size()) != base_path_) return std::nullopt;
  target.remove_prefix(base_path_.size());
  if (target.find('?') != std::string_view::npos) return std::nullopt;
  std::vector<std::string_view> seg = relay::path_segments(target);
  if (seg.size() == 6 && seg[0] == "api" && seg[1] == "v1" && seg[2] == "namespaces" && seg[4] == "pods")
    return Lookup{true, std::string(seg[3]), std::string(seg[5])};
  if (seg.size() == 7 && seg[0] == "apis" && seg[1] == kNadGroup && seg[2] == "v1" && seg[3] == "namespaces" &&
      seg[5] == kNadResource)
    return Lookup{false, std::string(seg[4]), std::string(seg[6])};
  return std::nullopt;
}

Verdict CacheAnswers::answer_one(const Lookup& lookup, const std::string& pod_uid, Clock::time_point deadline,
                                 std::string& body, bool& waited) {
  if (lookup.pod) {
    PodAnswer a = pods_.get(lookup.ns, lookup.name, pod_uid, deadline);
    waited = a.waited;
    body = std::move(a.body);
    return a.verdict;
  }
  BoundPod pod = pods_.bound(pod_uid, deadline, false);
  if (pod.verdict != Verdict::Hit) return pod.verdict;
  if (lookup.ns != pod.ns && !pods_.has_namespace(lookup.ns)) return Verdict::OutOfScope;
  NadAnswer a = nads_.get(lookup.ns, lookup.name, pod.bound_rv, deadline);
  waited = a.waited;
  body = std::move(a.body);
  return a.verdict;
}

std::optional<std::vector<http::HttpResponse>> CacheAnswers::answer(const std::vector<http::HttpRequest>& requests,
                                                                    const std::string& pod_uid,
                                                                    Clock::time_point deadline) {
  std::vector<Lookup> lookups;
  for (const http::HttpRequest& r : requests) {
    std::optional<Lookup> l = classify(r);
    if (!l) return std::nullopt;  // not an exchange of lookups (a status PUT, events, DRA reads)
    lookups.push_back(std::move(*l));
  }
  deadline = std::min(deadline, Clock::now() + max_wait_);
  std::vector<http::HttpResponse> out;
  std::vector<bool> waited(lookups.size(), false);
  bool any_nad = false;
  Verdict failed = Verdict::Hit;
  for (std::size_t i = 0; i < lookups.size() && failed == Verdict::Hit; ++i) {
    std::string body;
    bool w = false;
    failed = answer_one(lookups[i], pod_uid, deadline, body, w);
    waited[i] = w;
    any_nad = any_nad || !lookups[i].pod;
    out.push_back(http::HttpResponse{200, {{"Content-Type", "application/json"}}, std::move(body)});
  }
  // A pod's NADs are served from memory once: the claim fails when another call took it meanwhile.
  if (failed == Verdict::Hit && any_nad) failed = pods_.bound(pod_uid, Clock::now(), true).verdict;
  for (std::size_t i = 0; i < lookups.size(); ++i)
    counters_.lookup(lookups[i].pod ? "pod" : "nad", failed, failed == Verdict::Hit && waited[i]);
  if (failed != Verdict::Hit) return std::nullopt;
  return out;
}

void CacheAnswers::upstream_answer(const http::HttpRequest& request, const http::BatchOutcome& outcome) {
  const auto* response = std::get_if<http::HttpResponse>(&outcome);
  if (request.method != "PUT" || !response || response->status != 409) return;
  std::string_view target = request.target;
  if (target.substr(0, base_path_.size()) != base_path_) return;
  std::vector<std::string_view> seg = relay::path_segments(target.substr(base_path_.size()));
  if (seg.size() != 7 || seg[0] != "api" || seg[2] != "namespaces" || seg[4] != "pods" || seg[6] != "status") return;
  // A conflict is rare: the refused body is parsed whole, for its resourceVersion alone.
  Json body = Json::parse(request.body, nullptr, false);
  const Json* rv = body.is_discarded() ? nullptr : json_at(body, {"metadata", "resourceVersion"});
  if (rv && rv->is_string()) pods_.superseded(std::string(seg[3]), std::string(seg[5]), rv->get<std::string>());
}

}  // namespace manifold::lookup
