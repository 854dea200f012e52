// Shared fixtures of the verb tests that talk to Kubernetes (commands_test.cpp, devices_test.cpp):
// the meta config over the fake world, the pod team-a/web-1 and NAD objects as the API returns
// them, the scripted credentials and events, and readers of what the fake API server received.
#pragma once

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "k8s/network_status.h"
#include "plugin/fakes.h"

namespace manifold::test::kube {

using Strings = std::vector<std::string>;

inline constexpr const char* kCniDir = "/var/lib/cni/manifold-test";
inline constexpr const char* kKubeconfig = "/etc/cni/net.d/manifold.d/manifold.kubeconfig";
inline constexpr const char* kPodArgs =
    "K8S_POD_NAMESPACE=team-a;K8S_POD_NAME=web-1;K8S_POD_UID=uid-1;K8S_POD_INFRA_CONTAINER_ID=ctr1";

/// A config with the given delegates and version.
inline Json config_with(const World& w, const std::string& version, const Json& delegates) {
  Json c = {{"cniVersion", version}, {"name", "manifold-net"}, {"type", "manifold"},    {"cniDir", kCniDir},
            {"logToStderr", false},  {"binDir", w.bin.str()},  {"delegates", delegates}};
  return c;
}

/// The error JSON of a failed dispatch.
inline Json error_of(const cni::DispatchOutput& out) {
  REQUIRE(out.exit_code == 1);
  Json e = Json::parse(out.stdout_text);
  REQUIRE(e.contains("code"));
  return e;
}

inline Env with_args(const std::string& args) {
  Env e;
  e.args = args;
  return e;
}

inline Json kube_config(const World& w) {
  Json c = config_with(w, "1.0.0", Json::parse(R"([{"cniVersion": "1.0.0", "name": "cluster", "type": "bridge"}])"));
  c["kubeconfig"] = kKubeconfig;
  return c;
}

/// The pod team-a/web-1 with the given annotations.
inline Json pod_json(const Json& annotations, const std::string& uid = "uid-1", const std::string& rv = "42") {
  Json pod =
      Json::parse(R"({"apiVersion": "v1", "kind": "Pod", "metadata": {}, "spec": {}, "status": {"phase": "Pending"}})");
  pod["metadata"] = {{"name", "web-1"}, {"namespace", "team-a"}, {"uid", uid}, {"resourceVersion", rv}};
  pod["metadata"]["annotations"] = annotations;
  return pod;
}

/// The pod with a k8s.v1.cni.cncf.io/networks annotation.
inline Json pod_with_networks(const std::string& networks, const std::string& uid = "uid-1",
                              const std::string& rv = "42") {
  return pod_json(Json{{"k8s.v1.cni.cncf.io/networks", networks}}, uid, rv);
}

inline Json nad_json(const std::string& ns, const std::string& name, const std::string& config) {
  Json nad = Json::parse(R"({"apiVersion": "k8s.cni.cncf.io/v1", "kind": "NetworkAttachmentDefinition"})");
  nad["metadata"] = {{"name", name}, {"namespace", ns}};
  nad["spec"] = {{"config", config}};
  return nad;
}

inline Json status_json(int code, const std::string& reason) {
  return {{"kind", "Status"}, {"apiVersion", "v1"}, {"status", "Failure"}, {"reason", reason}, {"code", code}};
}

inline void setup_kube(World& w) {
  manifold::http::ClusterAuth auth;
  auth.server = "https://10.96.0.1:443";
  auth.token = "s3cr3t-token";
  w.auth = auth;
}

inline void script_events(World& w, int n) {
  for (int i = 0; i < n; ++i) w.http.push_response(201, R"({"kind": "Event", "apiVersion": "v1"})");
}

inline Strings request_lines(const World& w, size_t from = 0) {
  Strings out;
  const auto& reqs = w.http.requests();
  for (size_t i = from; i < reqs.size(); ++i) out.push_back(reqs[i].method + " " + reqs[i].target);
  return out;
}

inline const std::string kPodPath = "/api/v1/namespaces/team-a/pods/web-1";
inline const std::string kEventsPath = "/api/v1/namespaces/team-a/events";
inline std::string nad_path(const std::string& ns, const std::string& name) {
  return "/apis/k8s.cni.cncf.io/v1/namespaces/" + ns + "/network-attachment-definitions/" + name;
}

inline std::string header(const manifold::http::HttpRequest& r, const std::string& name) {
  for (const auto& [k, v] : r.headers)
    if (k == name) return v;
  return "";
}

/// The network-status annotation carried by a PUT pods/status body.
inline Json status_of_put(const manifold::http::HttpRequest& put) {
  Json body = Json::parse(put.body);
  REQUIRE(body["metadata"]["annotations"].contains(manifold::k8s::kNetworkStatusAnnotation));
  return Json::parse(body["metadata"]["annotations"][manifold::k8s::kNetworkStatusAnnotation].get<std::string>());
}

}  // namespace manifold::test::kube
