// Implementation of the inspect views: results are decoded with the result codec (any version) to
// list IPs, MAC and default-route gateways; configs are parsed and redacted; scoping state is the
// attachment's `extra` object as the ADD path stored it.
#include "store/inspect_view.h"

#include "store/record_text.h"

#include <algorithm>
#include <sstream>

#include "cni/error.h"
#include "cni/result_codec.h"
#include "util/log_file.h"

namespace manifold::store {

namespace {

// What a cached result says about one attachment.
struct ResultSummary {
  bool readable = false;
  std::vector<std::string> ips;
  std::string mac;
  std::vector<std::string> gateways;
  Json json;  // parsed result, or null
};

ResultSummary summarize(const AttachmentRecord& a, const std::string& cni_version) {
  ResultSummary s;
  if (a.result.empty()) return s;
  try {
    s.json = Json::parse(a.result);
    auto r = cni::decode_result(s.json, cni_version);
    for (const auto& ip : r.ips) s.ips.push_back(ip.address);
    for (const auto& itf : r.interfaces)
      if (!itf.sandbox.empty() && itf.name == a.ifname) s.mac = itf.mac;
    s.gateways = cni::default_route_gateways(r);
    s.readable = true;
  } catch (const std::exception&) {
    s.readable = false;  // shown as "(unreadable result)"; the parsed JSON is kept when it parsed
  }
  return s;
}

std::string join(const std::vector<std::string>& v, const char* sep) {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : sep) + s;
  return out;
}

std::string or_dash(const std::string& s) { return s.empty() ? "-" : s; }

Json parsed_config(const std::string& text) {
  Json j = Json::parse(text, nullptr, false);
  if (j.is_discarded()) return "<not JSON>";
  return util::redact_secrets(j);
}

std::string scoping_keys(const Json& extra) {
  if (!extra.is_object() || extra.empty()) return "-";
  std::vector<std::string> keys;
  for (auto it = extra.begin(); it != extra.end(); ++it) keys.push_back(it.key());
  return join(keys, ",");
}

}  // namespace

std::string render_table(const std::vector<std::vector<std::string>>& rows) {
  std::vector<size_t> widths;
  for (const auto& row : rows)
    for (size_t i = 0; i < row.size(); ++i) {
      if (widths.size() <= i) widths.push_back(0);
      widths[i] = std::max(widths[i], row[i].size());
    }
  std::string out;
  for (const auto& row : rows) {
    std::string line;
    for (size_t i = 0; i < row.size(); ++i) {
      line += row[i];
      if (i + 1 < row.size()) line += std::string(widths[i] - row[i].size() + 2, ' ');
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out += line + "\n";
  }
  return out;
}

Json container_json(const ContainerRecord& record, bool netns_exists) {
  Json attachments = Json::array();
  for (const auto& a : record.attachments) {
    auto s = summarize(a, record.cni_version);
    attachments.push_back(Json{{"name", a.name},
                               {"ifname", a.ifname},
                               {"clusterNetwork", a.cluster_network},
                               {"ips", s.ips},
                               {"mac", s.mac},
                               {"gateways", s.gateways},
                               {"config", parsed_config(a.config)},
                               {"result", s.json},
                               {"scoping", attachment_extra_json(a)}});
  }
  return Json{{"containerId", record.container_id},    {"network", record.network}, {"netns", record.netns},
              {"netnsExists", netns_exists},           {"ifname", record.ifname},   {"cniVersion", record.cni_version},
              {"attachments", std::move(attachments)}, {"state", record.extra}};
}

Json list_json(const std::vector<ContainerEntry>& entries) {
  Json out = Json::array();
  for (const auto& e : entries) {
    if (!e.record) {
      out.push_back(Json{{"containerId", e.key.container_id},
                         {"network", e.key.network},
                         {"ifname", e.key.ifname},
                         {"error", e.error}});
      continue;
    }
    Json attachments = Json::array();
    for (const auto& a : e.record->attachments) {
      auto s = summarize(a, e.record->cni_version);
      attachments.push_back(Json{{"name", a.name}, {"ifname", a.ifname}, {"ips", s.ips}});
    }
    out.push_back(Json{{"containerId", e.key.container_id},
                       {"network", e.record->network},
                       {"ifname", e.record->ifname},
                       {"netns", e.record->netns},
                       {"netnsExists", e.netns_exists},
                       {"cniVersion", e.record->cni_version},
                       {"attachments", std::move(attachments)}});
  }
  return out;
}

std::string list_table(const std::vector<ContainerEntry>& entries, const std::string& cache_dir) {
  if (entries.empty()) return "no containers in " + cache_dir + "\n";
  std::vector<std::vector<std::string>> rows = {
      {"CONTAINER", "NETWORK", "IFNAME", "NETNS", "STATE", "INTERFACES", "ATTACHMENTS"}};
  for (const auto& e : entries) {
    std::string id = e.key.container_id.substr(0, 12);
    if (!e.record) {
      rows.push_back({id, or_dash(e.key.network), or_dash(e.key.ifname), "-", "unreadable: " + e.error, "-", "-"});
      continue;
    }
    std::vector<std::string> ifnames, names;
    for (const auto& a : e.record->attachments) {
      ifnames.push_back(a.ifname);
      names.push_back(a.name.empty() ? "?" : a.name);
    }
    rows.push_back({id, or_dash(e.record->network), or_dash(e.record->ifname), or_dash(e.record->netns),
                    e.netns_exists ? "netns present" : "netns gone", or_dash(join(ifnames, ",")),
                    or_dash(join(names, ","))});
  }
  return render_table(rows);
}

std::string container_text(const ContainerRecord& record, bool netns_exists) {
  std::ostringstream os;
  os << "container:  " << record.container_id << "\n"
     << "network:    " << or_dash(record.network) << "\n"
     << "netns:      " << or_dash(record.netns) << (netns_exists ? "" : " (gone)") << "\n"
     << "ifname:     " << or_dash(record.ifname) << "\n"
     << "cniVersion: " << or_dash(record.cni_version) << "\n\n";
  std::vector<std::vector<std::string>> rows = {{"IFNAME", "NETWORK", "CLUSTER", "IPS", "MAC", "GATEWAYS", "SCOPING"}};
  for (const auto& a : record.attachments) {
    auto s = summarize(a, record.cni_version);
    std::string ips = !a.delegate_started ? "(never started)"
                      : a.result.empty()  ? "(no result)"
                      : s.readable        ? or_dash(join(s.ips, ","))
                                          : "(unreadable result)";
    rows.push_back({or_dash(a.ifname), or_dash(a.name), a.cluster_network ? "yes" : "no", ips, or_dash(s.mac),
                    or_dash(join(s.gateways, ",")), scoping_keys(attachment_extra_json(a))});
  }
  os << render_table(rows);
  for (const auto& a : record.attachments) {
    const Json state = attachment_extra_json(a);
    if (!state.is_object() || state.empty()) continue;
    os << "\nscoping state of " << or_dash(a.ifname) << ":\n" << state.dump(2) << "\n";
  }
  if (record.extra.is_object() && !record.extra.empty()) os << "\ncontainer state:\n" << record.extra.dump(2) << "\n";
  return os.str();
}

}  // namespace manifold::store
