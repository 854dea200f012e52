// Kubernetes labels and label selectors as a policy uses them: `matchLabels` and `matchExpressions`
// (In, NotIn, Exists, DoesNotExist), read strictly with Kubernetes' own rules — keys are qualified
// names (an optional DNS-1123 subdomain prefix and '/', then 1-63 characters of [A-Za-z0-9_.-]
// beginning and ending alphanumeric), values are empty or that name syntax, In/NotIn need values
// and Exists/DoesNotExist take none — and matched as the API server matches them (every term must
// hold; NotIn and DoesNotExist hold for an absent key). An empty selector matches everything; a
// selector that is absent where the API says "null selects nothing" is the caller's to decide.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "util/json.h"

namespace manifold::policy {

/// An object's labels, by key.
using Labels = std::map<std::string, std::string, std::less<>>;

/// One term of `matchExpressions`.
struct LabelRequirement {
  /// The operator, spelled as the API spells it.
  enum class Op { In, NotIn, Exists, DoesNotExist };
  std::string key;                  ///< a qualified name
  Op op = Op::Exists;               ///< how `key` is tested
  std::vector<std::string> values;  ///< In/NotIn: at least one; Exists/DoesNotExist: none

  bool operator==(const LabelRequirement&) const = default;
};

/// A label selector: every term of both lists must hold.
struct LabelSelector {
  std::vector<std::pair<std::string, std::string>> match_labels;  ///< key = value, sorted by key
  std::vector<LabelRequirement> match_expressions;                ///< in the object's order

  /// True when `labels` satisfy every term.
  bool matches(const Labels& labels) const;
  /// True for the empty selector `{}`, which matches every object.
  bool selects_everything() const { return match_labels.empty() && match_expressions.empty(); }

  bool operator==(const LabelSelector&) const = default;
};

/// True for a Kubernetes qualified name (a label or annotation key).
bool is_qualified_name(std::string_view text);

/// True for a Kubernetes label value: empty, or 1-63 characters of [A-Za-z0-9_.-] beginning and
/// ending alphanumeric.
bool is_label_value(std::string_view text);

/// Reads the selector object at JSON path `where`. Throws PolicyError naming the offending field:
/// not an object, an unknown key, a bad label key or value, an unknown operator, values given to
/// Exists/DoesNotExist or missing for In/NotIn.
LabelSelector read_label_selector(const Json& selector, const std::string& where);

/// Reads `metadata.labels` of an object (null or absent: none). Throws PolicyError for anything but
/// an object of string values with valid keys and values.
Labels read_labels(const Json& labels, const std::string& where);

/// The selector in Kubernetes' string form for messages: "app=web,tier in (a,b),!debug", "<all>"
/// for the empty selector.
std::string describe(const LabelSelector& selector);

}  // namespace manifold::policy
