// `accgen inspect`: an operator's schema, C++ signature and registration.
#pragma once

#include <ostream>
#include <string>

namespace accgen::cli {

struct InspectOptions {
  std::string op;
  std::string specs = "specs";
  std::string schemas;
  bool json = false;
};

/// Prints what accgen knows of `options.op`; the backend part only when the
/// spec directory exists. Unknown operators are AccgenError(kInvalidInput).
int runInspect(const InspectOptions& options, std::ostream& out,
               std::ostream& err);

}  // namespace accgen::cli
