// Implementation of the config reader: the two report modes, field lookups and paths, unknown-key
// rejection and the section-worded typed reads.
#include "cni/config_reader.h"

#include <algorithm>
#include <cctype>
#include <climits>

#include "cni/error.h"
#include "util/quote.h"

namespace manifold::cni {

namespace {

bool is_identifier(std::string_view key) {
  if (key.empty() || std::isdigit(static_cast<unsigned char>(key[0]))) return false;
  return std::all_of(key.begin(), key.end(),
                     [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
}

const Json& empty_object() {
  static const Json empty = Json::object();
  return empty;
}

}  // namespace

std::string json_path_key(const std::string& base, std::string_view key) {
  if (is_identifier(key)) return base + "." + std::string(key);
  return base + "[" + Json(std::string(key)).dump(-1, ' ', false, Json::error_handler_t::replace) + "]";
}

std::string json_path_index(const std::string& base, std::size_t index) {
  return base + "[" + std::to_string(index) + "]";
}

void ProblemReport::error(const std::string& path, const std::string& message, const std::string& throw_text) {
  if (!out_) throw_invalid_config(throw_text);
  out_->push_back(Problem{path, message, false});
}

void ProblemReport::warning(const std::string& path, const std::string& message) {
  if (out_) out_->push_back(Problem{path, message, true});
}

ConfigReader::ConfigReader(const Json& object, std::string path, std::string name, ProblemReport& report)
    : object_(&object), path_(std::move(path)), name_(std::move(name)), report_(&report) {
  if (object.is_object()) return;
  object_ = &empty_object();
  if (!object.is_null()) report.error(path_, "must be an object", "invalid " + name_ + ": not an object");
}

std::string ConfigReader::path_of(std::string_view key) const { return json_path_key(path_, key); }

std::string ConfigReader::name_of(std::string_view key) const {
  return name_.empty() ? std::string(key) : name_ + "." + std::string(key);
}

ConfigReader ConfigReader::child(std::string_view key, const Json& value) const {
  return ConfigReader(value, path_of(key), name_of(key), *report_);
}

const Json* ConfigReader::get(std::string_view key) const {
  const Json* v = find(key);
  return v && !v->is_null() ? v : nullptr;
}

const Json* ConfigReader::find(std::string_view key) const {
  auto it = object_->find(std::string(key));
  return it == object_->end() ? nullptr : &*it;
}

void ConfigReader::fail(std::string_view key, const std::string& why) const {
  fail(key, why, "invalid " + name_of(util::printable(key)) + ": " + why);
}

void ConfigReader::fail(std::string_view key, const std::string& why, const std::string& throw_text) const {
  report_->error(path_of(key), why, throw_text);
}

bool ConfigReader::reject_unknown(std::span<const std::string_view> known) const {
  bool clean = true;
  for (auto it = object_->begin(); it != object_->end(); ++it) {
    if (std::find(known.begin(), known.end(), it.key()) != known.end()) continue;
    fail(it.key(), "unknown key");
    clean = false;
  }
  return clean;
}

std::string ConfigReader::echo(const Json& value) { return util::printable_json(value); }

std::optional<bool> ConfigReader::read_bool(std::string_view key) const {
  const Json* v = get(key);
  if (!v) return std::nullopt;
  if (v->is_boolean()) return v->get<bool>();
  fail(key, echo(*v) + " is not a boolean");
  return std::nullopt;
}

std::optional<int> ConfigReader::read_int(std::string_view key, int lo, int hi) const {
  const Json* v = get(key);
  if (!v) return std::nullopt;
  const std::string bounds = "(" + std::to_string(lo) + "-" + std::to_string(hi) + ")";
  if (!v->is_number_integer()) {
    fail(key, echo(*v) + " is not an integer " + bounds);
    return std::nullopt;
  }
  long long n = 0;
  if (v->is_number_unsigned()) {
    const auto u = v->get<unsigned long long>();
    n = u > static_cast<unsigned long long>(LLONG_MAX) ? LLONG_MAX : static_cast<long long>(u);
  } else {
    n = v->get<long long>();
  }
  if (n < lo || n > hi) {
    fail(key, echo(*v) + " is out of range " + bounds);
    return std::nullopt;
  }
  return static_cast<int>(n);
}

}  // namespace manifold::cni
