// `accgen generate`: a regeneration as a pipeline of stages, each a named
// function of the layer it belongs to (generate.cpp lists them in order).
// `accgen init` runs the same stages on the project it creates.
#pragma once

#include <future>
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

/// The input fingerprint of a run (Note [Input fingerprint] in writer.h):
/// known already, still being computed on a second thread, or none (the
/// schemas are a torch version, which is not fingerprinted).
struct PendingInputs {
  std::string value;
  std::future<std::string> later;

  /// The fingerprint, waiting for the second thread if it is still busy.
  std::string get() {
    if (later.valid()) value = later.get();
    return value;
  }
};

/// What a rendering run ended with: its exit code and, when it wrote the
/// tree, what it wrote.
struct GenerateOutcome {
  int exit_code = 0;
  std::optional<write::WriteReport> written;
};

/// Every stage after the fast path, against the schemas `where` names:
/// load the specs, plan the lock and render, then compare (--check) or
/// check the user kernels and write. Diagnostics, the lock report and
/// --check output go to `out` and `err`; the summary line is the caller's.
GenerateOutcome renderAndWrite(const GenerateOptions& options,
                               const SchemaLocation& where,
                               PendingInputs inputs, std::ostream& out,
                               std::ostream& err);

/// `accgen generate`: the fast path (Note [Input fingerprint]), else
/// renderAndWrite; prints the summary line. Returns the exit code.
int runGenerate(const GenerateOptions& options, std::ostream& out,
                std::ostream& err);

}  // namespace accgen::cli
