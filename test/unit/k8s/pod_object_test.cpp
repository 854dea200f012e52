// Tests of the defensive Pod reading: well-formed pods pass, every wrongly typed field the plugin
// relies on is a decoding error naming the pod and the field, and the accessors never throw.
#include <catch2/catch.hpp>

#include "cni/error.h"
#include "k8s/pod_object.h"

using manifold::Json;
using manifold::cni::CniError;
using namespace manifold::k8s;

namespace {

Json good_pod() {
  return Json::parse(R"({"kind":"Pod","metadata":{"name":"web","namespace":"default","uid":"u1",
    "resourceVersion":"7","annotations":{"k8s.v1.cni.cncf.io/networks":"a,b"}}})");
}

std::string failure(const Json& pod) {
  try {
    validate_pod_object(pod, "default", "web");
  } catch (const CniError& e) {
    CHECK(e.code() == 6u);
    return e.msg();
  }
  return "";
}

}  // namespace

TEST_CASE("pod object: a well-formed pod passes and its fields are read", "[k8s]") {
  Json pod = good_pod();
  CHECK_NOTHROW(validate_pod_object(pod, "default", "web"));
  CHECK(pod_metadata_string(pod, "uid") == "u1");
  CHECK(pod_annotation_value(pod, "k8s.v1.cni.cncf.io/networks") == "a,b");
  CHECK(pod_annotation_value(pod, "absent").empty());

  pod["metadata"].erase("annotations");
  CHECK_NOTHROW(validate_pod_object(pod, "default", "web"));
  pod["metadata"]["annotations"] = nullptr;
  CHECK_NOTHROW(validate_pod_object(pod, "default", "web"));
  pod["metadata"].erase("uid");
  CHECK_NOTHROW(validate_pod_object(pod, "default", "web"));
  CHECK(pod_metadata_string(pod, "uid").empty());
}

TEST_CASE("pod object: wrongly typed fields are decoding errors naming the pod and field", "[k8s]") {
  Json pod = good_pod();
  pod["metadata"]["annotations"] = Json::array({"wrong", "type"});
  std::string msg = failure(pod);
  CHECK_THAT(msg, Catch::Contains("default/web") && Catch::Contains("metadata.annotations is a JSON array"));

  pod = good_pod();
  pod["metadata"]["annotations"]["k8s.v1.cni.cncf.io/networks"] = Json::array({"a"});
  CHECK_THAT(failure(pod), Catch::Contains("annotation k8s.v1.cni.cncf.io/networks is a JSON array"));

  pod = good_pod();
  pod["metadata"]["uid"] = 12345;
  CHECK_THAT(failure(pod), Catch::Contains("metadata.uid is a JSON number"));

  pod = good_pod();
  pod["metadata"]["resourceVersion"] = Json::object();
  CHECK_THAT(failure(pod), Catch::Contains("metadata.resourceVersion is a JSON object"));

  pod = good_pod();
  pod["metadata"] = "not an object";
  CHECK_THAT(failure(pod), Catch::Contains("metadata is a JSON string"));

  pod = good_pod();
  pod.erase("metadata");
  CHECK_THAT(failure(pod), Catch::Contains("metadata is missing"));

  CHECK_THAT(failure(Json::array()), Catch::Contains("not an object"));
}

TEST_CASE("pod object: an answer about another pod is rejected", "[k8s]") {
  Json pod = good_pod();
  pod["metadata"]["name"] = "other";
  CHECK_THAT(failure(pod), Catch::Contains("metadata.name is \"other\""));
  pod = good_pod();
  pod["metadata"]["namespace"] = "kube-system";
  CHECK_THAT(failure(pod), Catch::Contains("metadata.namespace is \"kube-system\""));
}

TEST_CASE("pod object: accessors tolerate any shape", "[k8s]") {
  for (const char* text : {"null", "[]", "\"x\"", "{\"metadata\":[]}", "{\"metadata\":{\"annotations\":[]}}",
                           "{\"metadata\":{\"uid\":5,\"annotations\":{\"k\":1}}}"}) {
    Json pod = Json::parse(text);
    CHECK(pod_metadata_string(pod, "uid").empty());
    CHECK(pod_annotation_value(pod, "k").empty());
  }
}
