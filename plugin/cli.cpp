// The human command line: `manifold version` and friends. Subcommands stay thin; their work lives
// in lib/.
#include "plugin/cli.h"

#include <CLI/CLI.hpp>
#include <iostream>

#include "cni/version.h"

namespace manifold::plugin {

namespace {

int print_version() {
  std::cout << "manifold " << MANIFOLD_VERSION << "\n"
            << "commit: " << MANIFOLD_GIT_COMMIT << "\n"
            << "build: " << MANIFOLD_BUILD_FLAGS << "\n"
            << "CNI versions:";
  for (const auto& v : cni::supported_versions()) std::cout << ' ' << v;
  std::cout << "\n";
  return 0;
}

}  // namespace

int run_cli(int argc, char** argv) {
  CLI::App app{"manifold: a CNI meta-plugin. Run by the container runtime with CNI_COMMAND set; "
               "otherwise a tool for operators."};
  app.require_subcommand(1);
  auto* version = app.add_subcommand("version", "print the version, commit, CNI versions and build flags");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  if (*version) return print_version();
  return 0;
}

}  // namespace manifold::plugin
