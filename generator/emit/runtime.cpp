// The runtime emitter: the device glue of a generated backend under csrc/
// (driver error checks, device guard and stream pools, caching device
// allocator, pinned host allocator, generators, PrivateUse1 hooks, tensor
// metadata serialization) and the builtin operators written over the driver
// interface.
//
// The files' text lives in templates/backend/csrc/; this emitter decides
// which of them exist. Everything they vary on (names, the spec's device
// count and memory size, features) is in the global template context.
#include <string>
#include <vector>

#include "generator/emit/emitter.h"
#include "generator/emit/emitters.h"
#include "generator/model/backend.h"

namespace accgen::emit {
namespace {

constexpr const char* kBackendSpec = "specs/backend.yaml";
constexpr const char* kOperatorsSpec = "specs/operators.yaml";

OutputFile templated(std::string path, std::string source) {
  OutputFile file;
  file.template_name = "backend/" + path + ".mustache";
  file.path = std::move(path);
  file.source = std::move(source);
  return file;
}

}  // namespace

std::vector<OutputFile> emitRuntime(const model::Backend& backend) {
  std::vector<OutputFile> files;
  for (const char* path :
       {"csrc/runtime/Allocator.cpp", "csrc/runtime/CpuGenerator.h",
        "csrc/runtime/DeviceGuard.cpp", "csrc/runtime/Driver.cpp",
        "csrc/runtime/Driver.h", "csrc/runtime/Generator.cpp",
        "csrc/runtime/Hooks.cpp", "csrc/runtime/Runtime.h",
        "csrc/runtime/Serialization.cpp"}) {
    files.push_back(templated(path, kBackendSpec));
  }
  // Without pinned memory the hooks refuse pin_memory() and no host
  // allocator is registered.
  if (backend.features().pinned_memory) {
    files.push_back(templated("csrc/runtime/HostAllocator.cpp", kBackendSpec));
  }
  // The builtin set is fixed (the model insists every backend lists all of
  // it as `builtin`), so its registrations name operators.yaml as source.
  files.push_back(templated("csrc/ops/Builtin.cpp", kOperatorsSpec));
  files.push_back(templated("csrc/ops/BuiltinMathBits.cpp", kOperatorsSpec));
  return files;
}

}  // namespace accgen::emit
