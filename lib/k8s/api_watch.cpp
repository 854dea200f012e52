// The generic collection reads of the API client: one page of a LIST (with paging and an optional
// metadata-only Accept header), and one WATCH attempt of any collection. The node agent's
// MultiNetworkPolicy sync reads policies, namespaces and pods through them.
#include "k8s/api_client.h"

#include <functional>

#include "util/quote.h"

namespace manifold::k8s {

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
