// The one error of reading a MultiNetworkPolicy and what it refers to (its label selectors, its
// `policy-for` annotation): where in the object the problem is, as a JSON path
// ("spec.ingress[0].from[1].ipBlock.except[0]"), and what was expected there, in words a user can
// act on. It never carries a library's exception text.
#pragma once

#include <exception>
#include <string>

namespace manifold::policy {

/// A part of a policy object that does not validate.
class PolicyError : public std::exception {
 public:
  /// `where` is the JSON path of the offending field, `message` says what was expected.
  PolicyError(std::string where, std::string message);
  /// The JSON path of the offending field ("spec.podSelector.matchLabels").
  const std::string& where() const noexcept { return where_; }
  /// What was expected there.
  const std::string& message() const noexcept { return message_; }
  /// "<where>: <message>".
  const char* what() const noexcept override { return text_.c_str(); }

 private:
  std::string where_;
  std::string message_;
  std::string text_;
};

/// "<base>.<key>", or `key` when `base` is empty.
std::string path_key(const std::string& base, const std::string& key);

/// "<base>[<index>]".
std::string path_index(const std::string& base, std::size_t index);

}  // namespace manifold::policy
