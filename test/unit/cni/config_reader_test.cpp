// Unit tests for the config reader: the throwing and the collecting report, null as "not set",
// paths and names of nested fields, unknown keys, and the section-worded typed reads.
#include <catch2/catch.hpp>

#include <array>

#include "cni/config_reader.h"
#include "cni/error.h"

using namespace manifold;
using namespace manifold::cni;

namespace {

std::string thrown(const std::function<void()>& f) {
  try {
    f();
  } catch (const CniError& e) {
    CHECK(e.code() == 7u);
    return e.msg();
  }
  FAIL("nothing thrown");
  return {};
}

}  // namespace

TEST_CASE("config reader: lookups treat null as not set", "[cni]") {
  ProblemReport report;
  const Json j = Json::parse(R"({"a":1,"b":null})");
  ConfigReader r(j, "$.sec", "sec", report);
  CHECK(r.get("a") != nullptr);
  CHECK(r.get("b") == nullptr);
  CHECK(r.find("b") != nullptr);
  CHECK(r.find("c") == nullptr);
  CHECK(r.path_of("a") == "$.sec.a");
  CHECK(r.path_of("a/b") == "$.sec[\"a/b\"]");
  CHECK(r.name_of("a") == "sec.a");
  ConfigReader child = r.child("inner", Json::object());
  CHECK(child.path_of("x") == "$.sec.inner.x");
  CHECK(child.name_of("x") == "sec.inner.x");
  ConfigReader root(j, "$", "", report);
  CHECK(root.name_of("a") == "a");
}

TEST_CASE("config reader: a throwing report stops at the first problem", "[cni]") {
  ProblemReport report;
  const Json j = Json::parse(R"({"on":"yes","n":70000,"bad\u0001key":1})");
  ConfigReader r(j, "$.sec", "sec", report);
  CHECK(thrown([&] { r.read_bool("on"); }) == "invalid sec.on: \"yes\" is not a boolean");
  CHECK(thrown([&] { r.read_int("n", 1, 65535); }) == "invalid sec.n: 70000 is out of range (1-65535)");
  CHECK(thrown([&] { r.read_int("on", 1, 65535); }) == "invalid sec.on: \"yes\" is not an integer (1-65535)");
  constexpr std::array<std::string_view, 2> known = {"on", "n"};
  CHECK(thrown([&] { r.reject_unknown(known); }) == "invalid sec.bad?key: unknown key");
  const Json five = 5;
  CHECK(thrown([&] { ConfigReader(five, "$.sec", "sec", report); }) == "invalid sec: not an object");
  CHECK(thrown([&] { r.fail("n", "why", "own text"); }) == "own text");
  report.warning("$.x", "dropped");  // no effect
}

TEST_CASE("config reader: a collecting report records every problem", "[cni]") {
  Problems out;
  ProblemReport report(out);
  const Json j = Json::parse(R"({"on":"yes","n":18446744073709551615,"ok":true,"m":-3,"x":1})");
  ConfigReader r(j, "$.sec", "sec", report);
  CHECK_FALSE(r.read_bool("on"));
  CHECK_FALSE(r.read_int("n", 0, 10));
  CHECK(r.read_bool("ok") == std::optional<bool>(true));
  CHECK(r.read_int("m", -5, 5) == std::optional<int>(-3));
  CHECK_FALSE(r.read_int("absent", 0, 1));
  constexpr std::array<std::string_view, 4> known = {"on", "n", "ok", "m"};
  CHECK_FALSE(r.reject_unknown(known));
  report.warning("$.sec.w", "advice");
  REQUIRE(out.size() == 4);
  CHECK(out[0].path == "$.sec.on");
  CHECK(out[0].message == "\"yes\" is not a boolean");
  CHECK(out[1].message == "18446744073709551615 is out of range (0-10)");
  CHECK(out[2].path == "$.sec.x");
  CHECK(out[2].message == "unknown key");
  CHECK(out[3].warning);
  const Json array = Json::array();
  ConfigReader not_object(array, "$.arr", "arr", report);
  CHECK(not_object.object().empty());
  CHECK(out.back().path == "$.arr");
  CHECK(out.back().message == "must be an object");
}
