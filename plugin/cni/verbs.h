// The CNI verbs of manifold, each a short checklist over the attachment engine (lib/engine): decode
// the invocation (config, logging, session), call the engine, encode the result in the config's
// cniVersion. Side effects arrive through engine::Services, so the verbs run against fakes in unit
// tests and against the real system in the plugin (plugin/main.cpp builds those).
#pragma once

#include <string>

#include "cni/skel.h"
#include "engine/services.h"

namespace manifold::plugin {

/// The side effects the verbs use (the engine's).
using Services = engine::Services;

/// The CNI verb handlers.
class Commands final : public cni::Handlers {
 public:
  /// Uses `services` for every side effect.
  explicit Commands(Services services) : services_(std::move(services)) {}

  std::string add(const cni::Invocation& inv) override;
  std::string del(const cni::Invocation& inv) override;
  std::string check(const cni::Invocation& inv) override;
  std::string gc(const cni::Invocation& inv) override;
  std::string status(const cni::Invocation& inv) override;

 private:
  Services services_;
};

}  // namespace manifold::plugin
