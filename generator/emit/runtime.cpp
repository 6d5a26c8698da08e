// The runtime emitter: what a backend adds to accgen's runtime library
// (runtime/, compiled into every backend by accgen_add_backend): the
// configuration the runtime is compiled with (csrc/accgen_config.h), the
// runtime's API in the backend's namespace (csrc/Backend.h), and the
// user-owned tuning.cpp (Note [Runtime tuning] in
// runtime/include/accgen/runtime/Tuning.h), created once.
//
// Everything these files vary on (names, the spec's device count and memory
// size, features) is in the global template context.
#include <string>
#include <vector>

#include "generator/emit/emitter.h"
#include "generator/emit/emitters.h"
#include "generator/model/backend.h"

namespace accgen::emit {

std::vector<OutputFile> emitRuntime(const model::Backend& /*backend*/) {
  std::vector<OutputFile> files(3);
  files[0].path = "csrc/accgen_config.h";
  files[0].template_name = "backend/csrc/accgen_config.h.mustache";
  files[1].path = "csrc/Backend.h";
  files[1].template_name = "backend/csrc/Backend.h.mustache";
  files[2].path = "tuning.cpp";
  files[2].template_name = "kernels/tuning.cpp.mustache";
  files[2].user_owned = true;
  return files;
}

}  // namespace accgen::emit
