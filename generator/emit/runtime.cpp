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

namespace {

/// The entries of operators.yaml that run CPU code over device memory, as
/// the runtime and accgen_add_backend read them from accgen_config.h (Note
/// [Host access] in runtime/src/Driver.cpp): "needs_host_access" (refused
/// where the host cannot address device memory) and "needs_host_copies"
/// (run through the CPU fallback there with features.host_copies), each
/// a space-separated list of listed names.
nlohmann::json hostCode(const model::Backend& backend) {
  std::string access;
  std::string copies;
  for (const auto& op : backend.operators()) {
    const spec::KindTraits& traits = spec::kindTraits(op.kind);
    if (!traits.host_code) continue;
    std::string& list = traits.host_copies ? copies : access;
    if (!list.empty()) list += ' ';
    list += op.full_name;
  }
  return {{"needs_host_access", access}, {"needs_host_copies", copies}};
}

}  // namespace

std::vector<OutputFile> emitRuntime(const model::Backend& backend) {
  std::vector<OutputFile> files(3);
  files[0].path = "csrc/accgen_config.h";
  files[0].template_name = "backend/csrc/accgen_config.h.mustache";
  files[0].data = hostCode(backend);
  files[1].path = "csrc/Backend.h";
  files[1].template_name = "backend/csrc/Backend.h.mustache";
  files[2].path = "tuning.cpp";
  files[2].template_name = "kernels/tuning.cpp.mustache";
  files[2].user_owned = true;
  return files;
}

}  // namespace accgen::emit
