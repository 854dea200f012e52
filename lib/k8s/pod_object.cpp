// Implementation of the defensive Pod reading: shape checks with messages naming the pod and field.
#include "k8s/pod_object.h"

#include "cni/error.h"
#include "k8s/selection.h"
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

void check_string(const Json& meta, const char* key, const std::string& ns, const std::string& name) {
  auto it = meta.find(key);
  if (it != meta.end() && !it->is_null() && !it->is_string())
    fail(ns, name, std::string("metadata.") + key + " is a JSON " + it->type_name() + ", not a string");
}

void check_equal(const Json& meta, const char* key, const std::string& want, const std::string& ns,
                 const std::string& name) {
  auto it = meta.find(key);
  if (it == meta.end() || it->is_null()) return;
  if (it->get_ref<const std::string&>() != want)
    fail(ns, name, std::string("metadata.") + key + " is \"" + shown_key(it->get<std::string>()) + "\"");
}

}  // namespace

void validate_pod_object(const Json& pod, const std::string& ns, const std::string& name) {
  if (!pod.is_object()) fail(ns, name, std::string("the pod is a JSON ") + pod.type_name() + ", not an object");
  auto meta = pod.find("metadata");
  if (meta == pod.end() || !meta->is_object())
    fail(ns, name,
         meta == pod.end() ? std::string("metadata is missing")
                           : std::string("metadata is a JSON ") + meta->type_name() + ", not an object");
  for (const char* key : {"name", "namespace", "uid", "resourceVersion"}) check_string(*meta, key, ns, name);
  check_equal(*meta, "name", name, ns, name);
  check_equal(*meta, "namespace", ns, ns, name);
  auto ann = meta->find("annotations");
  if (ann == meta->end() || ann->is_null()) return;
  if (!ann->is_object())
    fail(ns, name, std::string("metadata.annotations is a JSON ") + ann->type_name() + ", not an object");
  for (const auto& [key, value] : ann->items())
    if (!value.is_string())
      fail(ns, name, "annotation " + shown_key(key) + " is a JSON " + value.type_name() + ", not a string");
}

std::string pod_metadata_string(const Json& pod, const char* key) {
  if (!pod.is_object()) return "";
  auto meta = pod.find("metadata");
  if (meta == pod.end() || !meta->is_object()) return "";
  auto v = meta->find(key);
  return v != meta->end() && v->is_string() ? v->get<std::string>() : std::string();
}

std::string pod_annotation_value(const Json& pod, const std::string& key) {
  if (!pod.is_object()) return "";
  auto meta = pod.find("metadata");
  if (meta == pod.end() || !meta->is_object()) return "";
  auto ann = meta->find("annotations");
  if (ann == meta->end() || !ann->is_object()) return "";
  auto v = ann->find(key);
  return v != ann->end() && v->is_string() ? v->get<std::string>() : std::string();
}

}  // namespace manifold::k8s
