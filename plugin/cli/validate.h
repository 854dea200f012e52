// `manifold validate`: checks meta-plugin configs, network configs and Kubernetes manifests (NADs,
// pods) offline and prints every problem with its JSON path. Exit code: 0 valid, 1 invalid, 2 usage
// error or unreadable file.
#pragma once

#include <string>
#include <vector>

namespace manifold::plugin {

/// What to validate.
struct ValidateOptions {
  std::vector<std::string> files;      ///< configs (.conf/.conflist/.json) or manifests (.yaml/.yml, JSON with kind)
  std::vector<std::string> nad_files;  ///< files that must hold only NetworkAttachmentDefinitions
  bool quiet = false;                  ///< print only errors
};

/// Validates every file and prints "<file>[ <document>]: <path>: <message>" lines (and "ok" lines
/// unless quiet) on stdout. Returns the exit code.
int run_validate(const ValidateOptions& options);

}  // namespace manifold::plugin
