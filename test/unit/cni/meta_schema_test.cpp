// Proof that the two readers of the meta-plugin config agree: parse_meta_config (first error, CNI
// error 7) and validate_meta_config (every problem) walk one schema. The corpus is generated from
// the schema itself (every key: a wrong type, each bound crossed, a valid value) plus hand-written
// cases for the keys with their own rules. The agreement rule, for every config of the corpus:
//  1. parse throws CniError 7 exactly when validate reports an error;
//  2. parse's message names the field of validate's first error: the error's path without "$."
//     appears in it, or, for an entry of a list, the list's quoted key (a CNI call names the list);
//     an error of the whole config ("$") has the same text after "invalid config: ".
// The offline-only rules (see meta_schema.h) are the one documented exception: for them validate
// reports an error and parse accepts.
#include <catch2/catch.hpp>

#include <optional>

#include "cni/config_validate.h"
#include "cni/error.h"
#include "cni/meta_schema.h"
#include "cni/netconf.h"

using namespace manifold;
using namespace manifold::cni;

namespace {

Json base_config() {
  return Json::parse(R"({"cniVersion":"1.0.0","name":"n","type":"manifold",
                         "delegates":[{"cniVersion":"1.0.0","name":"d","type":"bridge"}]})");
}

std::optional<std::string> parse_error(const Json& config) {
  try {
    (void)parse_meta_config(config);
  } catch (const CniError& e) {
    CHECK(e.code() == 7u);
    return e.msg();
  }
  return std::nullopt;
}

std::vector<Problem> validate_errors(const Json& config) {
  Problems all;
  validate_meta_config(config, "$", all);
  std::vector<Problem> errors;
  for (const auto& p : all)
    if (!p.warning) errors.push_back(p);
  return errors;
}

bool names_field(const std::string& message, const Problem& first) {
  if (first.path == "$") return message == "invalid config: " + first.message;
  const std::string rel = first.path.substr(2);
  return message.find(rel) != std::string::npos ||
         message.find("\"" + rel.substr(0, rel.find('[')) + "\"") != std::string::npos;
}

void check_agreement(const Json& config) {
  INFO("config: " << config.dump());
  const auto parsed = parse_error(config);
  const auto errors = validate_errors(config);
  INFO("parse: " << parsed.value_or("accepted")
                 << "; validate: " << (errors.empty() ? "no errors" : format_problem(errors.front())));
  REQUIRE(parsed.has_value() == !errors.empty());
  if (parsed) CHECK(names_field(*parsed, errors.front()));
}

// Broken values of a field of type `type` (the bounds for Int).
std::vector<Json> broken_values(const MetaField& f) {
  switch (f.type) {
    case MetaType::String:
      return {5, true, Json::array()};
    case MetaType::NonEmptyString:
      return {5, ""};
    case MetaType::Bool:
      return {"yes", 1};
    case MetaType::Int:
      return {"5", 1.5, f.lo - 1, static_cast<long long>(f.hi) + 1, 18446744073709551615ull};
    case MetaType::StringList:
      return {"x", Json::array({"a", 1}), Json::object()};
    case MetaType::Object:
      return {Json::array(), "x"};
    case MetaType::Section:
      return {"x", 3};
    case MetaType::Custom:
      break;
  }
  return {};
}

Json valid_value(const MetaField& f) {
  if (f.key == "cniVersion") return "1.0.0";  // a string, and one the offline rule accepts
  if (f.key == "logLevel") return "debug";
  switch (f.type) {
    case MetaType::String:
    case MetaType::NonEmptyString:
      return "x";
    case MetaType::Bool:
      return true;
    case MetaType::Int:
      return f.hi;
    case MetaType::StringList:
      return Json::array({"a"});
    case MetaType::Object:
    case MetaType::Section:
      return Json::object();
    case MetaType::Custom:
      break;
  }
  return nullptr;
}

// The hand-written corpus of the keys checked by their own rules.
std::vector<std::pair<std::string, Json>> custom_broken() {
  return {
      {"name", 5},
      {"name", ""},
      {"name", nullptr},
      {"type", 5},
      {"type", Json::array()},
      {"delegateEnv", "HTTPS_PROXY"},
      {"delegateEnv", Json::array({"OK", 1})},
      {"delegateEnv", Json::array({"BAD NAME"})},
      {"delegateEnv", Json::array({"*", 2})},
      {"capabilities", Json::array()},
      {"capabilities", "x"},
      {"sourceRouting", "on"},
      {"mesh", Json::array()},
      {"delegates", Json::object()},
      {"delegates", Json::array()},
      {"delegates", Json::array({5})},
      {"delegates", Json::parse(R"([{"name":"x"}])")},
      {"delegates", Json::parse(R"([{"type":""}])")},
      {"delegates", Json::parse(R"([{"type":"a","name":5}])")},
      {"delegates", Json::parse(R"([{"type":"a","cniVersion":1}])")},
      {"delegates", Json::parse(R"([{"type":"a"},{"plugins":[]}])")},
      {"delegates", Json::parse(R"([{"plugins":[{"type":"a"},{"x":1}]}])")},
      {"delegates", Json::parse(R"([{"plugins":[{"type":"a"},7]}])")},
  };
}

}  // namespace

TEST_CASE("meta schema: the base config is valid for both readers", "[cni]") {
  check_agreement(base_config());
  CHECK(validate_errors(base_config()).empty());
}

TEST_CASE("meta schema: every key with a wrong type or out of bounds, and valid", "[cni]") {
  std::size_t cases = 0;
  for (const MetaField& f : meta_fields()) {
    if (f.offline) continue;
    for (const Json& bad : broken_values(f)) {
      Json c = base_config();
      c[std::string(f.key)] = bad;
      check_agreement(c);
      ++cases;
    }
    for (const MetaField& sub : f.fields) {
      for (const Json& bad : broken_values(sub)) {
        Json c = base_config();
        c[std::string(f.key)] = Json{{std::string(sub.key), bad}};
        check_agreement(c);
        ++cases;
      }
      Json c = base_config();
      c[std::string(f.key)] = Json{{std::string(sub.key), valid_value(sub)}};
      check_agreement(c);
    }
    if (f.type != MetaType::Custom) {
      Json c = base_config();
      c[std::string(f.key)] = valid_value(f);
      check_agreement(c);
    }
  }
  for (const auto& [key, bad] : custom_broken()) {
    Json c = base_config();
    c[key] = bad;
    check_agreement(c);
    ++cases;
  }
  CHECK(cases > 100);
}

TEST_CASE("meta schema: with many broken keys parse names validate's first error", "[cni]") {
  Json c = base_config();
  for (const MetaField& f : meta_fields())
    if (!f.offline && f.type != MetaType::Custom) c[std::string(f.key)] = broken_values(f).front();
  check_agreement(c);
  CHECK(validate_errors(c).front().path == "$.cniVersion");
  c.erase("cniVersion");
  c["name"] = 5;
  check_agreement(c);
  CHECK(validate_errors(c).front().path == "$.name");
  Json none = Json::parse(R"({"name":"n","type":"manifold"})");
  check_agreement(none);
  CHECK(*parse_error(none) == "invalid config: at least one delegate or clusterNetwork must be specified");
}

TEST_CASE("meta schema: the offline-only rules are validate's alone", "[cni]") {
  const std::vector<std::pair<std::string, Json>> offline = {
      {"cniVersion", "9.9.9"},
      {"type", ""},
      {"logLevel", "loud"},
      {"capabilities", Json::parse(R"({"portMappings":"yes"})")},
      {"delegates", Json::parse(R"([{"type":"../evil"}])")},
      {"delegates", Json::parse(R"([{"cniVersion":"9","type":"bridge"}])")},
      {"prevResult", 5},
      {"args", "x"},
  };
  for (const auto& [key, value] : offline) {
    Json c = base_config();
    c[key] = value;
    INFO(c.dump());
    CHECK_FALSE(parse_error(c));
    CHECK_FALSE(validate_errors(c).empty());
  }
  for (const MetaField& f : meta_fields()) CHECK(f.offline == (f.key == "prevResult" || f.key == "args"));
}

TEST_CASE("meta schema: the keys validate knows are the keys parse reads", "[cni]") {
  // A key outside the schema is ignored by parse and only a near-miss warning for validate.
  Json c = base_config();
  c["DelegateTimeout"] = "x";
  check_agreement(c);
  Problems all;
  validate_meta_config(c, "$", all);
  REQUIRE(all.size() == 1);
  CHECK(
      format_problem(all[0]) ==
      "warning: $.DelegateTimeout: unknown key, ignored; did you mean \"delegateTimeout\"? (keys are case-sensitive)");
  // Keys manifold added after Multus are known to both.
  c = base_config();
  c["apiTimeouts"] = Json::parse(R"({"attempts":0,"retries":3})");
  check_agreement(c);
  all.clear();
  validate_meta_config(c, "$", all);
  CHECK(format_problem(all.at(0)) == "$.apiTimeouts.attempts: must be between 1 and 100");
  CHECK(format_problem(all.at(1)) ==
        "warning: $.apiTimeouts.retries: unknown apiTimeouts key (known: request, call, total, attempts)");
  CHECK(*parse_error(c) == "invalid config: key \"apiTimeouts.attempts\" must be between 1 and 100");
}
