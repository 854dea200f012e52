// The HTTP/1.1 wire format of an API request: the checks a request must pass before any byte of it
// is written (an HTTP-token method and header names, a printable origin-form target, no line break
// or NUL in a header value), and its serialisation into the single buffer the transport writes.
#pragma once

#include <string>
#include <string_view>

#include "http/http.h"

namespace manifold::http {

/// Throws CniError(Internal) naming the problem unless `request` can be written safely: the method
/// and header names are HTTP tokens, the target starts with '/' and holds only printable ASCII, and
/// no header value holds CR, LF or NUL.
void validate_request(const HttpRequest& request);

/// The HTTP/1.1 request bytes the transport sends: "METHOD target HTTP/1.1", Host (`authority`),
/// the request's headers in order, Content-Length when there is a body or the method is POST, PUT
/// or OPTIONS (replacing any the caller gave), an empty line, the body. The request must have
/// passed validation (no line breaks in the method, target or headers).
std::string serialize_request(const HttpRequest& request, std::string_view authority);

}  // namespace manifold::http
