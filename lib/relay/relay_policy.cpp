// Implementation of the relay's allowlist: the target split into path segments and matched against
// the few shapes a CNI invocation sends, every name checked as DNS-1123.
#include "relay/relay_policy.h"

#include <array>
#include <cctype>
#include <strings.h>
#include <vector>

#include "k8s/selection_syntax.h"

namespace manifold::relay {
namespace {

/// One call the relay serves: its method and its path, "{ns}" and "{name}" standing for names.
struct Shape {
  std::string_view method;
  std::string_view path;
  bool query;  ///< a fieldSelector query is expected (and required)
};

constexpr std::array<Shape, 6> kShapes{{
    {"GET", "/api/v1/namespaces/{ns}/pods/{name}", false},
    {"PUT", "/api/v1/namespaces/{ns}/pods/{name}/status", false},
    {"POST", "/api/v1/namespaces/{ns}/events", false},
    {"GET", "/apis/k8s.cni.cncf.io/v1/namespaces/{ns}/network-attachment-definitions/{name}", false},
    {"GET", "/apis/resource.k8s.io/v1/namespaces/{ns}/resourceclaims/{name}", false},
    {"GET", "/apis/resource.k8s.io/v1/resourceslices", true},
}};

bool matches(const Shape& shape, std::string_view path) {
  auto want = path_segments(shape.path);
  auto got = path_segments(path);
  if (want.size() != got.size()) return false;
  for (std::size_t i = 0; i < want.size(); ++i) {
    if (want[i] == "{ns}") {
      if (got[i].size() > k8s::selection_syntax::kMaxNamespaceLength ||
          !k8s::selection_syntax::matches_dns_label(got[i]))
        return false;
    } else if (want[i] == "{name}") {
      if (!k8s::selection_syntax::is_dns_subdomain(got[i])) return false;
    } else if (want[i] != got[i]) {
      return false;
    }
  }
  return true;
}

/// A fieldSelector query of the DRA slice list: one parameter, URL-safe characters only.
bool is_field_selector(std::string_view query) {
  constexpr std::string_view kKey = "fieldSelector=";
  if (query.substr(0, kKey.size()) != kKey || query.size() == kKey.size() || query.size() > 1024) return false;
  for (char c : query.substr(kKey.size()))
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == '_' || c == '%' || c == ','))
      return false;
  return true;
}

}  // namespace

std::vector<std::string_view> path_segments(std::string_view path) {
  std::vector<std::string_view> out;
  std::size_t start = 1;
  while (start <= path.size()) {
    std::size_t slash = path.find('/', start);
    if (slash == std::string_view::npos) slash = path.size();
    out.push_back(path.substr(start, slash - start));
    start = slash + 1;
  }
  return out;
}

std::string relay_refusal(const http::HttpRequest& request, std::string_view base_path) {
  std::string_view target = request.target;
  std::string shown = request.method.substr(0, 16) + " " + std::string(target.substr(0, 300));
  if (target.substr(0, base_path.size()) != base_path) return shown + " is outside the API server's path prefix";
  target.remove_prefix(base_path.size());
  std::size_t q = target.find('?');
  std::string_view path = target.substr(0, q);
  std::string_view query = q == std::string_view::npos ? std::string_view{} : target.substr(q + 1);
  for (const Shape& shape : kShapes) {
    if (request.method != shape.method || !matches(shape, path)) continue;
    if (shape.query ? is_field_selector(query) : q == std::string_view::npos) return "";
  }
  return shown + " is not a call the agent relays (only the CNI plugin's own API calls are)";
}

http::HttpHeaders relay_headers(const http::HttpHeaders& headers) {
  http::HttpHeaders out;
  for (const auto& [name, value] : headers)
    for (const char* kept : {"Accept", "Content-Type", "User-Agent"})
      if (::strcasecmp(name.c_str(), kept) == 0) out.emplace_back(kept, value);
  return out;
}

}  // namespace manifold::relay
