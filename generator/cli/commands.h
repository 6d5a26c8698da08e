// The command-line interface: subcommands init, generate, validate, inspect
// and schema-diff over the pipeline.
#pragma once

namespace accgen::cli {

/// Parses argv, runs the chosen command and returns the process exit code.
/// User errors are thrown as AccgenError.
int run(int argc, char** argv);

}  // namespace accgen::cli
