// Implementation of the relay's node rule: the scope read from the target's path segments (and an
// Event's involvedObject), what the API server says read with a SAX handler that keeps only the few
// strings wanted (an answer is never built into a document), and the remembered pods and namespaces
// in two maps under one mutex.
#include "relay/relay_scope.h"

#include <set>

#include "relay/relay_policy.h"
#include "util/json.h"
#include "util/quote.h"

namespace manifold::relay {
namespace {

constexpr std::size_t kMaxSaxDepth = 64;
constexpr std::size_t kMaxCaptured = 16;

/// Keeps the string values found at the wanted key paths ("a.b", "*" for any array element).
class PathStrings {
 public:
  explicit PathStrings(std::set<std::string> wanted) : wanted_(std::move(wanted)) {}
  std::map<std::string, std::vector<std::string>>& found() { return found_; }
  bool null() { return true; }
  bool boolean(bool) { return true; }
  bool number_integer(Json::number_integer_t) { return true; }
  bool number_unsigned(Json::number_unsigned_t) { return true; }
  bool number_float(Json::number_float_t, const std::string&) { return true; }
  bool binary(Json::binary_t&) { return true; }
  bool string(std::string& value) {
    std::string path;
    for (const std::string& key : path_) path += (path.empty() ? "" : ".") + key;
    if (wanted_.count(path) && found_[path].size() < kMaxCaptured) found_[path].push_back(value);
    return true;
  }
  bool start_object(std::size_t) { return open(""); }
  bool key(std::string& key) {
    path_.back() = key;
    return true;
  }
  bool end_object() { return close(); }
  bool start_array(std::size_t) { return open("*"); }
  bool end_array() { return close(); }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) { return false; }

 private:
  bool open(const char* key) {
    path_.emplace_back(key);
    return path_.size() <= kMaxSaxDepth;
  }
  bool close() {
    path_.pop_back();
    return true;
  }
  std::set<std::string> wanted_;
  std::vector<std::string> path_;
  std::map<std::string, std::vector<std::string>> found_;
};

/// The string values at each of the `wanted` paths in the JSON text `body` (none anywhere when it is
/// not valid JSON), found without building the document.
std::map<std::string, std::vector<std::string>> strings_at_paths(const std::string& body,
                                                                 std::set<std::string> wanted) {
  PathStrings sax(std::move(wanted));
  if (body.find('\0') != std::string::npos || !Json::sax_parse(body, &sax)) return {};
  return std::move(sax.found());
}

/// The values at `path` in the JSON text `body` (none when it is not valid JSON).
std::vector<std::string> strings_at(const std::string& body, const std::string& path) {
  return strings_at_paths(body, {path})[path];
}

/// The pod an Event in namespace `ns` is about, "" when it is not a Pod of that namespace.
std::string event_pod(const std::string& body, std::string_view ns) {
  auto found = strings_at_paths(body, {"involvedObject.kind", "involvedObject.namespace", "involvedObject.name"});
  const auto& kind = found["involvedObject.kind"];
  const auto& in = found["involvedObject.namespace"];
  const auto& name = found["involvedObject.name"];
  if (kind.size() != 1 || kind[0] != "Pod" || in.size() != 1 || in[0] != ns || name.size() != 1) return "";
  return name[0];
}

std::string pod_key(const std::string& ns, const std::string& name) { return ns + "/" + name; }

}  // namespace

std::string pod_node_name(const std::string& body) {
  std::vector<std::string> node = strings_at(body, "spec.nodeName");
  return node.size() == 1 ? node[0] : "";
}

std::optional<RequestScope> scope_of(const http::HttpRequest& request, std::string_view base_path,
                                     std::string_view node, std::string& why) {
  std::string_view target = std::string_view(request.target).substr(base_path.size());
  std::size_t q = target.find('?');
  std::vector<std::string_view> seg = path_segments(target.substr(0, q));
  if (seg.size() == 4 && seg[3] == "resourceslices") {
    std::string selector = "fieldSelector=" + util::percent_encode("spec.nodeName=" + std::string(node), "-._~");
    std::string_view query = q == std::string_view::npos ? "" : target.substr(q + 1);
    if (!node.empty() && (query == selector || query.substr(0, selector.size() + 3) == selector + "%2C"))
      return RequestScope{RequestScope::Kind::Node, "", ""};
    why = "a ResourceSlice list that does not select this node (" + std::string(node) + ")";
    return std::nullopt;
  }
  std::size_t i = seg.size() >= 3 && seg[2] == "namespaces" ? 2 : 3;  // api/v1/namespaces, apis/g/v/namespaces
  if (seg.size() < i + 3) {
    why = "a call of no namespace";
    return std::nullopt;
  }
  std::string ns(seg[i + 1]);
  if (seg[i + 2] == "pods" && seg.size() > i + 3)
    return RequestScope{RequestScope::Kind::Pod, ns, std::string(seg[i + 3])};
  if (seg[i + 2] != "events") return RequestScope{RequestScope::Kind::Namespace, ns, ""};
  std::string pod = event_pod(request.body, ns);
  if (pod.empty()) {
    why = "an Event that is not about a pod of namespace \"" + ns + "\"";
    return std::nullopt;
  }
  return RequestScope{RequestScope::Kind::Pod, ns, pod};
}

NodeScope::NodeScope(std::string node, std::string base_path, std::chrono::seconds ttl)
    : node_(std::move(node)), base_path_(std::move(base_path)), ttl_(ttl) {}

bool NodeScope::known(const std::map<std::string, Clock::time_point>& seen, const std::string& key) {
  std::lock_guard lock(mu_);
  auto it = seen.find(key);
  return it != seen.end() && it->second > Clock::now();
}

void NodeScope::remember(std::map<std::string, Clock::time_point>& seen, const std::string& key) {
  std::lock_guard lock(mu_);
  if (seen.size() >= kMaxRemembered) std::erase_if(seen, [](const auto& e) { return e.second <= Clock::now(); });
  if (seen.size() >= kMaxRemembered) seen.clear();
  seen[key] = Clock::now() + ttl_;
}

std::string NodeScope::authorize(const std::vector<http::HttpRequest>& requests, http::HttpTransport& upstream,
                                 const std::string& authorization, std::chrono::milliseconds timeout,
                                 bool& check_answers) {
  check_answers = false;
  if (node_.empty()) return "the agent does not know its node";
  std::vector<RequestScope> unknown;
  std::set<std::string> named;
  bool pod_gets_only = true;
  for (const http::HttpRequest& r : requests) {
    std::string why;
    std::optional<RequestScope> scope = scope_of(r, base_path_, node_, why);
    if (!scope) return why + ": the agent relays only for pods of its node";
    bool is_pod = scope->kind == RequestScope::Kind::Pod;
    pod_gets_only = pod_gets_only && is_pod && r.method == "GET";
    if (scope->kind == RequestScope::Kind::Node) continue;
    std::string key = is_pod ? pod_key(scope->ns, scope->name) : scope->ns;
    if (!named.insert((is_pod ? "pod " : "namespace ") + key).second) continue;
    if (named.size() > kMaxNamed)
      return "an exchange about more than " + std::to_string(kMaxNamed) + " pods and namespaces";
    if (!known(is_pod ? pods_ : namespaces_, key)) unknown.push_back(std::move(*scope));
  }
  if (unknown.empty()) return "";
  if (pod_gets_only) {
    check_answers = true;  // the GETs' own answers tell
    return "";
  }
  return verify(unknown, upstream, authorization, timeout);
}

std::string NodeScope::verify(const std::vector<RequestScope>& scopes, http::HttpTransport& upstream,
                              const std::string& authorization, std::chrono::milliseconds timeout) {
  std::vector<http::HttpRequest> asks;
  for (const RequestScope& s : scopes) {
    std::string path = base_path_ + "/api/v1/namespaces/" + s.ns + "/pods";
    if (s.kind == RequestScope::Kind::Pod)
      path += "/" + s.name;
    else
      path += "?fieldSelector=" + util::percent_encode("spec.nodeName=" + node_, "-._~") + "&limit=1";
    asks.push_back({"GET", path, {{"Accept", "application/json"}}, ""});
    if (!authorization.empty()) asks.back().headers.emplace_back("Authorization", authorization);
  }
  std::vector<http::BatchOutcome> answers = upstream.send_batch(asks, timeout);
  for (std::size_t i = 0; i < scopes.size() && i < answers.size(); ++i) {
    const RequestScope& s = scopes[i];
    const auto* response = std::get_if<http::HttpResponse>(&answers[i]);
    bool here = false;
    if (response && response->status == 200 && s.kind == RequestScope::Kind::Pod) {
      here = pod_node_name(response->body) == node_;
      if (here) remember(pods_, pod_key(s.ns, s.name));
    } else if (response && response->status == 200) {
      for (const std::string& n : strings_at(response->body, "items.*.spec.nodeName")) here = here || n == node_;
    }
    if (!here)
      return (s.kind == RequestScope::Kind::Pod ? "pod " + pod_key(s.ns, s.name) : "namespace " + s.ns + " (no pod)") +
             " is not known on node " + node_ + ": the agent relays only for pods of its node";
    remember(namespaces_, s.ns);
  }
  return answers.size() == scopes.size() ? "" : "the API server's answers are missing";
}

std::string NodeScope::check_answer(const http::HttpRequest& request, const http::BatchOutcome& outcome) {
  std::string why;
  std::optional<RequestScope> scope = scope_of(request, base_path_, node_, why);
  if (!scope || scope->kind != RequestScope::Kind::Pod) return why.empty() ? "not a pod GET" : why;
  std::string key = pod_key(scope->ns, scope->name);
  if (known(pods_, key)) return "";
  const auto* response = std::get_if<http::HttpResponse>(&outcome);
  if (!response || response->status != 200 || pod_node_name(response->body) != node_)
    return "pod " + key + " is not known on node " + node_ + ": the agent relays only for pods of its node";
  remember(pods_, key);
  remember(namespaces_, scope->ns);
  return "";
}

}  // namespace manifold::relay
