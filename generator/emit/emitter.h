// The emitter interface: each output family (runtime glue, registrations,
// Python package, build files, ...) is one function from the validated backend
// model to a list of OutputFiles. Emitters never read YAML and never touch the
// file system; the renderer fills their templates and the writer writes.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "generator/spec/spec.h"

namespace accgen::model {
class Backend;
}  // namespace accgen::model

namespace accgen::emit {

/// One file of the generated tree, before rendering.
struct OutputFile {
  /// Path relative to the output directory, '/'-separated.
  std::string path;
  /// Template path relative to templates/, e.g.
  /// "backend/csrc/ops/RegisterStubs.cpp.mustache".
  std::string template_name;
  /// Template data; merged over globalContext() (file keys win).
  nlohmann::json data = nlohmann::json::object();
  /// The spec file named in the banner, e.g. "specs/operators.yaml".
  std::string source = "specs/backend.yaml";
  /// User-owned: created once from its starter template, never overwritten,
  /// never removed (kernel bodies).
  bool user_owned = false;
};

/// Facts about the run that are not part of the backend model.
struct RunInfo {
  /// The torch version whose schemas were used ("2.13.0+cpu"); "" unknown.
  std::string torch_version;
  /// Hash of everything the output depends on (Note [Input fingerprint]);
  /// "" when not computed.
  std::string inputs;
};

using EmitFn = std::vector<OutputFile> (*)(const model::Backend&);

/// A registered output family (the registry is one table in registry.cpp).
struct Emitter {
  std::string_view name;
  std::string_view description;
  EmitFn fn;
};

/// Every emitter, in a fixed order.
const std::vector<Emitter>& registry();

/// Values every template may use: device, DEVICE, package, namespace,
/// device_count, memory_bytes, fallback_cpu, fallback_error, features,
/// torch_version, torch_requirement, torch_version_major,
/// torch_version_minor, accgen_version.
nlohmann::json globalContext(const model::Backend& backend, const RunInfo& run);

/// Throws AccgenError(kInternal), naming `who`, for the first operator (or
/// custom operator) whose kind's traits `handled` rejects: an operator no
/// emitter writes is a bug, never a silent omission.
void requireHandledKinds(
    const model::Backend& backend, std::string_view who,
    const std::function<bool(const spec::KindTraits&)>& handled);

/// Runs every emitter; the result is sorted by path. Two emitters producing
/// one path, or an operator of a kind no emitter writes, is an internal
/// error.
std::vector<OutputFile> emitAll(const model::Backend& backend);

}  // namespace accgen::emit
