// Label syntax, selector reading and matching, with Kubernetes' validation rules restated.
#include "policy/label_selector.h"

#include <algorithm>

#include "k8s/api_status.h"
#include "policy/policy_error.h"
#include "util/quote.h"

namespace manifold::policy {

namespace {

constexpr std::size_t kMaxNameLength = 63;
constexpr std::size_t kMaxValues = 1000;  // a bound on hostile input; no real selector comes close

bool is_alnum(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'); }

// ([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9], at most 63 characters.
bool is_name_part(std::string_view text) {
  if (text.empty() || text.size() > kMaxNameLength) return false;
  if (!is_alnum(text.front()) || !is_alnum(text.back())) return false;
  return std::all_of(text.begin(), text.end(), [](char c) { return is_alnum(c) || c == '-' || c == '_' || c == '.'; });
}

const char* op_name(LabelRequirement::Op op) {
  switch (op) {
    case LabelRequirement::Op::In:
      return "In";
    case LabelRequirement::Op::NotIn:
      return "NotIn";
    case LabelRequirement::Op::Exists:
      return "Exists";
    case LabelRequirement::Op::DoesNotExist:
      return "DoesNotExist";
  }
  return "";
}

void require_key(const Json& key, const std::string& where) {
  if (!key.is_string()) throw PolicyError(where, "must be a label key (a string)");
  if (!is_qualified_name(key.get_ref<const std::string&>()))
    throw PolicyError(where, util::quote_bytes(key.get_ref<const std::string&>()) +
                                 " is not a valid label key (an optional DNS subdomain prefix and '/', then 1-63 "
                                 "characters of letters, digits, '-', '_', '.', beginning and ending with a letter or "
                                 "digit)");
}

void require_value(const Json& value, const std::string& where) {
  if (!value.is_string()) throw PolicyError(where, "must be a label value (a string)");
  if (!is_label_value(value.get_ref<const std::string&>()))
    throw PolicyError(where, util::quote_bytes(value.get_ref<const std::string&>()) +
                                 " is not a valid label value (empty, or up to 63 characters of letters, digits, '-', "
                                 "'_', '.', beginning and ending with a letter or digit)");
}

LabelRequirement::Op read_operator(const Json& op, const std::string& where) {
  if (op.is_string()) {
    const std::string& text = op.get_ref<const std::string&>();
    for (auto candidate : {LabelRequirement::Op::In, LabelRequirement::Op::NotIn, LabelRequirement::Op::Exists,
                           LabelRequirement::Op::DoesNotExist})
      if (text == op_name(candidate)) return candidate;
  }
  throw PolicyError(where, "must be one of In, NotIn, Exists, DoesNotExist (found " + util::printable_json(op) + ")");
}

LabelRequirement read_requirement(const Json& term, const std::string& where) {
  if (!term.is_object()) throw PolicyError(where, "must be an object with key, operator and values");
  for (const auto& [name, value] : term.items())
    if (name != "key" && name != "operator" && name != "values")
      throw PolicyError(path_key(where, name), "is not a field of a selector requirement (key, operator, values)");
  LabelRequirement req;
  const auto key = term.find("key");
  if (key == term.end()) throw PolicyError(path_key(where, "key"), "is required");
  require_key(*key, path_key(where, "key"));
  req.key = key->get<std::string>();
  const auto op = term.find("operator");
  if (op == term.end()) throw PolicyError(path_key(where, "operator"), "is required");
  req.op = read_operator(*op, path_key(where, "operator"));
  const std::string values_at = path_key(where, "values");
  const auto values = term.find("values");
  if (values != term.end() && !values->is_null()) {
    if (!values->is_array() || values->size() > kMaxValues)
      throw PolicyError(values_at, "must be a list of label values");
    for (std::size_t i = 0; i < values->size(); ++i) {
      require_value((*values)[i], path_index(values_at, i));
      req.values.push_back((*values)[i].get<std::string>());
    }
  }
  const bool takes_values = req.op == LabelRequirement::Op::In || req.op == LabelRequirement::Op::NotIn;
  if (takes_values && req.values.empty())
    throw PolicyError(values_at, std::string("must list at least one value when the operator is ") + op_name(req.op));
  if (!takes_values && !req.values.empty())
    throw PolicyError(values_at, std::string("must be empty when the operator is ") + op_name(req.op));
  return req;
}

}  // namespace

bool is_qualified_name(std::string_view text) {
  const auto slash = text.find('/');
  if (slash == std::string_view::npos) return is_name_part(text);
  const std::string_view prefix = text.substr(0, slash);
  return k8s::is_dns1123_subdomain(prefix) && is_name_part(text.substr(slash + 1));
}

bool is_label_value(std::string_view text) { return text.empty() || is_name_part(text); }

bool LabelSelector::matches(const Labels& labels) const {
  for (const auto& [key, value] : match_labels) {
    const auto it = labels.find(key);
    if (it == labels.end() || it->second != value) return false;
  }
  for (const LabelRequirement& req : match_expressions) {
    const auto it = labels.find(req.key);
    const bool present = it != labels.end();
    const bool listed = present && std::find(req.values.begin(), req.values.end(), it->second) != req.values.end();
    switch (req.op) {
      case LabelRequirement::Op::In:
        if (!listed) return false;
        break;
      case LabelRequirement::Op::NotIn:
        if (listed) return false;
        break;
      case LabelRequirement::Op::Exists:
        if (!present) return false;
        break;
      case LabelRequirement::Op::DoesNotExist:
        if (present) return false;
        break;
    }
  }
  return true;
}

LabelSelector read_label_selector(const Json& selector, const std::string& where) {
  if (!selector.is_object())
    throw PolicyError(
        where, "must be a label selector object ({} selects everything), found " + util::printable_json(selector));
  LabelSelector out;
  for (const auto& [name, value] : selector.items()) {
    if (name != "matchLabels" && name != "matchExpressions")
      throw PolicyError(path_key(where, name), "is not a field of a label selector (matchLabels, matchExpressions)");
  }
  const std::string labels_at = path_key(where, "matchLabels");
  if (const auto labels = selector.find("matchLabels"); labels != selector.end() && !labels->is_null()) {
    if (!labels->is_object()) throw PolicyError(labels_at, "must be an object of label keys and values");
    for (const auto& [key, value] : labels->items()) {
      require_key(Json(key), labels_at);
      require_value(value, path_key(labels_at, key));
      out.match_labels.emplace_back(key, value.get<std::string>());
    }
    std::sort(out.match_labels.begin(), out.match_labels.end());
  }
  const std::string exprs_at = path_key(where, "matchExpressions");
  if (const auto exprs = selector.find("matchExpressions"); exprs != selector.end() && !exprs->is_null()) {
    if (!exprs->is_array() || exprs->size() > kMaxValues) throw PolicyError(exprs_at, "must be a list of requirements");
    for (std::size_t i = 0; i < exprs->size(); ++i)
      out.match_expressions.push_back(read_requirement((*exprs)[i], path_index(exprs_at, i)));
  }
  return out;
}

Labels read_labels(const Json& labels, const std::string& where) {
  Labels out;
  if (labels.is_null()) return out;
  if (!labels.is_object()) throw PolicyError(where, "must be an object of label keys and values");
  for (const auto& [key, value] : labels.items()) {
    require_key(Json(key), where);
    require_value(value, path_key(where, key));
    out.emplace(key, value.get<std::string>());
  }
  return out;
}

std::string describe(const LabelSelector& selector) {
  if (selector.selects_everything()) return "<all>";
  std::string text;
  auto add = [&](const std::string& term) { text += (text.empty() ? "" : ",") + term; };
  for (const auto& [key, value] : selector.match_labels) add(key + "=" + value);
  for (const LabelRequirement& req : selector.match_expressions) {
    std::string values;
    for (const std::string& v : req.values) values += (values.empty() ? "" : ",") + v;
    switch (req.op) {
      case LabelRequirement::Op::In:
        add(req.key + " in (" + values + ")");
        break;
      case LabelRequirement::Op::NotIn:
        add(req.key + " notin (" + values + ")");
        break;
      case LabelRequirement::Op::Exists:
        add(req.key);
        break;
      case LabelRequirement::Op::DoesNotExist:
        add("!" + req.key);
        break;
    }
  }
  return text;
}

}  // namespace manifold::policy
