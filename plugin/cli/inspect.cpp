// Implementation of `manifold inspect`: loads cache records through store::FileCache (which
// validates IDs and treats the files as untrusted) and renders them with store/inspect_view.
#include "plugin/cli/inspect.h"

#include <filesystem>
#include <iostream>
#include <set>

#include "cni/error.h"
#include "store/cache.h"
#include "store/inspect_view.h"

namespace manifold::plugin {

namespace {

bool netns_exists(const std::string& path) {
  std::error_code ec;
  return !path.empty() && std::filesystem::exists(path, ec);
}

// The container `wanted` names: an exact ID or a unique prefix. Empty with a message on stderr
// when there is none or several.
std::string resolve_id(store::FileCache& cache, const std::string& wanted) {
  std::set<std::string> matches;
  for (const auto& key : cache.list()) {
    if (key.container_id == wanted) return wanted;
    if (key.container_id.rfind(wanted, 0) == 0) matches.insert(key.container_id);
  }
  if (matches.size() == 1) return *matches.begin();
  if (matches.empty()) {
    std::cerr << "manifold inspect: no cache entry for container " << wanted << " in " << cache.dir().string() << "\n";
  } else {
    std::cerr << "manifold inspect: " << wanted << " matches " << matches.size()
              << " containers; give more of the ID\n";
  }
  return {};
}

// The entries of `keys`, loaded; an unreadable one carries its error.
std::vector<store::ContainerEntry> load_entries(store::FileCache& cache, const std::vector<store::EntryKey>& keys) {
  std::vector<store::ContainerEntry> entries;
  for (const auto& key : keys) {
    store::ContainerEntry e;
    e.key = key;
    try {
      e.record = cache.load(key);
      if (!e.record) continue;  // removed since list()
      e.netns_exists = netns_exists(e.record->netns);
    } catch (const cni::CniError& err) {
      e.error = err.msg();
    }
    entries.push_back(std::move(e));
  }
  return entries;
}

}  // namespace

int run_inspect(const InspectOptions& options) {
  if (options.cni_dir.empty()) {
    std::cerr << "manifold inspect: --cni-dir must not be empty\n";
    return 2;
  }
  store::FileCache cache(options.cni_dir);
  try {
    if (options.container_id.empty()) {
      auto entries = load_entries(cache, cache.list());
      if (options.json)
        std::cout << store::list_json(entries).dump(2) << "\n";
      else
        std::cout << store::list_table(entries, options.cni_dir);
      return 0;
    }
    std::string id = resolve_id(cache, options.container_id);
    if (id.empty()) return 1;
    // Every entry of the container: one per network a runtime attached it to.
    Json all = Json::array();
    std::string text;
    for (const auto& e : load_entries(cache, cache.list(id))) {
      if (!e.record) {
        std::cerr << "manifold inspect: cache entry " << e.key.str() << " is unreadable: " << e.error << "\n";
        return 1;
      }
      if (options.json)
        all.push_back(store::container_json(*e.record, e.netns_exists));
      else
        text += (text.empty() ? "" : "\n") + store::container_text(*e.record, e.netns_exists);
    }
    if (options.json)
      std::cout << (all.size() == 1 ? all[0] : all).dump(2) << "\n";
    else
      std::cout << text;
    return 0;
  } catch (const cni::CniError& e) {
    std::cerr << "manifold inspect: " << e.msg() << "\n";
    return 1;
  }
}

}  // namespace manifold::plugin
