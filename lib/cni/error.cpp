// Implementation of CniError: construction and the spec's error JSON rendering.
#include "cni/error.h"

namespace manifold::cni {

CniError::CniError(ErrorCode code, std::string msg, std::string details)
    : CniError(static_cast<unsigned>(code), std::move(msg), std::move(details)) {}

CniError::CniError(unsigned code, std::string msg, std::string details)
    : std::runtime_error(msg), code_(code), msg_(std::move(msg)), details_(std::move(details)) {}

Json CniError::to_json(const std::string& cni_version) const {
  Json j;
  j["cniVersion"] = cni_version;
  j["code"] = code_;
  j["msg"] = msg_;
  if (!details_.empty()) j["details"] = details_;
  return j;
}

void throw_invalid_config(const std::string& msg) { throw CniError(ErrorCode::InvalidConfig, msg); }

}  // namespace manifold::cni
