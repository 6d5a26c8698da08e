// `accgen init`: scaffolds a new backend project.
#pragma once

#include <ostream>
#include <string>

namespace accgen::cli {

struct InitOptions {
  std::string name;
  std::string dir;      ///< default: ./<name>
  std::string schemas;  ///< default: the installed torch's
};

/// Creates the project in a temporary sibling directory and renames it into
/// place only when everything succeeded, so a failure leaves nothing behind.
int runInit(const InitOptions& options, std::ostream& out, std::ostream& err);

}  // namespace accgen::cli
