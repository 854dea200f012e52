// What the node agent's relay will send to the API server on a CNI invocation's behalf: exactly the
// calls a CNI ADD, CHECK or DEL makes (GET a pod, GET a NetworkAttachmentDefinition, PUT a pod's
// status, POST an Event, the two read-only DRA calls), each with a namespace and name that are valid
// DNS-1123 names, under the agent's own API server path prefix. Everything else — another verb,
// another resource, a query string where none belongs, a header that is not Accept, Content-Type or
// User-Agent — is refused, so the relay can never be used to reach more of the API than the plugin's
// own ServiceAccount is meant for.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "http/http.h"

namespace manifold::relay {

/// Why the relay refuses to send `request` to the API server whose URL path prefix is `base_path`
/// ("" for none), or "" when it is one of the calls it serves.
std::string relay_refusal(const http::HttpRequest& request, std::string_view base_path);

/// The segments of an absolute URL path ("/api/v1/pods" → "api", "v1", "pods"), views into `path`.
std::vector<std::string_view> path_segments(std::string_view path);

/// `headers` reduced to those the relay passes on (Accept, Content-Type, User-Agent; any case).
http::HttpHeaders relay_headers(const http::HttpHeaders& headers);

}  // namespace manifold::relay
