// Unit tests for label selectors: Kubernetes' key and value syntax, the operator/values rules,
// matching (NotIn and DoesNotExist hold for an absent key, every term must hold), and errors that
// name the field.
#include <catch2/catch.hpp>

#include "policy/label_selector.h"
#include "policy/policy_error.h"

using namespace manifold;
using namespace manifold::policy;

namespace {

LabelSelector selector(const char* text) { return read_label_selector(Json::parse(text), "spec.podSelector"); }

// The PolicyError text reading `text` throws ("" when it reads).
std::string error_of(const char* text) {
  try {
    (void)selector(text);
  } catch (const PolicyError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("policy: label keys and values follow Kubernetes' syntax", "[policy]") {
  const std::vector<std::string> good = {
      "app", "a", "app.kubernetes.io/name", "example.com/x_y.z-1", "A9", std::string(63, 'k')};
  for (const std::string& ok : good) CHECK(is_qualified_name(ok));
  const std::vector<std::string> bad = {"",
                                        "-app",
                                        "app-",
                                        "a/b/c",
                                        "/app",
                                        "Example.com/app",
                                        "app/",
                                        "a b",
                                        "ä",
                                        std::string(64, 'k'),
                                        std::string(254, 'd') + "/x"};
  for (const std::string& b : bad) {
    INFO(b);
    CHECK_FALSE(is_qualified_name(b));
  }
  CHECK(is_label_value(""));
  CHECK(is_label_value("v1.2_x-y"));
  CHECK_FALSE(is_label_value("-v"));
  CHECK_FALSE(is_label_value("a/b"));
  CHECK_FALSE(is_label_value(std::string(64, 'v')));
}

TEST_CASE("policy: matchLabels and matchExpressions all must hold", "[policy]") {
  const LabelSelector s = selector(R"({"matchLabels": {"tier": "web", "app": "shop"},
      "matchExpressions": [{"key": "env", "operator": "In", "values": ["prod", "staging"]},
                           {"key": "debug", "operator": "DoesNotExist"},
                           {"key": "zone", "operator": "NotIn", "values": ["a"]},
                           {"key": "team", "operator": "Exists"}]})");
  CHECK(s.match_labels == std::vector<std::pair<std::string, std::string>>{{"app", "shop"}, {"tier", "web"}});
  const Labels good{{"app", "shop"}, {"tier", "web"}, {"env", "prod"}, {"team", "x"}};
  CHECK(s.matches(good));
  Labels zone_b = good;
  zone_b["zone"] = "b";
  CHECK(s.matches(zone_b));  // NotIn with another value
  Labels zone_a = good;
  zone_a["zone"] = "a";
  CHECK_FALSE(s.matches(zone_a));
  Labels debug = good;
  debug["debug"] = "";
  CHECK_FALSE(s.matches(debug));  // DoesNotExist: even an empty value exists
  Labels no_team = good;
  no_team.erase("team");
  CHECK_FALSE(s.matches(no_team));
  Labels dev = good;
  dev["env"] = "dev";
  CHECK_FALSE(s.matches(dev));
  Labels no_env = good;
  no_env.erase("env");
  CHECK_FALSE(s.matches(no_env));  // In needs the key
  Labels other_tier = good;
  other_tier["tier"] = "db";
  CHECK_FALSE(s.matches(other_tier));
  CHECK(describe(s) == "app=shop,tier=web,env in (prod,staging),!debug,zone notin (a),team");
}

TEST_CASE("policy: the empty selector matches everything, null lists are empty", "[policy]") {
  for (const char* text :
       {"{}", R"({"matchLabels": null, "matchExpressions": null})", R"({"matchLabels": {}, "matchExpressions": []})"}) {
    const LabelSelector s = selector(text);
    CHECK(s.selects_everything());
    CHECK(s.matches({}));
    CHECK(s.matches({{"any", "thing"}}));
    CHECK(describe(s) == "<all>");
  }
}

TEST_CASE("policy: NotIn and DoesNotExist hold for an absent key", "[policy]") {
  CHECK(selector(R"({"matchExpressions": [{"key": "x", "operator": "NotIn", "values": ["1"]}]})").matches({}));
  CHECK(selector(R"({"matchExpressions": [{"key": "x", "operator": "DoesNotExist", "values": []}]})").matches({}));
  CHECK_FALSE(selector(R"({"matchExpressions": [{"key": "x", "operator": "Exists"}]})").matches({}));
}

TEST_CASE("policy: invalid selectors name the field and what was expected", "[policy]") {
  const std::vector<std::pair<const char*, const char*>> cases = {
      {"[]", "spec.podSelector: must be a label selector object"},
      {"null", "spec.podSelector: must be a label selector object"},
      {R"({"matchLabel": {}})", "spec.podSelector.matchLabel: is not a field of a label selector"},
      {R"({"matchLabels": []})", "spec.podSelector.matchLabels: must be an object"},
      {R"({"matchLabels": {"-bad": "x"}})", "spec.podSelector.matchLabels: \"-bad\" is not a valid label key"},
      {R"({"matchLabels": {"app": 5}})", "spec.podSelector.matchLabels.app: must be a label value (a string)"},
      {R"({"matchLabels": {"app": "a b"}})", "spec.podSelector.matchLabels.app: \"a b\" is not a valid label value"},
      {R"({"matchExpressions": {}})", "spec.podSelector.matchExpressions: must be a list"},
      {R"({"matchExpressions": ["x"]})", "spec.podSelector.matchExpressions[0]: must be an object"},
      {R"({"matchExpressions": [{"operator": "Exists"}]})", "spec.podSelector.matchExpressions[0].key: is required"},
      {R"({"matchExpressions": [{"key": "a"}]})", "spec.podSelector.matchExpressions[0].operator: is required"},
      {R"({"matchExpressions": [{"key": "a", "operator": "in", "values": ["x"]}]})",
       "spec.podSelector.matchExpressions[0].operator: must be one of In, NotIn, Exists, DoesNotExist (found \"in\")"},
      {R"({"matchExpressions": [{"key": "a", "operator": "In"}]})",
       "spec.podSelector.matchExpressions[0].values: must list at least one value when the operator is In"},
      {R"({"matchExpressions": [{"key": "a", "operator": "NotIn", "values": []}]})",
       "spec.podSelector.matchExpressions[0].values: must list at least one value when the operator is NotIn"},
      {R"({"matchExpressions": [{"key": "a", "operator": "Exists", "values": ["x"]}]})",
       "spec.podSelector.matchExpressions[0].values: must be empty when the operator is Exists"},
      {R"({"matchExpressions": [{"key": "a", "operator": "In", "values": ["ok", "-no"]}]})",
       "spec.podSelector.matchExpressions[0].values[1]: \"-no\" is not a valid label value"},
      {R"({"matchExpressions": [{"key": "a b", "operator": "Exists"}]})",
       "spec.podSelector.matchExpressions[0].key: \"a b\" is not a valid label key"},
      {R"({"matchExpressions": [{"key": "a", "operator": "Exists", "extra": 1}]})",
       "spec.podSelector.matchExpressions[0].extra: is not a field of a selector requirement"},
  };
  for (const auto& [text, expected] : cases) {
    INFO(text);
    CHECK_THAT(error_of(text), Catch::StartsWith(expected));
  }
}

TEST_CASE("policy: object labels are read strictly", "[policy]") {
  CHECK(read_labels(Json(nullptr), "metadata.labels").empty());
  CHECK(read_labels(Json::parse(R"({"a": "1", "b": ""})"), "metadata.labels") == Labels{{"a", "1"}, {"b", ""}});
  CHECK_THROWS_AS(read_labels(Json::parse(R"({"a": 1})"), "metadata.labels"), PolicyError);
  CHECK_THROWS_AS(read_labels(Json::parse(R"(["a"])"), "metadata.labels"), PolicyError);
}
