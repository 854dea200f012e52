// Go-compatible renderings used by the network-status annotation: encoding/json's MarshalIndent
// output and net.IP.String()'s address forms, so manifold's annotation is byte-identical to Multus's.
#pragma once

#include <string>

#include "util/json.h"

namespace manifold::k8s {

/// Serialises `value` exactly as Go's json.MarshalIndent(v, "", "    ") would serialise the same
/// value (object keys in the given order): `<`, `>`, `&`, U+2028 and U+2029 escaped as \u003c…,
/// invalid UTF-8 as \ufffd, Go's float formatting, `{}` and `[]` for empty containers.
std::string go_marshal_indent(const Json& value);

/// Renders an IP address the way Go's net.IP.String() does (IPv4-mapped IPv6 as dotted quad,
/// IPv6 in RFC 5952 form). `text` may carry a "/prefix", which is dropped. Text that is not an IP
/// is returned without its prefix, unchanged.
std::string go_ip_string(const std::string& text);

}  // namespace manifold::k8s
