// Implementation of DRA resolution: the pod's claim names, each claim fetched once, each driver's
// slices on the node listed once and indexed by (pool, device), then the results mapped through the
// device attributes.
#include "kubelet/dra_devices.h"

#include <algorithm>
#include <map>
#include <utility>
#include <vector>

#include "cni/error.h"
#include "util/log.h"
#include "util/quote.h"

namespace manifold::kubelet {

namespace {

using cni::CniError;
using cni::ErrorCode;

const Json& list_at(const Json& j, std::initializer_list<const char*> path, const std::string& what) {
  static const Json kEmpty = Json::array();
  const Json* v = json_at(j, path);
  if (!v || v->is_null()) return kEmpty;
  if (!v->is_array()) throw CniError(ErrorCode::Decoding, what + " is not a list");
  return *v;
}

std::string q(const std::string& s) { return util::quote_bytes(s, 128); }

/// A network device of a slice: its ID and the resource it counts as ("" when the attribute is absent).
struct SliceDevice {
  std::string device_id;
  std::string resource_name;
};

class Resolver {
 public:
  Resolver(const Json& pod, DraApi& api)
      : pod_(pod),
        api_(api),
        ns_(json_string_at(pod, {"metadata", "namespace"})),
        node_(json_string_at(pod, {"spec", "nodeName"})) {}

  DeviceTable run();

 private:
  std::string claim_where(const std::string& claim) const { return "ResourceClaim " + q(ns_ + "/" + claim); }
  const Json& results_of(const std::string& claim);
  const SliceDevice* find(const std::string& driver, const std::string& pool, const std::string& device);
  void index_slices(const std::string& driver);
  void add_claim(const std::string& claim, DeviceTable& out);
  void add_extended(const Json& status, DeviceTable& out);

  const Json& pod_;
  DraApi& api_;
  std::string ns_, node_;
  std::map<std::string, Json> claims_;
  std::map<std::string, std::map<std::pair<std::string, std::string>, SliceDevice>> slices_;
};

const Json& Resolver::results_of(const std::string& claim) {
  auto it = claims_.find(claim);
  if (it == claims_.end()) it = claims_.emplace(claim, api_.get_resource_claim(ns_, claim)).first;
  const Json* results = json_at(it->second, {"status", "allocation", "devices", "results"});
  if (!results || !results->is_array())
    throw CniError(ErrorCode::DeviceUnavailable, claim_where(claim) + " has no device allocation");
  return *results;
}

void Resolver::index_slices(const std::string& driver) {
  auto& index = slices_[driver];
  const Json list = api_.list_resource_slices(node_, driver);
  const std::string what = "ResourceSlice list of driver " + q(driver);
  for (const Json& slice : list_at(list, {"items"}, what + " items")) {
    if (json_string_at(slice, {"spec", "driver"}) != driver) continue;
    const std::string pool = json_string_at(slice, {"spec", "pool", "name"});
    for (const Json& device : list_at(slice, {"spec", "devices"}, what + ": spec.devices")) {
      const Json* attributes = json_at(device, {"attributes"});
      if (!attributes) continue;
      SliceDevice d{json_string_at(*attributes, {kDraDeviceIdAttribute, "string"}),
                    json_string_at(*attributes, {kDraResourceNameAttribute, "string"})};
      if (!d.device_id.empty()) index[{pool, json_string_at(device, {"name"})}] = std::move(d);
    }
  }
}

const SliceDevice* Resolver::find(const std::string& driver, const std::string& pool, const std::string& device) {
  if (!slices_.count(driver)) index_slices(driver);
  const auto& index = slices_[driver];
  auto it = index.find({pool, device});
  return it == index.end() ? nullptr : &it->second;
}

void Resolver::add_claim(const std::string& claim, DeviceTable& out) {
  std::size_t added = 0;
  for (const Json& r : results_of(claim)) {
    const std::string device = json_string_at(r, {"device"});
    const SliceDevice* d = find(json_string_at(r, {"driver"}), json_string_at(r, {"pool"}), device);
    if (!d) {
      util::log_warning(claim_where(claim), ": device ", q(device), " is in no ResourceSlice of its driver on node ",
                        q(node_), " or has no ", kDraDeviceIdAttribute, " attribute; skipped");
      continue;
    }
    if (d->resource_name.empty()) continue;
    out[d->resource_name].push_back(d->device_id);
    ++added;
  }
  if (added == 0) util::log_warning(claim_where(claim), " allocated no network device; skipped");
}

void Resolver::add_extended(const Json& status, DeviceTable& out) {
  const std::string claim = json_string_at(status, {"resourceClaimName"});
  if (claim.empty()) throw CniError(ErrorCode::Decoding, "the pod's extendedResourceClaimStatus names no claim");
  std::map<std::string, std::vector<const Json*>> by_request;
  for (const Json& r : results_of(claim)) by_request[json_string_at(r, {"request"})].push_back(&r);
  for (const Json& m : list_at(status, {"requestMappings"}, "extendedResourceClaimStatus.requestMappings")) {
    const std::string request = json_string_at(m, {"requestName"}), resource = json_string_at(m, {"resourceName"});
    auto found = by_request.find(request);
    if (found == by_request.end())
      throw CniError(ErrorCode::DeviceUnavailable, "request " + q(request) + " not found in " + claim_where(claim));
    for (const Json* r : found->second) {
      const std::string device = json_string_at(*r, {"device"});
      const SliceDevice* d = find(json_string_at(*r, {"driver"}), json_string_at(*r, {"pool"}), device);
      if (!d)
        throw CniError(ErrorCode::DeviceUnavailable, claim_where(claim) + ": device " + q(device) +
                                                         " is in no ResourceSlice of its driver on node " + q(node_));
      if (d->resource_name.empty())
        throw CniError(ErrorCode::DeviceUnavailable,
                       "device " + q(device) + " has no " + kDraResourceNameAttribute + " attribute");
      if (d->resource_name != resource)
        throw CniError(ErrorCode::DeviceUnavailable,
                       "device " + q(device) + ": " + kDraResourceNameAttribute + " is " + q(d->resource_name) +
                           " but the extended resource of request " + q(request) + " is " + q(resource));
      out[resource].push_back(d->device_id);
    }
  }
}

std::vector<std::string> claim_names(const Json& pod) {
  std::vector<std::string> names;
  auto add = [&](const Json& entry, const char* what) {
    const Json* n = json_at(entry, {"resourceClaimName"});
    if (!n || n->is_null()) {
      util::log_verbose("pod ", what, " ", util::quote_bytes(json_string_at(entry, {"name"}), 64),
                        " names no claim; skipped");
      return;
    }
    if (!n->is_string() || n->get<std::string>().empty())
      throw CniError(ErrorCode::Decoding, std::string("pod ") + what + " has an invalid resourceClaimName");
    if (std::find(names.begin(), names.end(), n->get<std::string>()) == names.end())
      names.push_back(n->get<std::string>());
  };
  for (const Json& s : list_at(pod, {"status", "resourceClaimStatuses"}, "pod status.resourceClaimStatuses"))
    add(s, "status.resourceClaimStatuses entry");
  for (const Json& s : list_at(pod, {"spec", "resourceClaims"}, "pod spec.resourceClaims"))
    if (json_at(s, {"resourceClaimName"})) add(s, "spec.resourceClaims entry");
  return names;
}

DeviceTable Resolver::run() {
  DeviceTable out;
  for (const std::string& claim : claim_names(pod_)) add_claim(claim, out);
  if (const Json* ext = json_at(pod_, {"status", "extendedResourceClaimStatus"}); ext && !ext->is_null())
    add_extended(*ext, out);
  sort_device_table(out);
  return out;
}

}  // namespace

bool pod_has_resource_claims(const Json& pod) {
  auto non_empty = [&](std::initializer_list<const char*> path) {
    const Json* v = json_at(pod, path);
    return v && ((v->is_array() && !v->empty()) || v->is_object());
  };
  return non_empty({"status", "resourceClaimStatuses"}) || non_empty({"spec", "resourceClaims"}) ||
         non_empty({"status", "extendedResourceClaimStatus"});
}

DeviceTable dra_pod_devices(const Json& pod, DraApi& api) {
  Resolver resolver(pod, api);
  return resolver.run();
}

}  // namespace manifold::kubelet
