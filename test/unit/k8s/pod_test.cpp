// Tests of the Pod decoder: a well-formed pod's fields typed, every wrongly typed field the plugin
// relies on a decoding error naming the pod and the field, an answer about another pod rejected, a
// LIST or watch pod without its name refused, the networks annotation parsed once with its error
// kept for later, hostile values (control bytes, huge keys) kept out of messages, and the object
// kept whole for the status PUT.
#include <catch2/catch.hpp>
#include <string>

#include "cni/error.h"
#include "k8s/pod.h"

using manifold::Json;
using manifold::cni::CniError;
using namespace manifold::k8s;

namespace {

Json good_pod() {
  return Json::parse(R"({"kind":"Pod","metadata":{"name":"web","namespace":"default","uid":"u1",
    "resourceVersion":"7","labels":{"app":"web"},"annotations":{"k8s.v1.cni.cncf.io/networks":"a,other/b@net2"}},
    "spec":{"nodeName":"n1","containers":[{"name":"c"}]},"status":{"phase":"Running"}})");
}

std::string failure(const Json& pod) {
  try {
    decode_pod(pod, "default", "web");
  } catch (const CniError& e) {
    CHECK(e.code() == 6u);
    return e.msg();
  }
  return "";
}

std::string list_failure(const Json& pod) {
  try {
    decode_pod(pod);
  } catch (const CniError& e) {
    CHECK(e.code() == 6u);
    return e.msg();
  }
  return "";
}

}  // namespace

TEST_CASE("pod: a well-formed pod decodes to its typed fields and keeps the object whole", "[k8s]") {
  const Pod pod = decode_pod(good_pod(), "default", "web");
  CHECK(pod.namespace_ == "default");
  CHECK(pod.name == "web");
  CHECK(pod.uid == "u1");
  CHECK(pod.resource_version == "7");
  CHECK(pod.annotation("k8s.v1.cni.cncf.io/networks") == "a,other/b@net2");
  CHECK(pod.annotation("absent").empty());
  REQUIRE(pod.networks.size() == 2);
  CHECK(pod.networks[0].namespace_ == "default");  // the pod's namespace for a bare name
  CHECK(pod.networks[0].name == "a");
  CHECK(pod.networks[1].namespace_ == "other");
  CHECK(pod.networks[1].interface == "net2");
  CHECK_FALSE(pod.networks_error);
  CHECK(pod.selected_networks().size() == 2);
  CHECK(pod.object == good_pod());  // labels, spec, status: nothing dropped for the PUT
  CHECK_FALSE(pod.is_static());

  const Pod listed = decode_pod(good_pod());
  CHECK(listed.namespace_ == "default");
  CHECK(listed.name == "web");
  CHECK(listed.networks.size() == 2);
}

TEST_CASE("pod: absent or null optional fields decode as empty", "[k8s]") {
  Json pod = good_pod();
  pod["metadata"].erase("annotations");
  pod["metadata"].erase("uid");
  pod["metadata"]["resourceVersion"] = nullptr;
  Pod got = decode_pod(pod, "default", "web");
  CHECK(got.uid.empty());
  CHECK(got.resource_version.empty());
  CHECK(got.annotations.empty());
  CHECK(got.networks.empty());
  CHECK_FALSE(got.networks_error);

  pod["metadata"]["annotations"] = nullptr;
  pod["metadata"].erase("name");
  pod["metadata"].erase("namespace");
  got = decode_pod(pod, "default", "web");  // a GET answer without them: the request's
  CHECK(got.namespace_ == "default");
  CHECK(got.name == "web");
}

TEST_CASE("pod: wrongly typed fields are decoding errors naming the pod and field", "[k8s]") {
  Json pod = good_pod();
  pod["metadata"]["annotations"] = Json::array({"wrong", "type"});
  std::string msg = failure(pod);
  CHECK_THAT(msg, Catch::Contains("default/web") && Catch::Contains("metadata.annotations is a JSON array"));

  pod = good_pod();
  pod["metadata"]["annotations"]["k8s.v1.cni.cncf.io/networks"] = Json::array({"a"});
  CHECK_THAT(failure(pod), Catch::Contains("annotation k8s.v1.cni.cncf.io/networks is a JSON array"));

  pod = good_pod();
  pod["metadata"]["annotations"]["other"] = 5;  // any annotation, not only the ones manifold reads
  CHECK_THAT(failure(pod), Catch::Contains("annotation other is a JSON number"));

  pod = good_pod();
  pod["metadata"]["uid"] = 12345;
  CHECK_THAT(failure(pod), Catch::Contains("metadata.uid is a JSON number"));

  pod = good_pod();
  pod["metadata"]["resourceVersion"] = Json::object();
  CHECK_THAT(failure(pod), Catch::Contains("metadata.resourceVersion is a JSON object"));

  pod = good_pod();
  pod["metadata"]["name"] = true;
  CHECK_THAT(failure(pod), Catch::Contains("metadata.name is a JSON boolean"));

  pod = good_pod();
  pod["metadata"] = "not an object";
  CHECK_THAT(failure(pod), Catch::Contains("metadata is a JSON string"));

  pod = good_pod();
  pod.erase("metadata");
  CHECK_THAT(failure(pod), Catch::Contains("metadata is missing"));

  CHECK_THAT(failure(Json::array()), Catch::Contains("not an object"));
  CHECK_THAT(failure(Json()), Catch::Contains("the pod is a JSON null"));
}

TEST_CASE("pod: an answer about another pod is rejected", "[k8s]") {
  Json pod = good_pod();
  pod["metadata"]["name"] = "other";
  CHECK_THAT(failure(pod), Catch::Contains("metadata.name is \"other\""));
  pod = good_pod();
  pod["metadata"]["namespace"] = "kube-system";
  CHECK_THAT(failure(pod), Catch::Contains("metadata.namespace is \"kube-system\""));
  pod = good_pod();
  pod["metadata"]["name"] = "";
  CHECK_THAT(failure(pod), Catch::Contains("metadata.name is \"\""));
}

TEST_CASE("pod: a listed or watched pod needs its namespace and name", "[k8s]") {
  Json pod = good_pod();
  pod["metadata"].erase("namespace");
  CHECK_THAT(list_failure(pod), Catch::Contains("pod /web") && Catch::Contains("metadata.namespace is missing"));
  pod = good_pod();
  pod["metadata"]["name"] = "";
  CHECK_THAT(list_failure(pod), Catch::Contains("metadata.name is missing"));
  pod = good_pod();
  pod["metadata"]["namespace"] = 7;
  CHECK_THAT(list_failure(pod), Catch::Contains("metadata.namespace is a JSON number"));
  pod = good_pod();
  pod["metadata"]["annotations"] = "x";
  CHECK_THAT(list_failure(pod), Catch::Contains("default/web") && Catch::Contains("metadata.annotations"));
}

TEST_CASE("pod: a networks annotation that does not parse decodes, its error kept for the step using it", "[k8s]") {
  Json pod = good_pod();
  pod["metadata"]["annotations"]["k8s.v1.cni.cncf.io/networks"] = "[not json";
  const Pod got = decode_pod(pod, "default", "web");
  CHECK(got.networks.empty());
  REQUIRE(got.networks_error);
  CHECK(got.networks_error->code() == 7u);
  try {
    got.selected_networks();
    FAIL("selected_networks() did not throw");
  } catch (const CniError& e) {
    CHECK(e.msg() == got.networks_error->msg());
  }
}

TEST_CASE("pod: a static pod is marked by its config source", "[k8s]") {
  Json pod = good_pod();
  pod["metadata"]["annotations"]["kubernetes.io/config.source"] = "file";
  CHECK(decode_pod(pod, "default", "web").is_static());
  pod["metadata"]["annotations"]["kubernetes.io/config.source"] = "api";
  CHECK_FALSE(decode_pod(pod, "default", "web").is_static());
}

TEST_CASE("pod: hostile values stay out of messages and bounded", "[k8s]") {
  Json pod = good_pod();
  const std::string key(5000, 'k');
  pod["metadata"]["annotations"][key] = Json::array();
  const std::string msg = failure(pod);
  CHECK_THAT(msg, Catch::Contains(std::string(100, 'k') + "..."));
  CHECK(msg.size() < 400);

  pod = good_pod();
  pod["metadata"]["name"] = std::string("evil\xff\xfe\n", 7);
  const std::string shown = failure(pod);
  CHECK(shown.find('\xff') == std::string::npos);  // sanitized: the message stays valid UTF-8

  pod = good_pod();
  pod["metadata"]["annotations"]["k8s.v1.cni.cncf.io/networks"] = std::string(300000, ',');
  const Pod got = decode_pod(pod, "default", "web");  // too large to parse: an error kept, not thrown
  CHECK(got.networks_error);
}

TEST_CASE("pod: metadata_string tolerates any shape", "[k8s]") {
  for (const char* text : {"null", "[]", "\"x\"", "{\"metadata\":[]}", "{\"metadata\":{\"annotations\":[]}}",
                           "{\"metadata\":{\"uid\":5,\"annotations\":{\"k\":1}}}"}) {
    CHECK(metadata_string(Json::parse(text), "uid").empty());
  }
  CHECK(metadata_string(Json::parse(R"({"metadata":{"resourceVersion":"9"}})"), "resourceVersion") == "9");
}
