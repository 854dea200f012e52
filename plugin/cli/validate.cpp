// Implementation of `manifold validate`: reads each file (bounded), decides whether it is a config
// or a manifest, runs the lib/ validators and prints their findings.
#include "plugin/cli/validate.h"

#include <filesystem>
#include <iostream>

#include "cni/config_validate.h"
#include "cni/error.h"
#include "policy/policy_config.h"
#include "scoping/mesh_config.h"
#include "scoping/source_routing.h"
#include "util/error.h"
#include "util/file_reader.h"
#include "validate/manifest_validate.h"

namespace manifold::plugin {

namespace {

constexpr std::size_t kMaxInputBytes = 4u << 20;

bool has_extension(const std::string& file, std::initializer_list<const char*> exts) {
  std::string ext = std::filesystem::path(file).extension().string();
  for (const char* e : exts)
    if (ext == e) return true;
  return false;
}

// True when the text is a Kubernetes manifest rather than a CNI config.
bool looks_like_manifest(const std::string& file, const std::string& text) {
  if (has_extension(file, {".yaml", ".yml"})) return true;
  Json j = Json::parse(text, nullptr, false);
  if (j.is_discarded()) return !has_extension(file, {".conf", ".conflist", ".json"});
  return j.is_array() || (j.is_object() && j.contains("apiVersion") && j.contains("kind"));
}

// Checks the scoping objects: `mesh` with the firewall module's own parser, one key at a time so that
// every bad key is reported at its path, then as a whole. `sourceRouting` is only shape-checked by
// the config walker (it must be an object). `multiNetworkPolicy` with the policy module's reader.
void check_scoping(std::string_view key, const Json& value, const std::string& path, cni::Problems& out) {
  if (key == policy::kPolicyConfigKey) return policy::validate_policy_config(value, path, out);
  if (key != "mesh") return;
  bool bad = false;
  for (auto it = value.begin(); it != value.end(); ++it) {
    try {
      (void)scoping::parse_mesh_config(Json{{it.key(), it.value()}});
    } catch (const cni::CniError& e) {
      std::string msg = e.msg();
      std::string prefix = "invalid mesh." + it.key() + ": ";
      if (msg.rfind(prefix, 0) == 0) msg = msg.substr(prefix.size());
      out.push_back({cni::json_path_key(path, it.key()), msg, false});
      bad = true;
    }
  }
  if (bad) return;
  try {
    (void)scoping::parse_mesh_config(value);
  } catch (const cni::CniError& e) {
    out.push_back({path, e.msg(), false});
  }
}

// Prints one set of findings; returns true when it holds errors.
bool report(const std::string& where, const cni::Problems& problems, bool quiet) {
  bool errors = cni::has_errors(problems);
  for (const auto& p : problems)
    if (!p.warning || !quiet) std::cout << where << ": " << cni::format_problem(p) << "\n";
  if (!errors && !quiet) std::cout << where << ": ok\n";
  return errors;
}

}  // namespace

int run_validate(const ValidateOptions& options) {
  if (options.files.empty() && options.nad_files.empty()) {
    std::cerr << "manifold validate: give at least one config file or --nad file\n";
    return 2;
  }
  cni::ScopingChecker checker = check_scoping;
  bool invalid = false;
  bool unreadable = false;
  auto run = [&](const std::string& file, bool nads_only) {
    std::string text;
    try {
      text = util::read_file_bounded(file, kMaxInputBytes);
    } catch (const util::IoError& e) {
      std::cerr << "manifold validate: " << e.msg() << "\n";
      unreadable = true;
      return;
    }
    if (!nads_only && !looks_like_manifest(file, text)) {
      invalid |= report(file, cni::validate_config_text(text, checker), options.quiet);
      return;
    }
    try {
      for (const auto& r : validate::validate_manifest_text(text, nads_only, checker)) {
        if (!r.checked) {
          if (!options.quiet) std::cout << file << " [" << r.label << "]: skipped (kind not checked)\n";
          continue;
        }
        invalid |= report(file + " [" + r.label + "]", r.problems, options.quiet);
      }
    } catch (const cni::CniError& e) {
      invalid |= report(file, {cni::Problem{"$", e.msg(), false}}, options.quiet);
    }
  };
  for (const auto& f : options.files) run(f, false);
  for (const auto& f : options.nad_files) run(f, true);
  std::cout.flush();
  if (unreadable) return 2;
  return invalid ? 1 : 0;
}

}  // namespace manifold::plugin
