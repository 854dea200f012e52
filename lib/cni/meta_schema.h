// The schema of the meta-plugin config: one table of its keys (JSON type, bounds, how the value is
// stored into MetaConfig, extra rules) that both readers of the config walk. parse_meta_config walks
// it with a throwing report (the first problem is CNI error 7), `manifold validate` with a collecting
// one (every problem with its JSON path). The two differ only where the table says so:
//  - wording: each rule carries the thrown text ("invalid config: key \"x\" must be a boolean") and
//    the validation message ("must be a boolean (true or false)");
//  - offline rules, made only when collecting: cniVersion is supported, `type` is a non-empty string,
//    logLevel is a known level, capabilities hold booleans, delegates are full network configs,
//    `prevResult`/`args` are objects, the scoping checker. A CNI call leaves these to the version
//    dispatcher, the log setup (an unknown level is flagged, not fatal) and the delegates themselves.
// Defaults are MetaConfig's member initialisers: a key that is absent or null keeps them.
#pragma once

#include <span>
#include <string>
#include <string_view>

#include "cni/config_reader.h"
#include "cni/config_validate.h"
#include "cni/netconf.h"

namespace manifold::cni {

/// The JSON type a meta-config key must have.
enum class MetaType {
  String,          ///< a string
  NonEmptyString,  ///< a non-empty string
  Bool,            ///< true or false
  Int,             ///< an integer in [lo, hi]
  StringList,      ///< a list of strings
  Object,          ///< an object
  Section,         ///< an object whose keys are `fields` (others are ignored, with a warning)
  Custom,          ///< checked and stored by `rule` alone
};

class MetaWalk;

/// One key of the meta-plugin config.
struct MetaField {
  std::string_view key;                                       ///< the JSON key
  MetaType type;                                              ///< the JSON type it must have
  int lo = 0;                                                 ///< lowest value (Int)
  int hi = 0;                                                 ///< highest value (Int)
  void (*store)(MetaConfig&, const Json&) = nullptr;          ///< stores a value of the right type
  void (*rule)(const Json& value, MetaWalk& walk) = nullptr;  ///< further rules, after the type check
  std::span<const MetaField> fields = {};                     ///< the keys of a Section
  bool offline = false;                                       ///< only `manifold validate` checks the key
};

/// Every key of the meta-plugin config, in the order they are checked.
std::span<const MetaField> meta_fields();

/// The state of one walk of the schema, handed to the rules of the fields.
class MetaWalk {
 public:
  /// A walk of `config` at JSON `path` into `out`; `in_list` when the config is a plugin of a
  /// conflist (the list carries cniVersion and name); `scoping` checks `mesh`/`sourceRouting` offline.
  MetaWalk(const Json& config, const std::string& path, ProblemReport& report, MetaConfig& out, bool in_list,
           const ScopingChecker* scoping);

  /// Walks every field, then checks that delegates or clusterNetwork is set.
  void run();

  MetaConfig& out;                      ///< where values are stored
  const bool in_list;                   ///< a plugin of a conflist
  const ScopingChecker* const scoping;  ///< the offline scoping checker, may be null

  /// True when the offline rules apply (problems are collected).
  bool offline() const { return root_.collecting(); }
  /// The reader of the object holding the key whose rule runs.
  const ConfigReader& reader() const { return *at_; }
  /// The key whose rule runs.
  std::string_view key() const { return key_; }
  /// The JSON path of the key whose rule runs.
  std::string path() const { return at_->path_of(key_); }
  /// Reports the key whose rule runs with the validation `message` and the thrown text
  /// "invalid config: key \"<name>\" <why>"; returns false.
  bool bad(const std::string& message, const std::string& why) const;

 private:
  void walk(const ConfigReader& r, std::span<const MetaField> fields);
  void walk_section(const MetaField& f, const Json& value);
  bool check_type(const MetaField& f, const Json& v) const;
  bool check_list(const Json& v) const;

  ConfigReader root_;
  const ConfigReader* at_;
  std::string_view key_;
};

}  // namespace manifold::cni
