// Shared text helpers of the selection-annotation parsers (selection.cpp, selection_json.cpp,
// selection_syntax.cpp): the Multus message prefixes, the bounds, the error thrower, and the small
// lexical checks both annotation forms use (trimming, DNS-1123 names, Go-style IP parsing and quoting
// of untrusted text in messages). Internal to lib/k8s; callers outside use selection.h.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "k8s/selection.h"
#include "util/json.h"

namespace manifold::k8s::selection_syntax {

/// Prefix of every annotation error (Multus's function name).
inline constexpr std::string_view kAnnotationPrefix = "parsePodNetworkAnnotation: ";
/// Prefix of the comma form's object-name errors (Multus's).
inline constexpr std::string_view kObjectNamePrefix = "parsePodNetworkAnnotation: parsePodNetworkObjectName: ";
/// Prefix of the JSON form's errors (Multus's).
inline constexpr std::string_view kJsonPrefix =
    "parsePodNetworkAnnotation: failed to parse pod Network Attachment Selection Annotation JSON "
    "format: ";
/// Deepest JSON nesting accepted in the JSON form.
inline constexpr int kMaxJsonDepth = 32;
/// Longest namespace name (a DNS-1123 label).
inline constexpr std::size_t kMaxNamespaceLength = 63;
/// Longest object name (a DNS-1123 subdomain).
inline constexpr std::size_t kMaxNameLength = 253;
/// Longest piece of untrusted text repeated in a message.
inline constexpr std::size_t kMaxQuotedLength = 64;

/// Throws CniError(InvalidConfig) with `msg` made valid UTF-8.
[[noreturn]] void fail(const std::string& msg);
/// `s` without leading and trailing ASCII white space.
std::string_view trim(std::string_view s);
/// Shortens untrusted text quoted in an error message (never inside a UTF-8 sequence).
std::string shown(std::string_view s);
/// Quotes like Go's %q for the texts we quote (ASCII escapes; UTF-8 kept), shortened like shown().
std::string go_quote(std::string_view raw);
/// `^[a-z0-9]([-a-z0-9]*[a-z0-9])?$` (DNS-1123 label characters, no length bound).
bool matches_dns_label(std::string_view s);
/// A DNS-1123 subdomain: labels joined by '.', at most 253 characters.
bool is_dns_subdomain(std::string_view s);
/// The value of hex digit `c`, or -1.
int hex_value(char c);
/// Parses an IP like Go's net.ParseIP; returns the family (AF_INET/AF_INET6) or 0.
int ip_family(std::string_view text);
/// Decodes the JSON list form of the annotation (selection_json.cpp), with Multus's post-decode
/// checks and manifold's name checks; namespaces are not yet defaulted.
std::vector<SelectionElement> parse_json_form(std::string_view value);

}  // namespace manifold::k8s::selection_syntax
