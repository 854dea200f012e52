// Accessors for cached attachments and the ADD result rendering. Every parse here runs with
// exceptions off and a nesting bound, so corrupt cache text surfaces as a CniError the verbs can
// report or work around.
#include "engine/cached.h"

#include <vector>

#include "cni/delegate_config.h"
#include "cni/error.h"
#include "cni/netconf.h"
#include "cni/result_codec.h"
#include "util/json.h"
#include "util/json_parse.h"

namespace manifold::engine {

namespace {

using cni::CniError;
using cni::ErrorCode;

/// "network "name" (ifname)", for messages.
std::string describe(const store::AttachmentRecord& a) { return "network \"" + a.name + "\" (" + a.ifname + ")"; }

}  // namespace

std::string cached_cni_args(const store::AttachmentRecord& a, const std::string& fallback) {
  if (a.cni_args.is_null()) return fallback;
  if (!a.cni_args.is_string())
    throw CniError(ErrorCode::Decoding, "cached \"cniArgs\" of " + describe(a) + " is not a string but " +
                                            std::string(a.cni_args.type_name()));
  return a.cni_args.get<std::string>();
}

bool has_usable_config(const store::AttachmentRecord& a) {
  Json conf = util::parse_json_bounded(a.config);
  if (conf.is_discarded() || !conf.is_object()) return false;
  try {
    cni::validate_delegate_shape(conf, "cached delegate config");
  } catch (const CniError&) {
    return false;
  }
  return true;
}

cni::Result decode_attachment_result(const store::AttachmentRecord& a) {
  Json conf = util::parse_json_bounded(a.config);
  if (conf.is_discarded() || !conf.is_object())
    throw CniError(ErrorCode::Decoding, "cached delegate config of " + describe(a) + " is not a JSON object");
  return cni::decode_result_text(a.result, cni::delegate_version(conf));
}

std::string render_result(const store::ContainerRecord& record, const std::string& version, bool all) {
  std::vector<cni::Result> results;
  results.reserve(record.attachments.size());
  for (const auto& a : record.attachments)  // only the results rendered are decoded
    results.push_back(a.cluster_network || all ? decode_attachment_result(a) : cni::Result{});
  return render_result(record, results, version, all);
}

std::string render_result(const store::ContainerRecord& record, const std::vector<cni::Result>& results,
                          const std::string& version, bool all) {
  if (results.size() != record.attachments.size())
    throw CniError(ErrorCode::Internal, "render_result: " + std::to_string(results.size()) + " result(s) for " +
                                            std::to_string(record.attachments.size()) + " attachment(s)");
  std::vector<cni::Result> chosen;
  bool has_cluster = false;
  for (std::size_t i = 0; i < record.attachments.size(); ++i) {
    const auto& a = record.attachments[i];
    has_cluster = has_cluster || a.cluster_network;
    if (a.cluster_network || all) chosen.push_back(results[i]);
  }
  if (!has_cluster || chosen.empty())
    throw CniError(ErrorCode::Internal, "container " + record.container_id + " has no cluster network attachment (" +
                                            std::to_string(record.attachments.size()) +
                                            " attachment(s)); there is no result to report");
  cni::Result out = all ? cni::merge_results(chosen) : chosen.front();
  return cni::encode_result(out, version).dump() + "\n";
}

}  // namespace manifold::engine
