// accgen's entry point: parses the command line and maps outcomes to the
// documented exit codes (docs/cli.md).
#include <iostream>

#include "generator/cli/commands.h"
#include "generator/support/diagnostics.h"

int main(int argc, char** argv) {
  try {
    return accgen::cli::run(argc, argv);
  } catch (const accgen::AccgenError& e) {
    std::cerr << e.what() << "\n";
    return static_cast<int>(e.code());
  } catch (const std::exception& e) {
    std::cerr << "accgen: internal error: " << e.what() << "\n";
    return static_cast<int>(accgen::ExitCode::kInternal);
  }
}
