// Implementation of the Pod decoder: shape checks with messages naming the pod and the field, the
// typed metadata, and the networks annotation parsed once.
#include "k8s/pod.h"

#include <utility>

#include "util/utf8.h"

namespace manifold::k8s {
namespace {

[[noreturn]] void fail(const std::string& ns, const std::string& name, const std::string& what) {
  throw cni::CniError(cni::ErrorCode::Decoding, util::sanitize_utf8("Kubernetes API answer for pod " + ns + "/" + name +
                                                                    " is malformed: " + what));
}

std::string shown_key(const std::string& key) {
  std::string out = key.substr(0, 100);
  return key.size() > 100 ? out + "..." : out;
}

/// metadata.<key> as a string: nullopt when absent or null, a decoding error for another type.
std::optional<std::string> string_field(const Json& meta, const char* key, const std::string& ns,
                                        const std::string& name) {
  auto it = meta.find(key);
  if (it == meta.end() || it->is_null()) return std::nullopt;
  if (!it->is_string())
    fail(ns, name, std::string("metadata.") + key + " is a JSON " + it->type_name() + ", not a string");
  return it->get<std::string>();
}

void check_equal(const std::optional<std::string>& got, const char* key, const std::string& want, const std::string& ns,
                 const std::string& name) {
  if (got && *got != want) fail(ns, name, std::string("metadata.") + key + " is \"" + shown_key(*got) + "\"");
}

std::map<std::string, std::string> annotations_of(const Json& meta, const std::string& ns, const std::string& name) {
  std::map<std::string, std::string> out;
  auto ann = meta.find("annotations");
  if (ann == meta.end() || ann->is_null()) return out;
  if (!ann->is_object())
    fail(ns, name, std::string("metadata.annotations is a JSON ") + ann->type_name() + ", not an object");
  for (const auto& [key, value] : ann->items()) {
    if (!value.is_string())
      fail(ns, name, "annotation " + shown_key(key) + " is a JSON " + value.type_name() + ", not a string");
    out.emplace(key, value.get<std::string>());
  }
  return out;
}

const Json& metadata_of(const Json& object, const std::string& ns, const std::string& name) {
  if (!object.is_object()) fail(ns, name, std::string("the pod is a JSON ") + object.type_name() + ", not an object");
  auto meta = object.find("metadata");
  if (meta == object.end() || !meta->is_object())
    fail(ns, name,
         meta == object.end() ? std::string("metadata is missing")
                              : std::string("metadata is a JSON ") + meta->type_name() + ", not an object");
  return *meta;
}

/// The pod of `object`, named `ns`/`name` in messages and the default namespace of its networks.
Pod decoded(Json object, const std::string& ns, const std::string& name) {
  Pod pod;
  const Json& meta = metadata_of(object, ns, name);
  pod.namespace_ = ns;
  pod.name = name;
  pod.uid = string_field(meta, "uid", ns, name).value_or("");
  pod.resource_version = string_field(meta, "resourceVersion", ns, name).value_or("");
  pod.annotations = annotations_of(meta, ns, name);
  try {
    pod.networks = parse_networks_annotation(pod.annotation(kNetworksAnnotation), ns);
  } catch (const cni::CniError& e) {
    pod.networks_error = e;
  }
  pod.object = std::move(object);
  return pod;
}

}  // namespace

const std::string& Pod::annotation(std::string_view key) const {
  static const std::string kNone;
  auto it = annotations.find(std::string(key));
  return it == annotations.end() ? kNone : it->second;
}

const std::vector<SelectionElement>& Pod::selected_networks() const {
  if (networks_error) throw *networks_error;
  return networks;
}

bool Pod::is_static() const {
  const std::string& source = annotation(kConfigSourceAnnotation);
  return !source.empty() && source != "api";
}

Pod decode_pod(Json object, const std::string& ns, const std::string& name) {
  const Json& meta = metadata_of(object, ns, name);
  const auto got_name = string_field(meta, "name", ns, name);
  const auto got_ns = string_field(meta, "namespace", ns, name);
  for (const char* key : {"uid", "resourceVersion"}) string_field(meta, key, ns, name);  // every type before identity
  check_equal(got_name, "name", name, ns, name);
  check_equal(got_ns, "namespace", ns, ns, name);
  return decoded(std::move(object), ns, name);
}

Pod decode_pod(Json object) {
  const std::string ns = metadata_string(object, "namespace");
  const std::string name = metadata_string(object, "name");
  const Json& meta = metadata_of(object, ns, name);
  if (string_field(meta, "namespace", ns, name).value_or("").empty()) fail(ns, name, "metadata.namespace is missing");
  if (string_field(meta, "name", ns, name).value_or("").empty()) fail(ns, name, "metadata.name is missing");
  return decoded(std::move(object), ns, name);
}

std::string metadata_string(const Json& object, const char* key) {
  if (!object.is_object()) return "";
  auto meta = object.find("metadata");
  if (meta == object.end() || !meta->is_object()) return "";
  auto v = meta->find(key);
  return v != meta->end() && v->is_string() ? v->get<std::string>() : std::string();
}

}  // namespace manifold::k8s
