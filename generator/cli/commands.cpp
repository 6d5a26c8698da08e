// Placeholder until the pipeline lands.
#include "generator/cli/commands.h"
namespace accgen::cli {
int run(int, char**) { return 0; }
}  // namespace accgen::cli
