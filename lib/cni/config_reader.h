// The one reader of config objects. A config is read in one of two modes: a CNI call stops at the
// first bad field (CniError InvalidConfig), `manifold validate` records every problem with its JSON
// path and goes on. `ProblemReport` is that choice; `ConfigReader` reads the fields of one JSON
// object through it: lookups where null means "not set", the paths and names of fields, unknown-key
// rejection for strict sections, and typed reads worded for sections (`mesh`, `sourceRouting`):
//   invalid mesh.inboundPort: 70000 is not a port number (1-65535)
// A reader whose config has other wording (the meta-plugin config) reports through `fail` with its
// own texts. Adopting it in a section parser:
//   ProblemReport report;                                  // throws at the first problem
//   ConfigReader r(json, "$.sourceRouting", "sourceRouting", report);
//   r.reject_unknown(kKnownKeys);
//   if (auto v = r.read_int("table", 0, INT_MAX)) cfg.table = *v;
//   if (const Json* v = r.get("gateways"); v && !v->is_array()) r.fail("gateways", r.echo(*v) + " is not a list");
// In collect mode `fail` returns, so a reader must not use a value it has just reported.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "util/json.h"

namespace manifold::cni {

/// One finding of a validation.
struct Problem {
  std::string path;      ///< JSON path, "$" for the document, e.g. "$.delegates[1].type"
  std::string message;   ///< what is wrong, e.g. "must be a non-empty string"
  bool warning = false;  ///< true for advice that does not make the config invalid
};

/// Everything found in one document.
using Problems = std::vector<Problem>;

/// `base` + ".key", or `base` + "[\"key\"]" when the key is not a plain identifier.
std::string json_path_key(const std::string& base, std::string_view key);

/// `base` + "[index]".
std::string json_path_index(const std::string& base, std::size_t index);

/// Where the problems of a read go: thrown at the first (a CNI call) or collected (validation).
class ProblemReport {
 public:
  /// A report that throws CniError(InvalidConfig) at the first error and drops warnings.
  ProblemReport() = default;
  /// A report that appends every problem to `out`.
  explicit ProblemReport(Problems& out) : out_(&out) {}

  /// True when problems are collected rather than thrown.
  bool collecting() const { return out_ != nullptr; }
  /// The collected problems (collecting() only).
  Problems& problems() const { return *out_; }
  /// An error of the field at JSON `path`: appends {path, message}, or throws
  /// CniError(InvalidConfig, throw_text) when not collecting.
  void error(const std::string& path, const std::string& message, const std::string& throw_text);
  /// A warning at JSON `path`: appended when collecting, dropped otherwise.
  void warning(const std::string& path, const std::string& message);

 private:
  Problems* out_ = nullptr;
};

/// A reader of the fields of one JSON object (see the file comment).
class ConfigReader {
 public:
  /// Reads `object` at JSON `path` ("$.mesh"); `name` is its dotted name in thrown texts ("mesh",
  /// "" for a document root). A null `object` reads as empty; any other non-object is reported as
  /// "must be an object" (thrown as "invalid <name>: not an object") and reads as empty.
  /// The reader keeps a pointer to `object` (and to `report`): both must outlive it.
  ConfigReader(const Json& object, std::string path, std::string name, ProblemReport& report);
  /// A temporary object would dangle.
  ConfigReader(Json&& object, std::string path, std::string name, ProblemReport& report) = delete;

  /// The object read (an empty object when it was null or not an object).
  const Json& object() const { return *object_; }
  /// The report problems go to.
  ProblemReport& report() const { return *report_; }
  /// True when problems are collected rather than thrown.
  bool collecting() const { return report_->collecting(); }
  /// The JSON path of the object.
  const std::string& path() const { return path_; }
  /// The JSON path of field `key` ("$.mesh.inboundPort").
  std::string path_of(std::string_view key) const;
  /// The dotted name of field `key` for thrown texts ("mesh.inboundPort"; `key` alone at the root).
  std::string name_of(std::string_view key) const;
  /// A reader of the object held by field `key` (reported as this reader's `key` when it is no object).
  ConfigReader child(std::string_view key, const Json& value) const;

  /// The value of `key`, or nullptr when it is absent or null ("not set").
  const Json* get(std::string_view key) const;
  /// The value of `key` including null, or nullptr when it is absent.
  const Json* find(std::string_view key) const;

  /// Reports a bad field: {path_of(key), why}, or thrown "invalid <name_of(key)>: <why>" with the
  /// key made printable.
  void fail(std::string_view key, const std::string& why) const;
  /// Reports a bad field with a thrown text of the caller's own wording.
  void fail(std::string_view key, const std::string& why, const std::string& throw_text) const;
  /// Reports every key of the object not in `known` as "unknown key"; false when there was one.
  bool reject_unknown(std::span<const std::string_view> known) const;
  /// A JSON value rendered for a message (util::printable_json).
  static std::string echo(const Json& value);

  /// Field `key` as a boolean; "<value> is not a boolean" otherwise. nullopt when unset or bad.
  std::optional<bool> read_bool(std::string_view key) const;
  /// Field `key` as an integer in [lo, hi]; "<value> is not an integer (lo-hi)" or "<value> is out
  /// of range (lo-hi)" otherwise. nullopt when unset or bad.
  std::optional<int> read_int(std::string_view key, int lo, int hi) const;

 private:
  const Json* object_;
  std::string path_;
  std::string name_;
  ProblemReport* report_;
};

}  // namespace manifold::cni
