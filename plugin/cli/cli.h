// manifold as a command for people (when CNI_COMMAND is not set): the subcommands version,
// validate, inspect, install and gc, parsed with CLI11.
#pragma once

namespace manifold::plugin {

/// Parses argv and runs the chosen subcommand; returns the process exit code.
int run_cli(int argc, char** argv);

}  // namespace manifold::plugin
