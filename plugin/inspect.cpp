// Implementation of `manifold inspect`: loads cache records through store::FileCache (which
// validates IDs and treats the files as untrusted) and renders them with store/inspect_view.
#include "plugin/inspect.h"

#include <filesystem>
#include <iostream>

#include "cni/error.h"
#include "store/cache.h"
#include "store/inspect_view.h"

namespace manifold::plugin {

namespace {

bool netns_exists(const std::string& path) {
  std::error_code ec;
  return !path.empty() && std::filesystem::exists(path, ec);
}

// The cache entry `wanted` names: an exact ID or a unique prefix. Empty with a message on stderr
// when there is none or several.
std::string resolve_id(store::FileCache& cache, const std::string& wanted) {
  auto ids = cache.list();
  std::vector<std::string> matches;
  for (const auto& id : ids) {
    if (id == wanted) return id;
    if (id.rfind(wanted, 0) == 0) matches.push_back(id);
  }
  if (matches.size() == 1) return matches.front();
  if (matches.empty()) {
    std::cerr << "manifold inspect: no cache entry for container " << wanted << " in " << cache.dir().string() << "\n";
  } else {
    std::cerr << "manifold inspect: " << wanted << " matches " << matches.size() << " containers; give more of the ID\n";
  }
  return {};
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
      std::vector<store::ContainerEntry> entries;
      for (const auto& id : cache.list()) {
        store::ContainerEntry e;
        e.container_id = id;
        try {
          e.record = cache.load(id);
          if (!e.record) continue;  // removed since list()
          e.netns_exists = netns_exists(e.record->netns);
        } catch (const cni::CniError& err) {
          e.error = err.msg();
        }
        entries.push_back(std::move(e));
      }
      if (options.json) std::cout << store::list_json(entries).dump(2) << "\n";
      else std::cout << store::list_table(entries, options.cni_dir);
      return 0;
    }
    std::string id = resolve_id(cache, options.container_id);
    if (id.empty()) return 1;
    auto record = cache.load(id);
    if (!record) {
      std::cerr << "manifold inspect: the cache entry for " << id << " was removed meanwhile\n";
      return 1;
    }
    bool exists = netns_exists(record->netns);
    if (options.json) std::cout << store::container_json(*record, exists).dump(2) << "\n";
    else std::cout << store::container_text(*record, exists);
    return 0;
  } catch (const cni::CniError& e) {
    std::cerr << "manifold inspect: " << e.msg() << "\n";
    return 1;
  }
}

}  // namespace manifold::plugin
