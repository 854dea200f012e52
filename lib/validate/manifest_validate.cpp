// Implementation of manifest validation: YAML/JSON loading into Json, NAD object checks with paths
// into the embedded spec.config, pod annotation checks through the ADD path's parser, and dispatch
// by kind (manifold's ClusterRole and agent DaemonSet go to validate/deploy_validate.h).
#include "validate/manifest_validate.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <regex>

#include "cni/error.h"
#include "k8s/nad_config.h"
#include "k8s/selection.h"
#include "validate/deploy_validate.h"

namespace manifold::validate {

namespace {

using cni::json_path_index;
using cni::json_path_key;
using cni::Problems;
using namespace manifest_detail;

constexpr int kMaxDepth = 64;

Json scalar_to_json(const YAML::Node& node) {
  const std::string& s = node.Scalar();
  if (node.Tag() != "?") return s;  // quoted or block scalars are strings
  if (s == "true" || s == "True" || s == "TRUE") return true;
  if (s == "false" || s == "False" || s == "FALSE") return false;
  if (s.empty() || s == "~" || s == "null" || s == "Null" || s == "NULL") return nullptr;
  static const std::regex integer("-?[0-9]{1,18}");
  static const std::regex decimal("-?[0-9]+\\.[0-9]+");
  if (std::regex_match(s, integer)) return std::stoll(s);
  if (std::regex_match(s, decimal)) return std::stod(s);
  return s;
}

Json yaml_to_json(const YAML::Node& node, int depth) {
  if (depth > kMaxDepth) throw cni::CniError(cni::ErrorCode::Decoding, "manifest is nested too deeply");
  switch (node.Type()) {
    case YAML::NodeType::Map: {
      Json out = Json::object();
      for (const auto& kv : node) {
        if (!kv.first.IsScalar()) throw cni::CniError(cni::ErrorCode::Decoding, "manifest has a non-scalar map key");
        out[kv.first.Scalar()] = yaml_to_json(kv.second, depth + 1);
      }
      return out;
    }
    case YAML::NodeType::Sequence: {
      Json out = Json::array();
      for (const auto& e : node) out.push_back(yaml_to_json(e, depth + 1));
      return out;
    }
    case YAML::NodeType::Scalar:
      return scalar_to_json(node);
    default:
      return nullptr;
  }
}

bool is_dns_label(const std::string& s) {
  static const std::regex label("[a-z0-9]([-a-z0-9]*[a-z0-9])?");
  return !s.empty() && s.size() <= 63 && std::regex_match(s, label);
}

bool is_dns_subdomain(const std::string& s) {
  static const std::regex sub("[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*");
  return !s.empty() && s.size() <= 253 && std::regex_match(s, sub);
}

void check_metadata(const Json& doc, Problems& out, bool name_is_label) {
  const Json* meta = find_path(doc, {"metadata"});
  if (!meta || !meta->is_object()) {
    add(out, "$.metadata", "must be an object with a name");
    return;
  }
  auto name = meta->find("name");
  if (name == meta->end() || !name->is_string() || name->get_ref<const std::string&>().empty()) {
    add(out, "$.metadata.name", "must be a non-empty string");
  } else if (!is_dns_subdomain(name->get<std::string>())) {
    add(out, "$.metadata.name", "must be a DNS-1123 subdomain (lower-case alphanumerics, '-' and '.')");
  } else if (name_is_label && !is_dns_label(name->get<std::string>())) {
    add(out, "$.metadata.name",
        "contains '.': pods cannot select it with the comma form of k8s.v1.cni.cncf.io/networks", true);
  }
  if (auto ns = meta->find("namespace"); ns != meta->end() && !ns->is_null()) {
    if (!ns->is_string() || !is_dns_label(ns->get<std::string>()))
      add(out, "$.metadata.namespace", "must be a DNS-1123 label");
  }
  if (auto ann = meta->find("annotations"); ann != meta->end() && !ann->is_null()) {
    if (!ann->is_object()) {
      add(out, "$.metadata.annotations", "must be a map of strings");
    } else {
      for (auto it = ann->begin(); it != ann->end(); ++it)
        if (!it.value().is_string()) add(out, json_path_key("$.metadata.annotations", it.key()), "must be a string");
    }
  }
}

void check_selection_scoping(const std::vector<k8s::SelectionElement>& elements, const std::string& path, Problems& out,
                             const cni::ScopingChecker& scoping) {
  for (size_t i = 0; i < elements.size(); ++i) {
    const Json& args = elements[i].cni_args;
    if (!args.is_object()) continue;
    std::string base = json_path_key(json_path_index(path, i), "cni-args");
    for (const char* key : {"mesh", "sourceRouting"}) {
      auto it = args.find(key);
      if (it == args.end() || it->is_null()) continue;
      if (!it->is_object())
        add(out, json_path_key(base, key), "must be an object");
      else if (scoping)
        scoping(key, *it, json_path_key(base, key), out);
    }
  }
}

std::string label_of(const Json& doc, size_t index) {
  std::string kind = string_at(doc, {"kind"});
  std::string name = string_at(doc, {"metadata", "name"});
  if (kind.empty()) return "document " + std::to_string(index + 1);
  std::string ns = string_at(doc, {"metadata", "namespace"});
  return kind + " " + (ns.empty() ? std::string() : ns + "/") + (name.empty() ? "?" : name);
}

}  // namespace

std::vector<Json> load_manifests(std::string_view text) {
  std::vector<Json> docs;
  auto first = text.find_first_not_of(" \t\r\n");
  if (first != std::string_view::npos && (text[first] == '{' || text[first] == '[')) {
    Json j = Json::parse(text, nullptr, false);
    if (!j.is_discarded()) {
      if (j.is_array()) {
        for (auto& e : j) docs.push_back(std::move(e));
      } else {
        docs.push_back(std::move(j));
      }
      return docs;
    }
  }
  try {
    for (const auto& node : YAML::LoadAll(std::string(text))) {
      if (node.IsNull()) continue;
      docs.push_back(yaml_to_json(node, 0));
    }
  } catch (const YAML::Exception& e) {
    throw cni::CniError(cni::ErrorCode::Decoding,
                        "not valid YAML or JSON: " + e.msg + " at line " + std::to_string(e.mark.line + 1));
  }
  return docs;
}

void validate_nad(const Json& nad, Problems& out, const cni::ScopingChecker& scoping) {
  if (!nad.is_object()) {
    add(out, "$", "must be an object");
    return;
  }
  if (string_at(nad, {"apiVersion"}) != "k8s.cni.cncf.io/v1")
    add(out, "$.apiVersion", "must be \"k8s.cni.cncf.io/v1\"");
  if (string_at(nad, {"kind"}) != "NetworkAttachmentDefinition")
    add(out, "$.kind", "must be \"NetworkAttachmentDefinition\"");
  size_t before = out.size();
  check_metadata(nad, out, true);
  if (const Json* rn = find_path(nad, {"metadata", "annotations", k8s::kResourceNameAnnotation});
      rn && rn->is_string() && rn->get_ref<const std::string&>().empty())
    add(out, json_path_key("$.metadata.annotations", k8s::kResourceNameAnnotation), "must not be empty");

  const Json* spec = find_path(nad, {"spec"});
  if (spec && !spec->is_null() && !spec->is_object()) {
    add(out, "$.spec", "must be an object");
    return;
  }
  const Json* config = spec ? find_path(*spec, {"config"}) : nullptr;
  if (!config || config->is_null() || (config->is_string() && config->get_ref<const std::string&>().empty())) {
    add(out, "$.spec.config",
        "is empty: the network is looked up by the NAD's name in the confDir of the node's manifold config", true);
    return;
  }
  if (!config->is_string()) {
    add(out, "$.spec.config", "must be a string holding the CNI config JSON");
    return;
  }
  if (config->get_ref<const std::string&>().size() > k8s::kMaxNadConfigBytes) {
    add(out, "$.spec.config", "is larger than 1 MiB");
    return;
  }
  Json conf = Json::parse(config->get<std::string>(), nullptr, false);
  if (conf.is_discarded()) {
    add(out, "$.spec.config", "is not valid JSON");
    return;
  }
  if (!conf.is_object()) {
    add(out, "$.spec.config", "must be a JSON object (a conf or conflist)");
    return;
  }
  cni::validate_network_config(conf, "$.spec.config", out, scoping);
  if (!conf.contains("name")) add(out, "$.spec.config.name", "is not set; the NAD name is used", true);
  bool found_errors =
      std::any_of(out.begin() + static_cast<long>(before), out.end(), [](const cni::Problem& p) { return !p.warning; });
  if (found_errors) return;
  // Cross-check with the ADD path's own reading of the object.
  try {
    (void)k8s::nad_delegate_config(nad);
  } catch (const cni::CniError& e) {
    add(out, "$.spec.config", e.msg());
  }
}

void validate_pod_annotations(const Json& metadata, const std::string& metadata_path, const std::string& pod_namespace,
                              Problems& out, const cni::ScopingChecker& scoping) {
  if (!metadata.is_object()) return;
  auto ann = metadata.find("annotations");
  if (ann == metadata.end() || !ann->is_object()) return;
  std::string apath = json_path_key(metadata_path, "annotations");
  std::string ns = pod_namespace.empty() ? "default" : pod_namespace;
  if (auto it = ann->find(std::string(k8s::kNetworksAnnotation)); it != ann->end()) {
    std::string path = json_path_key(apath, k8s::kNetworksAnnotation);
    if (!it->is_string()) {
      add(out, path, "must be a string");
    } else {
      try {
        auto elements = k8s::parse_networks_annotation(it->get<std::string>(), ns);
        if (elements.empty()) add(out, path, "selects no network", true);
        check_selection_scoping(elements, path, out, scoping);
      } catch (const cni::CniError& e) {
        add(out, path, e.msg());
      }
    }
  }
  if (auto it = ann->find(std::string(k8s::kDefaultNetworkAnnotation)); it != ann->end()) {
    std::string path = json_path_key(apath, k8s::kDefaultNetworkAnnotation);
    if (!it->is_string()) {
      add(out, path, "must be a string");
    } else {
      try {
        auto element = k8s::parse_default_network_annotation(it->get<std::string>(), "kube-system");
        check_selection_scoping({element}, path, out, scoping);
      } catch (const cni::CniError& e) {
        add(out, path, e.msg());
      }
    }
  }
}

std::vector<ManifestReport> validate_manifest_text(std::string_view text, bool nads_only,
                                                   const cni::ScopingChecker& scoping) {
  std::vector<ManifestReport> reports;
  auto docs = load_manifests(text);
  if (docs.empty()) {
    reports.push_back({"file", {cni::Problem{"$", "holds no document", false}}});
    return reports;
  }
  for (size_t i = 0; i < docs.size(); ++i) {
    const Json& doc = docs[i];
    ManifestReport r{label_of(doc, i), {}};
    std::string kind = string_at(doc, {"kind"});
    std::string ns = string_at(doc, {"metadata", "namespace"});
    if (kind == "NetworkAttachmentDefinition" || (nads_only && kind.empty())) {
      validate_nad(doc, r.problems, scoping);
    } else if (nads_only) {
      add(r.problems, "$.kind", "must be \"NetworkAttachmentDefinition\" (got \"" + kind + "\")");
    } else if (kind == "Pod") {
      check_metadata(doc, r.problems, false);
      if (const Json* meta = find_path(doc, {"metadata"}))
        validate_pod_annotations(*meta, "$.metadata", ns, r.problems, scoping);
    } else if (kind == "Deployment" || kind == "StatefulSet" || kind == "DaemonSet" || kind == "ReplicaSet" ||
               kind == "Job") {
      if (const Json* meta = find_path(doc, {"spec", "template", "metadata"}))
        validate_pod_annotations(*meta, "$.spec.template.metadata", ns, r.problems, scoping);
      if (kind == "DaemonSet") validate_agent_daemonset(doc, r.problems);
    } else if (kind == "ClusterRole" && is_manifold_cluster_role(doc)) {
      validate_cluster_role(doc, r.problems);
    } else if (kind == "CronJob") {
      if (const Json* meta = find_path(doc, {"spec", "jobTemplate", "spec", "template", "metadata"}))
        validate_pod_annotations(*meta, "$.spec.jobTemplate.spec.template.metadata", ns, r.problems, scoping);
    } else {
      r.checked = false;
    }
    reports.push_back(std::move(r));
  }
  return reports;
}

}  // namespace manifold::validate
