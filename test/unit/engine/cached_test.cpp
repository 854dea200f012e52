// Tests for plugin/cached_attachment: cached CNI_ARGS, delegate configs and results read back from
// a (possibly corrupt) cache record, and the ADD result rendering with its guard against a record
// without a cluster network attachment.
#include "engine/cached.h"

#include <catch2/catch.hpp>
#include <functional>
#include <string>

#include "cni/error.h"
#include "util/json.h"
#include "cni_error_of.h"

using manifold::Json;
using manifold::cni::CniError;
using manifold::engine::cached_cni_args;
using manifold::engine::decode_attachment_result;
using manifold::engine::has_usable_config;
using manifold::engine::render_result;
using manifold::store::AttachmentRecord;
using manifold::store::ContainerRecord;
using manifold::test::code_of;
using manifold::test::message_of;

namespace {

AttachmentRecord attachment(const std::string& name, const std::string& ifname, const std::string& address,
                            bool cluster) {
  AttachmentRecord a;
  a.name = name;
  a.ifname = ifname;
  a.cluster_network = cluster;
  a.config = Json{{"cniVersion", "0.4.0"}, {"name", name}, {"type", "bridge"}}.dump();
  a.result = Json{{"cniVersion", "0.4.0"},
                  {"interfaces", Json::array({Json{{"name", ifname}, {"sandbox", "/run/netns/p"}}})},
                  {"ips", Json::array({Json{{"version", "4"}, {"address", address}, {"interface", 0}}})}}
                 .dump();
  return a;
}

}  // namespace

TEST_CASE("cached cniArgs: absent or null falls back, a string is used, anything else is a decoding error",
          "[plugin]") {
  AttachmentRecord a = attachment("storage", "net1", "10.0.0.2/24", false);
  CHECK(cached_cni_args(a, "K=V") == "K=V");
  a.cni_args = nullptr;
  CHECK(cached_cni_args(a, "K=V") == "K=V");
  a.cni_args = "IgnoreUnknown=true;IP=10.0.0.2";
  CHECK(cached_cni_args(a, "K=V") == "IgnoreUnknown=true;IP=10.0.0.2");
  a.cni_args = "";
  CHECK(cached_cni_args(a, "K=V").empty());
  for (const Json& bad : {Json(42), Json::array({"K=V"}), Json::object({{"K", "V"}}), Json(true)}) {
    a.cni_args = bad;
    CHECK(code_of([&] { cached_cni_args(a, "K=V"); }) == 6);
    std::string msg = message_of([&] { cached_cni_args(a, "K=V"); });
    CHECK_THAT(msg, Catch::Contains("\"storage\" (net1)") && Catch::Contains("cniArgs"));
  }
}

TEST_CASE("cached config usability: a delegate object with a type, or a conflist of typed plugins", "[plugin]") {
  AttachmentRecord a = attachment("storage", "net1", "10.0.0.2/24", false);
  CHECK(has_usable_config(a));
  a.config = R"({"cniVersion":"1.0.0","name":"c","plugins":[{"type":"ptp"},{"type":"tuning"}]})";
  CHECK(has_usable_config(a));
  for (const char* bad : {"", "{\"cniVersion\":\"1.0.0\",\"type\":", "[]", "\"bridge\"", "{}", R"({"type": 7})",
                          R"({"plugins": []})", R"({"plugins": [{"type": null}]})"}) {
    a.config = bad;
    CHECK_FALSE(has_usable_config(a));
  }
  a.config = std::string(100000, '[') + std::string(100000, ']');
  CHECK_FALSE(has_usable_config(a));
}

TEST_CASE("decode_attachment_result: a corrupt config or result is a CniError, never a library exception", "[plugin]") {
  AttachmentRecord a = attachment("cluster", "eth0", "10.0.0.1/24", true);
  auto r = decode_attachment_result(a);
  REQUIRE(r.ips.size() == 1);
  CHECK(r.ips[0].address == "10.0.0.1/24");

  SECTION("config that is not JSON") {
    a.config = "{\"cniVersion\": \"0.4.0\", \"na";
    CHECK(code_of([&] { decode_attachment_result(a); }) == 6);
    CHECK_THAT(message_of([&] { decode_attachment_result(a); }), Catch::Contains("\"cluster\" (eth0)"));
  }
  SECTION("config that is JSON but not an object") {
    a.config = "[1, 2]";
    CHECK(code_of([&] { decode_attachment_result(a); }) == 6);
  }
  SECTION("truncated result") {
    a.result = a.result.substr(0, a.result.size() / 2);
    CHECK(code_of([&] { decode_attachment_result(a); }) == 6);
  }
  SECTION("result in an unsupported version") {
    a.result = R"({"cniVersion": "9.9.9", "ips": []})";
    CHECK(code_of([&] { decode_attachment_result(a); }) == 1);
  }
}

TEST_CASE("render_result: the cluster network's result, all merged, or a clear error without a cluster network",
          "[plugin]") {
  ContainerRecord record;
  record.container_id = "ctr1";
  record.attachments = {attachment("cluster", "eth0", "10.0.0.1/24", true),
                        attachment("storage", "net1", "10.0.1.1/24", false)};
  Json one = Json::parse(render_result(record, "1.0.0", false));
  CHECK(one["cniVersion"] == "1.0.0");
  REQUIRE(one["ips"].size() == 1);
  CHECK(one["ips"][0]["address"] == "10.0.0.1/24");
  Json all = Json::parse(render_result(record, "1.0.0", true));
  CHECK(all["ips"].size() == 2);
  CHECK(all["interfaces"].size() == 2);

  SECTION("no cluster network attachment") {
    record.attachments[0].cluster_network = false;
    for (bool merge : {false, true}) {
      CHECK(code_of([&] { render_result(record, "1.0.0", merge); }) == 100);
      CHECK_THAT(message_of([&] { render_result(record, "1.0.0", merge); }),
                 Catch::Contains("ctr1") && Catch::Contains("no cluster network"));
    }
  }
  SECTION("no attachment at all") {
    record.attachments.clear();
    CHECK(code_of([&] { render_result(record, "1.0.0", false); }) == 100);
    CHECK(code_of([&] { render_result(record, "1.0.0", true); }) == 100);
  }
}

TEST_CASE("render_result: from results decoded once, the same bytes; a count mismatch is internal", "[plugin]") {
  ContainerRecord record;
  record.container_id = "ctr1";
  record.attachments = {attachment("cluster", "eth0", "10.0.0.1/24", true),
                        attachment("storage", "net1", "10.0.1.1/24", false)};
  std::vector<manifold::cni::Result> results;
  for (const auto& a : record.attachments) results.push_back(decode_attachment_result(a));
  for (bool merge : {false, true}) {
    CAPTURE(merge);
    CHECK(render_result(record, results, "1.0.0", merge) == render_result(record, "1.0.0", merge));
  }
  // An attachment that is not rendered is not decoded: a corrupt non-cluster result does not matter.
  record.attachments[1].result = "{";
  CHECK(render_result(record, "1.0.0", false) == render_result(record, results, "1.0.0", false));
  results.pop_back();
  CHECK(code_of([&] { render_result(record, results, "1.0.0", false); }) == 100);
}
