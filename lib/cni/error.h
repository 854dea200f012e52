// CNI errors. Every failure in manifold that must reach the runtime is a CniError carrying a spec
// error code, a message and optional details. They are thrown, travel up to the skel dispatcher and
// are printed there, once, as the spec's error JSON on stdout.
#pragma once

#include <stdexcept>
#include <string>

#include "util/json.h"

namespace manifold::cni {

/// Error codes: 1–11 and 50/51 are the CNI spec's well-known codes, 100+ are manifold's own.
enum class ErrorCode : unsigned {
  IncompatibleVersion = 1,
  UnsupportedField = 2,
  UnknownContainer = 3,
  InvalidEnv = 4,
  Io = 5,
  Decoding = 6,
  InvalidConfig = 7,
  TryAgainLater = 11,
  PluginNotAvailable = 50,
  LimitedConnectivity = 51,
  Internal = 100,           ///< a bug or an unexpected system failure inside manifold
  DelegateFailed = 101,     ///< a delegate could not be run, crashed, hung or printed garbage
  InterfaceExists = 102,    ///< the interface name for an attachment is already taken in the netns
  Kubernetes = 103,         ///< the Kubernetes API could not be reached or answered an error
  NetworkNotFound = 104,    ///< a NetworkAttachmentDefinition or network file could not be found
  Netlink = 105,            ///< a netlink operation in the pod namespace failed
  Firewall = 106,           ///< iptables-restore failed
  CheckFailed = 107,        ///< CHECK found state that differs from what ADD created
  DeviceUnavailable = 108,  ///< the kubelet's devices for a network could not be found or were used up
};

/// An error to be reported to the runtime as CNI error JSON.
class CniError : public std::runtime_error {
 public:
  /// Creates an error with a spec or manifold code, a message and optional details.
  CniError(ErrorCode code, std::string msg, std::string details = {});
  /// Creates an error with a raw numeric code (used to pass a delegate's own error through).
  CniError(unsigned code, std::string msg, std::string details = {});

  /// The numeric error code.
  unsigned code() const noexcept { return code_; }
  /// The human-readable message.
  const std::string& msg() const noexcept { return msg_; }
  /// Additional details, may be empty.
  const std::string& details() const noexcept { return details_; }

  /// Renders the spec's error object: {"cniVersion","code","msg","details"}.
  Json to_json(const std::string& cni_version) const;

 private:
  unsigned code_;
  std::string msg_;
  std::string details_;
};

/// Throws CniError(InvalidConfig) with the message.
[[noreturn]] void throw_invalid_config(const std::string& msg);

}  // namespace manifold::cni
