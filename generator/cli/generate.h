// `accgen generate`: a regeneration as a pipeline of stages, each a named
// function of the layer it belongs to (generate.cpp lists them in order).
// `accgen init` runs the same stages on the project it creates.
#pragma once

#include <optional>
#include <ostream>
#include <string>

#include "generator/cli/pipeline.h"
#include "generator/write/writer.h"

namespace accgen::cli {

struct GenerateOptions {
  std::string specs = "specs";
  std::string out = ".";
  std::string schemas;
  bool force = false;
  bool check = false;
  bool update_lock = false;
};

/// The command line that regenerates `options.out`, for messages.
std::string regenerateCommand(const GenerateOptions& options);

/// What a run ended with: its exit code and, when it wrote the tree or
/// found it current, the writer's report.
struct GenerateOutcome {
  int exit_code = 0;
  std::optional<write::WriteReport> written;
};

/// `accgen generate` without its summary line, against the schemas `where`
/// names: the fast path (Note [Input fingerprint]), else load the specs,
/// plan the lock and render, then compare (--check) or check the user
/// kernels and write. Diagnostics, the lock report and --check output go
/// to `out` and `err`. `accgen init` generates its project through it.
GenerateOutcome generate(const GenerateOptions& options,
                         const SchemaLocation& where, std::ostream& out,
                         std::ostream& err);

/// `accgen generate`: generate(), then the summary line. Returns the exit
/// code.
int runGenerate(const GenerateOptions& options, std::ostream& out,
                std::ostream& err);

}  // namespace accgen::cli
