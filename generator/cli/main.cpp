// accgen's entry point: parses the command line and maps outcomes to the
// documented exit codes (docs/cli.md).
#include <filesystem>
#include <iostream>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include "generator/cli/commands.h"
#include "generator/support/diagnostics.h"

int main(int argc, char** argv) {
  // Note [Allocator tuning]
  // ~~~~~~~~~~~~~~~~~~~~~~~
  // A large run builds and frees hundreds of thousands of small objects
  // (the template data of thousands of kernels), half of them on the second
  // render thread. glibc keeps small freed chunks in "fast bins" and merges
  // them all at once at the next large allocation or free, one pass of about
  // 10 ms in the middle of a 150 ms run. Without fast bins each free merges
  // its own chunk; small chunks still go through the per-thread caches.
#if defined(__GLIBC__)
  mallopt(M_MXFAST, 0);
#endif
  try {
    return accgen::cli::run(argc, argv);
  } catch (const accgen::AccgenError& e) {
    std::cerr << accgen::printableLines(e.what()) << "\n";
    return static_cast<int>(e.code());
  } catch (const std::filesystem::filesystem_error& e) {
    // The system refused an operation on a path accgen did not check
    // beforehand: not a bug in accgen (exit 6).
    std::cerr << "accgen: error: " << accgen::printableLines(e.what()) << "\n";
    return static_cast<int>(accgen::ExitCode::kFileSystem);
  } catch (const std::exception& e) {
    std::cerr << "accgen: internal error: " << accgen::printableLines(e.what())
              << "\n";
    return static_cast<int>(accgen::ExitCode::kInternal);
  }
}
