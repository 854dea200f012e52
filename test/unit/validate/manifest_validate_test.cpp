// Unit tests for manifest validation: YAML/JSON loading with scalar typing, NAD checks with paths
// into the embedded spec.config, pod and pod-template annotation checks, kind dispatch, and the
// checks of manifold's own ClusterRole and of the DaemonSet running `manifold agent`.
#include <catch2/catch.hpp>

#include <algorithm>
#include <fstream>
#include <sstream>

#include "cni/error.h"
#include "validate/deploy_validate.h"
#include "validate/manifest_validate.h"

using namespace manifold;
using namespace manifold::validate;

namespace {

std::vector<std::string> errors_of(const cni::Problems& problems) {
  std::vector<std::string> out;
  for (const auto& p : problems)
    if (!p.warning) out.push_back(cni::format_problem(p));
  return out;
}

const char* kGoodNads = R"(apiVersion: k8s.cni.cncf.io/v1
kind: NetworkAttachmentDefinition
metadata:
  name: macvlan-conf
  namespace: default
spec:
  config: |
    {"cniVersion": "1.0.0", "name": "macvlan-conf", "type": "macvlan", "master": "eth1",
     "ipam": {"type": "static"}}
---
apiVersion: k8s.cni.cncf.io/v1
kind: NetworkAttachmentDefinition
metadata:
  name: tuned
spec:
  config: '{"cniVersion":"0.4.0","name":"tuned","plugins":[{"type":"ipvlan","master":"eth1","ipam":{"type":"host-local","subnet":"10.9.0.0/24"}},{"type":"tuning","sysctl":{"net.ipv4.conf.net1.arp_notify":"1"}}]}'
)";

}  // namespace

TEST_CASE("YAML manifests become JSON with typed plain scalars", "[validate]") {
  auto docs = load_manifests("a: 1\nb: '2'\nc: true\nd: ~\ne: text\nf: [x, 2.5]\n---\n---\nkind: Pod\n");
  REQUIRE(docs.size() == 2);
  CHECK(docs[0] == Json::parse(R"({"a":1,"b":"2","c":true,"d":null,"e":"text","f":["x",2.5]})"));
  CHECK(docs[1]["kind"] == "Pod");
  CHECK(load_manifests(R"([{"kind":"Pod"},{"kind":"Pod"}])").size() == 2);
  CHECK_THROWS_AS(load_manifests("a: [unclosed\n"), cni::CniError);
}

TEST_CASE("valid NADs produce no errors", "[validate]") {
  auto reports = validate_manifest_text(kGoodNads, true);
  REQUIRE(reports.size() == 2);
  CHECK(reports[0].label == "NetworkAttachmentDefinition default/macvlan-conf");
  CHECK(reports[1].label == "NetworkAttachmentDefinition tuned");
  for (const auto& r : reports) CHECK(errors_of(r.problems).empty());
}

TEST_CASE("broken NADs report paths into spec.config", "[validate]") {
  auto reports = validate_manifest_text(R"(apiVersion: v1
kind: NetworkAttachmentDefinition
metadata:
  name: Bad_Name
spec:
  config: '{"cniVersion":"1.0.0","name":"x","plugins":[{"type":"bridge"},{"type":"../tuning"},{}]}'
---
apiVersion: k8s.cni.cncf.io/v1
kind: NetworkAttachmentDefinition
metadata:
  name: notjson
spec:
  config: '{"type": '
---
apiVersion: k8s.cni.cncf.io/v1
kind: NetworkAttachmentDefinition
metadata:
  name: wrongtype
spec:
  config: '{"cniVersion":"0.3.1","type":""}'
---
apiVersion: k8s.cni.cncf.io/v1
kind: NetworkAttachmentDefinition
metadata:
  name: empty
spec: {}
)",
                                        true);
  REQUIRE(reports.size() == 4);
  CHECK(errors_of(reports[0].problems) ==
        std::vector<std::string>{
            "$.apiVersion: must be \"k8s.cni.cncf.io/v1\"",
            "$.metadata.name: must be a DNS-1123 subdomain (lower-case alphanumerics, '-' and '.')",
            "$.spec.config.plugins[1].type: must be a plugin file name, not a path (no '/', '.' or '..')",
            "$.spec.config.plugins[2].type: is required"});
  CHECK(errors_of(reports[1].problems) == std::vector<std::string>{"$.spec.config: is not valid JSON"});
  CHECK(errors_of(reports[2].problems) == std::vector<std::string>{"$.spec.config.type: must be a non-empty string"});
  CHECK(errors_of(reports[3].problems).empty());  // empty config = confDir lookup: a warning only
  CHECK(reports[3].problems.size() == 1);
}

TEST_CASE("validate --nad rejects other kinds", "[validate]") {
  auto reports = validate_manifest_text("apiVersion: v1\nkind: Pod\nmetadata: {name: p}\n", true);
  REQUIRE(reports.size() == 1);
  CHECK(errors_of(reports[0].problems) ==
        std::vector<std::string>{"$.kind: must be \"NetworkAttachmentDefinition\" (got \"Pod\")"});
}

TEST_CASE("pod annotations are parsed as the ADD path parses them", "[validate]") {
  auto reports = validate_manifest_text(R"(apiVersion: v1
kind: Pod
metadata:
  name: ok
  annotations:
    k8s.v1.cni.cncf.io/networks: macvlan-conf@data0, other/tuned
---
apiVersion: v1
kind: Pod
metadata:
  name: json
  annotations:
    k8s.v1.cni.cncf.io/networks: '[{"name":"macvlan-conf","interface":"net1","ips":["10.1.1.5/24"],"cni-args":{"mesh":{"enabled":true}}}]'
---
apiVersion: v1
kind: Pod
metadata:
  name: bad
  annotations:
    k8s.v1.cni.cncf.io/networks: 'a/b/c'
    v1.multus-cni.io/default-network: ''
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: dep
spec:
  template:
    metadata:
      annotations:
        k8s.v1.cni.cncf.io/networks: '[{"name":"x","mac":"not-a-mac"}]'
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: cm
)",
                                        false);
  REQUIRE(reports.size() == 5);
  CHECK(errors_of(reports[0].problems).empty());
  CHECK(errors_of(reports[1].problems).empty());
  auto bad = errors_of(reports[2].problems);
  REQUIRE(bad.size() == 2);
  CHECK(bad[0].rfind("$.metadata.annotations[\"k8s.v1.cni.cncf.io/networks\"]: ", 0) == 0);
  CHECK(bad[1].rfind("$.metadata.annotations[\"v1.multus-cni.io/default-network\"]: ", 0) == 0);
  auto dep = errors_of(reports[3].problems);
  REQUIRE(dep.size() == 1);
  CHECK(dep[0].rfind("$.spec.template.metadata.annotations[\"k8s.v1.cni.cncf.io/networks\"]: ", 0) == 0);
  CHECK(reports[4].problems.empty());
  CHECK_FALSE(reports[4].checked);
  CHECK(reports[0].checked);
}

TEST_CASE("scoping keys in cni-args reach the checker", "[validate]") {
  std::vector<std::string> seen;
  cni::ScopingChecker checker = [&](std::string_view key, const Json&, const std::string& path, cni::Problems& out) {
    seen.push_back(std::string(key) + "@" + path);
    out.push_back({path, "rejected by test"});
  };
  auto reports = validate_manifest_text(R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","annotations":{
      "k8s.v1.cni.cncf.io/networks":"[{\"name\":\"a\"},{\"name\":\"b\",\"cni-args\":{\"sourceRouting\":{}}}]"}}})",
                                        false, checker);
  REQUIRE(reports.size() == 1);
  std::string path = "$.metadata.annotations[\"k8s.v1.cni.cncf.io/networks\"][1][\"cni-args\"].sourceRouting";
  CHECK(seen == std::vector<std::string>{"sourceRouting@" + path});
  CHECK(errors_of(reports[0].problems) == std::vector<std::string>{path + ": rejected by test"});
}

namespace {

std::vector<std::string> warnings_of(const cni::Problems& problems) {
  std::vector<std::string> out;
  for (const auto& p : problems)
    if (p.warning) out.push_back(cni::format_problem(p));
  return out;
}

// The ClusterRole of conf/rbac.yaml, as shipped.
Json shipped_role() {
  std::ifstream in(std::string(MANIFOLD_SOURCE_DIR) + "/conf/rbac.yaml");
  REQUIRE(in);
  std::stringstream text;
  text << in.rdbuf();
  for (const Json& doc : load_manifests(text.str()))
    if (doc.value("kind", "") == "ClusterRole") return doc;
  FAIL("conf/rbac.yaml holds no ClusterRole");
  return {};
}

cni::Problems role_problems(const Json& role) {
  cni::Problems out;
  validate_cluster_role(role, out);
  return out;
}

// The DaemonSet of conf/manifold-daemonset.yaml, without what the checks do not look at.
const char* kAgentDaemonSet = R"(apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: manifold
  namespace: kube-system
spec:
  template:
    metadata:
      labels:
        app: manifold
    spec:
      serviceAccountName: manifold
      hostNetwork: true
      hostPID: true
      containers:
        - name: agent
          image: localhost/manifold:0.1.0
          command:
            - /manifold
            - agent
            - --bin-source=/manifold
            - --bin-dir=/opt/cni/bin
            - --conf-dir=/etc/cni/net.d
            - --cni-dir=/var/lib/cni/manifold
          env:
            - name: NODE_NAME
              valueFrom:
                fieldRef:
                  fieldPath: spec.nodeName
          securityContext:
            privileged: true
          volumeMounts:
            - {name: cni-bin, mountPath: /opt/cni/bin}
            - {name: cni-conf, mountPath: /etc/cni/net.d}
            - {name: cni-state, mountPath: /var/lib/cni}
            - {name: run-netns, mountPath: /run/netns, mountPropagation: HostToContainer}
            - {name: var-run-netns, mountPath: /var/run/netns, mountPropagation: HostToContainer}
      volumes:
        - {name: cni-bin, hostPath: {path: /opt/cni/bin}}
        - {name: cni-conf, hostPath: {path: /etc/cni/net.d}}
        - {name: cni-state, hostPath: {path: /var/lib/cni}}
        - {name: run-netns, hostPath: {path: /run/netns}}
        - {name: var-run-netns, hostPath: {path: /var/run/netns}}
)";

Json agent_daemonset() { return load_manifests(kAgentDaemonSet).at(0); }

cni::Problems daemonset_problems(const Json& ds) {
  cni::Problems out;
  validate_agent_daemonset(ds, out);
  return out;
}

Json& agent_container(Json& ds) { return ds["spec"]["template"]["spec"]["containers"][0]; }
Json& pod_spec(Json& ds) { return ds["spec"]["template"]["spec"]; }

const std::string kC = "$.spec.template.spec.containers[0]";
const std::string kPropagation =
    "must be HostToContainer (or Bidirectional): without it, network namespaces created after the agent started "
    "are invisible to it";

}  // namespace

TEST_CASE("the shipped ClusterRole grants what manifold needs and nothing more", "[validate]") {
  CHECK(role_problems(shipped_role()).empty());
  auto reports = validate_manifest_text(R"(apiVersion: v1
kind: ServiceAccount
metadata: {name: manifold, namespace: kube-system}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: manifold}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: manifold}
---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: network-attachment-definitions.k8s.cni.cncf.io}
)",
                                        false);
  REQUIRE(reports.size() == 3);
  for (const auto& r : reports) {
    CHECK_FALSE(r.checked);
    CHECK(r.problems.empty());
  }
}

TEST_CASE("each missing ClusterRole grant is an error naming the resource, the verbs and the user", "[validate]") {
  Json role = shipped_role();
  SECTION("watch") {
    role["rules"][0]["verbs"] = Json::array({"get", "list"});
    CHECK(
        errors_of(role_problems(role)) ==
        std::vector<std::string>{"$.rules: pods watch: not granted; needed for the node agent's pod watch (hot-plug)"});
  }
  SECTION("list and watch") {
    role["rules"][0]["verbs"] = Json::array({"get"});
    CHECK(errors_of(role_problems(role)) ==
          std::vector<std::string>{
              "$.rules: pods list/watch: not granted; needed for the node agent's pod watch (hot-plug)"});
  }
  SECTION("update on pods/status") {
    role["rules"][1]["verbs"] = Json::array({"get"});
    CHECK(errors_of(role_problems(role)) ==
          std::vector<std::string>{"$.rules: pods/status update: not granted; needed for writing network-status"});
  }
  SECTION("update on pods does not stand in for pods/status") {
    role["rules"].erase(1);
    role["rules"][0]["verbs"].push_back("update");
    auto problems = role_problems(role);
    CHECK(errors_of(problems) ==
          std::vector<std::string>{"$.rules: pods/status update: not granted; needed for writing network-status"});
    CHECK(warnings_of(problems) ==
          std::vector<std::string>{
              "warning: $.rules[0]: grants more than manifold needs: write access to pods (only pods/status update is "
              "needed)"});
  }
  SECTION("pods get") {
    role["rules"][0]["resources"] = Json::array({"pods/status"});
    CHECK(errors_of(role_problems(role)) ==
          std::vector<std::string>{
              "$.rules: pods get: not granted; needed for reading the pod's network selection annotations",
              "$.rules: pods list/watch: not granted; needed for the node agent's pod watch (hot-plug)"});
  }
  SECTION("events create") {
    role["rules"][2]["apiGroups"] = Json::array({"events.k8s.io"});
    CHECK(errors_of(role_problems(role)) ==
          std::vector<std::string>{
              "$.rules: events create: not granted; needed for the AddedInterface/RemovedInterface events on pods"});
  }
  SECTION("NADs in the wrong API group") {
    role["rules"][3]["apiGroups"] = Json::array({""});
    CHECK(errors_of(role_problems(role)) ==
          std::vector<std::string>{
              "$.rules: network-attachment-definitions get: not granted; needed for reading the networks pods "
              "select"});
  }
  SECTION("MultiNetworkPolicy list is a warning: only namespaces with enforcement enabled need it") {
    role["rules"].erase(4);
    auto problems = role_problems(role);
    CHECK(errors_of(problems).empty());
    CHECK(warnings_of(problems) ==
          std::vector<std::string>{"warning: $.rules: multi-networkpolicies list: not granted; needed for "
                                   "MultiNetworkPolicy rules at ADD (when enabled)",
                                   "warning: $.rules: multi-networkpolicies watch: not granted; needed for the node "
                                   "agent's MultiNetworkPolicy sync (when enabled)"});
  }
  SECTION("namespaces list/watch is a warning: only the agent's policy sync needs it") {
    role["rules"].erase(5);
    auto problems = role_problems(role);
    CHECK(errors_of(problems).empty());
    CHECK(warnings_of(problems) ==
          std::vector<std::string>{"warning: $.rules: namespaces list/watch: not granted; needed for the node "
                                   "agent's MultiNetworkPolicy sync (when enabled)"});
  }
  SECTION("a rule limited by resourceNames grants nothing manifold can use") {
    role["rules"][1]["resourceNames"] = Json::array({"web"});
    CHECK(errors_of(role_problems(role)) ==
          std::vector<std::string>{"$.rules: pods/status update: not granted; needed for writing network-status"});
  }
  SECTION("no rules at all") {
    role.erase("rules");
    CHECK(errors_of(role_problems(role)).size() == 5);
    role["rules"] = "pods";
    CHECK(errors_of(role_problems(role)) == std::vector<std::string>{"$.rules: must be a list of rules"});
  }
}

TEST_CASE("ClusterRole wildcards satisfy every need; grants beyond them are warnings", "[validate]") {
  Json role = shipped_role();
  SECTION("everything") {
    role["rules"] = Json::parse(R"([{"apiGroups":["*"],"resources":["*"],"verbs":["*"]}])");
    auto problems = role_problems(role);
    CHECK(errors_of(problems).empty());
    CHECK(warnings_of(problems) ==
          std::vector<std::string>{"warning: $.rules[0]: grants more than manifold needs: write access to pods (only "
                                   "pods/status update is needed), patch on pods/status, write access to "
                                   "network-attachment-definitions, access to secrets, write access to DRA objects"});
  }
  SECTION("wildcard verbs and subresources, exact groups") {
    role["rules"] = Json::parse(R"([{"apiGroups":[""],"resources":["pods","*/status","events"],"verbs":["*"]},
        {"apiGroups":["k8s.cni.cncf.io"],"resources":["*"],"verbs":["get","list","watch"]},
        {"apiGroups":["resource.k8s.io"],"resources":["resourceclaims","resourceslices"],"verbs":["get","list"]}])");
    auto problems = role_problems(role);
    CHECK(errors_of(problems).empty());
    CHECK(warnings_of(problems) ==
          std::vector<std::string>{"warning: $.rules: namespaces list/watch: not granted; needed for the node agent's "
                                   "MultiNetworkPolicy sync (when enabled)",
                                   "warning: $.rules[0]: grants more than manifold needs: write access to pods (only "
                                   "pods/status update is needed), patch on pods/status"});
  }
  SECTION("a Multus-style role works, with warnings for what it grants beyond manifold's needs") {
    role["rules"] = Json::parse(R"([{"apiGroups":["k8s.cni.cncf.io"],"resources":["*"],"verbs":["*"]},
        {"apiGroups":[""],"resources":["pods","pods/status"],"verbs":["get","list","update","watch"]},
        {"apiGroups":["","events.k8s.io"],"resources":["events"],"verbs":["create","patch","update"]}])");
    auto problems = role_problems(role);
    CHECK(errors_of(problems).empty());
    CHECK(warnings_of(problems) ==
          std::vector<std::string>{
              "warning: $.rules: namespaces list/watch: not granted; needed for the node agent's MultiNetworkPolicy "
              "sync (when enabled)",
              "warning: $.rules: resourceclaims get: not granted; needed for network devices of pods with DRA claims",
              "warning: $.rules: resourceslices list: not granted; needed for network devices of pods with DRA claims",
              "warning: $.rules[0]: grants more than manifold needs: write access to network-attachment-definitions",
              "warning: $.rules[1]: grants more than manifold needs: write access to pods (only pods/status update is "
              "needed)"});
  }
  SECTION("a role without the DRA grants: warnings, since only pods with claims need them") {
    role["rules"].erase(role["rules"].end() - 2, role["rules"].end());
    auto problems = role_problems(role);
    CHECK(errors_of(problems).empty());
    CHECK(
        warnings_of(problems) ==
        std::vector<std::string>{
            "warning: $.rules: resourceclaims get: not granted; needed for network devices of pods with DRA claims",
            "warning: $.rules: resourceslices list: not granted; needed for network devices of pods with DRA claims"});
  }
  SECTION("write access to DRA objects") {
    role["rules"].push_back(
        Json::parse(R"({"apiGroups":["resource.k8s.io"],"resources":["resourceclaims"],"verbs":["update"]})"));
    CHECK(
        warnings_of(role_problems(role)) ==
        std::vector<std::string>{"warning: $.rules[8]: grants more than manifold needs: write access to DRA objects"});
  }
  SECTION("patch on pods, NAD writes, secrets") {
    role["rules"].push_back(Json::parse(R"({"apiGroups":[""],"resources":["pods"],"verbs":["patch"]})"));
    role["rules"].push_back(
        Json::parse(R"({"apiGroups":["k8s.cni.cncf.io"],"resources":["network-attachment-definitions"],
                        "verbs":["create","delete"]})"));
    role["rules"].push_back(Json::parse(R"({"apiGroups":[""],"resources":["secrets"],"verbs":["get"]})"));
    auto problems = role_problems(role);
    CHECK(errors_of(problems).empty());
    CHECK(warnings_of(problems) ==
          std::vector<std::string>{
              "warning: $.rules[8]: grants more than manifold needs: write access to pods (only pods/status update is "
              "needed)",
              "warning: $.rules[9]: grants more than manifold needs: write access to network-attachment-definitions",
              "warning: $.rules[10]: grants more than manifold needs: access to secrets"});
  }
  SECTION("aggregated roles are not checked") {
    role.erase("rules");
    role["aggregationRule"] = Json::parse(R"({"clusterRoleSelectors":[]})");
    CHECK(role_problems(role).empty());
  }
}

TEST_CASE("only manifold's ClusterRoles are checked", "[validate]") {
  auto reports = validate_manifest_text(R"(kind: ClusterRole
metadata: {name: view}
rules: []
---
kind: ClusterRole
metadata: {name: cni-role, labels: {app: manifold}}
rules: []
---
kind: ClusterRole
metadata: {name: manifold-agent}
)",
                                        false);
  REQUIRE(reports.size() == 3);
  CHECK_FALSE(reports[0].checked);
  CHECK(reports[0].problems.empty());
  CHECK(reports[1].checked);
  CHECK(errors_of(reports[1].problems).size() == 5);
  CHECK(reports[2].checked);
  CHECK(errors_of(reports[2].problems).size() == 5);
  CHECK(is_manifold_cluster_role(shipped_role()));
}

TEST_CASE("the shipped agent DaemonSet is valid, and so are its documented alternatives", "[validate]") {
  auto reports = validate_manifest_text(kAgentDaemonSet, false);
  REQUIRE(reports.size() == 1);
  CHECK(reports[0].label == "DaemonSet kube-system/manifold");
  CHECK(reports[0].problems.empty());
  Json ds = agent_daemonset();
  Json& c = agent_container(ds);
  SECTION("--node-name instead of NODE_NAME") {
    c.erase("env");
    c["args"] = Json::array({"--node-name", "node-1"});
  }
  SECTION("NET_ADMIN and SYS_ADMIN instead of privileged") {
    c["securityContext"] = Json::parse(R"({"capabilities":{"add":["NET_ADMIN","CAP_SYS_ADMIN"]}})");
  }
  SECTION("one netns mount, Bidirectional, from a parent directory") {
    c["volumeMounts"].erase(4);
    c["volumeMounts"][3] = Json::parse(R"({"name":"run","mountPath":"/run/","mountPropagation":"Bidirectional"})");
    pod_spec(ds)["volumes"].push_back(Json::parse(R"({"name":"run","hostPath":{"path":"/run"}})"));
  }
  SECTION("the cache mounted exactly, directories from flags") {
    c["command"] = Json::array({"/usr/bin/manifold", "agent"});
    c["args"] = Json::array({"--cni-dir", "/data/cni", "--bin-dir=/usr/libexec/cni/"});
    c["volumeMounts"][0] = Json::parse(R"({"name":"bin","mountPath":"/usr/libexec/cni"})");
    c["volumeMounts"][2] = Json::parse(R"({"name":"state","mountPath":"/data/cni"})");
    pod_spec(ds)["volumes"].push_back(Json::parse(R"({"name":"bin","hostPath":{"path":"/usr/libexec/cni"}})"));
    pod_spec(ds)["volumes"].push_back(Json::parse(R"({"name":"state","hostPath":{"path":"/data"}})"));
    c["volumeMounts"][2]["subPath"] = "cni";
  }
  SECTION("the config directory mounted elsewhere") {
    c["command"][4] = "--conf-dir=/host/etc/cni/net.d";
    c["volumeMounts"][1]["mountPath"] = "/host/etc/cni/net.d";
  }
  CHECK(daemonset_problems(ds).empty());
}

TEST_CASE("each missing agent DaemonSet requirement is an error", "[validate]") {
  Json ds = agent_daemonset();
  Json& c = agent_container(ds);
  std::vector<std::string> expected;
  SECTION("NODE_NAME") {
    c["env"][0]["valueFrom"]["fieldRef"]["fieldPath"] = "metadata.name";
    expected = {kC +
                ".env: needs NODE_NAME from fieldRef.fieldPath spec.nodeName (or --node-name): the agent "
                "watches its node's pods"};
  }
  SECTION("hostNetwork") {
    pod_spec(ds).erase("hostNetwork");
    expected = {
        "$.spec.template.spec.hostNetwork: must be true: the agent runs the delegates in the node's network "
        "namespace, as the runtime does"};
  }
  SECTION("the cache mount") {
    c["volumeMounts"].erase(2);
    expected = {kC +
                ".volumeMounts: mounts nothing at /var/lib/cni/manifold (manifold's cache, --cni-dir): mount "
                "the host's /var/lib/cni/manifold at the same path"};
  }
  SECTION("the bin mount") {
    c["volumeMounts"].erase(0);
    expected = {kC +
                ".volumeMounts: mounts nothing at /opt/cni/bin (the CNI plugin directory, --bin-dir): mount the "
                "host's /opt/cni/bin at the same path"};
  }
  SECTION("the conf mount") {
    c["volumeMounts"].erase(1);
    expected = {kC +
                ".volumeMounts: mounts nothing at /etc/cni/net.d (the CNI config directory, --conf-dir): mount "
                "the host's /etc/cni/net.d at the same path"};
  }
  SECTION("a mount that is not a hostPath") {
    pod_spec(ds)["volumes"][2] = Json::parse(R"({"name":"cni-state","emptyDir":{}})");
    expected = {kC + ".volumeMounts[2]: must mount a hostPath volume: the agent uses the node's /var/lib/cni/manifold"};
  }
  SECTION("both netns mounts") {
    c["volumeMounts"].erase(4);
    c["volumeMounts"].erase(3);
    expected = {kC +
                ".volumeMounts: mounts neither /run/netns nor /var/run/netns: the agent enters pods' network "
                "namespaces there (mount the host's at the same path with mountPropagation: HostToContainer)"};
  }
  SECTION("netns propagation") {
    c["volumeMounts"][3].erase("mountPropagation");
    c["volumeMounts"][4]["mountPropagation"] = "None";
    expected = {kC + ".volumeMounts[3].mountPropagation: " + kPropagation,
                kC + ".volumeMounts[4].mountPropagation: " + kPropagation};
  }
  SECTION("privileges") {
    c["securityContext"] = Json::parse(R"({"privileged":false,"capabilities":{"add":["NET_ADMIN"]}})");
    expected = {kC +
                ".securityContext: must be privileged or add NET_ADMIN and SYS_ADMIN: the delegates it runs "
                "need NET_ADMIN and SYS_ADMIN"};
  }
  SECTION("no command at all is not an agent") { c.erase("command"); }
  CHECK(errors_of(daemonset_problems(ds)) == expected);
}

TEST_CASE("agent DaemonSet mounts must be at the host's path", "[validate]") {
  Json ds = agent_daemonset();
  Json& c = agent_container(ds);
  std::vector<std::string> expected;
  SECTION("bin") {
    c["command"][3] = "--bin-dir=/host/opt/cni/bin";
    c["volumeMounts"][0]["mountPath"] = "/host/opt/cni/bin";
    expected = {kC +
                ".volumeMounts[0]: mounts the host's /opt/cni/bin at /host/opt/cni/bin: mount it at the same "
                "path, the cache records host paths (netns, CNI_PATH)"};
  }
  SECTION("cache") {
    pod_spec(ds)["volumes"][2]["hostPath"]["path"] = "/var/lib/cni/manifold";
    expected = {kC +
                ".volumeMounts[2]: mounts the host's /var/lib/cni/manifold at /var/lib/cni: mount it at the "
                "same path, the cache records host paths (netns, CNI_PATH)"};
  }
  SECTION("netns") {
    pod_spec(ds)["volumes"][4]["hostPath"]["path"] = "/run/netns";
    expected = {kC +
                ".volumeMounts[4]: mounts the host's /run/netns at /var/run/netns: mount it at the same path, "
                "the cache records host paths (netns, CNI_PATH)"};
  }
  CHECK(errors_of(daemonset_problems(ds)) == expected);
}

TEST_CASE("agent DaemonSet warnings; other DaemonSets are left alone", "[validate]") {
  Json ds = agent_daemonset();
  pod_spec(ds).erase("serviceAccountName");
  auto problems = daemonset_problems(ds);
  CHECK(errors_of(problems).empty());
  CHECK(warnings_of(problems) ==
        std::vector<std::string>{"warning: $.spec.template.spec.serviceAccountName: is not set: the agent then "
                                 "runs as the namespace's default service account, which must be bound to "
                                 "manifold's ClusterRole"});

  // The installer of earlier releases: valid, with hot-plug off.
  auto reports = validate_manifest_text(R"(apiVersion: apps/v1
kind: DaemonSet
metadata: {name: manifold, namespace: kube-system}
spec:
  template:
    spec:
      containers:
        - name: install
          command: [/manifold, install, --watch, --bin-dir=/host/opt/cni/bin]
          volumeMounts: [{name: cni-bin, mountPath: /host/opt/cni/bin}]
      volumes: [{name: cni-bin, hostPath: {path: /opt/cni/bin}}]
---
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: logger}
spec:
  template:
    metadata:
      annotations:
        k8s.v1.cni.cncf.io/networks: 'a/b/c'
    spec:
      containers:
        - name: fluent
          command: [/bin/fluent-bit, -c, /etc/manifold, agent.conf]
        - name: sidecar
          args: [--name, my-manifold, --agent]
)",
                                        false);
  REQUIRE(reports.size() == 2);
  CHECK(errors_of(reports[0].problems).empty());
  CHECK(warnings_of(reports[0].problems) ==
        std::vector<std::string>{"warning: $.spec.template.spec.containers[0]: runs manifold install, not manifold "
                                 "agent: hot-plug is off (annotation changes of running pods are not applied)"});
  // Neither container runs `manifold agent`; the pod-template annotation checks still run.
  auto logger = errors_of(reports[1].problems);
  REQUIRE(logger.size() == 1);
  CHECK(logger[0].rfind("$.spec.template.metadata.annotations[\"k8s.v1.cni.cncf.io/networks\"]: ", 0) == 0);
}
