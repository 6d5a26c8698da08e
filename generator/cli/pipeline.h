// The pipeline the commands share: schemas → specs → backend model →
// emitters → rendered files. Each step reports user errors as AccgenError
// after printing every diagnostic.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <ostream>
#include <set>
#include <string>
#include <vector>

#include "generator/cli/torch_cache.h"
#include "generator/emit/emitter.h"
#include "generator/model/backend.h"
#include "generator/render/renderer.h"
#include "generator/schema/schema.h"
#include "generator/write/writer.h"

namespace accgen::cli {

/// The schemas a run uses and where they came from.
struct SchemaSource {
  std::unique_ptr<schema::SchemaRegistry> registry;
  /// The installed torch, when it could be found.
  std::optional<schema::TorchInstall> torch;
  /// The DispatchStubs its ATen headers declare (with `torch`).
  schema::DispatchStubs dispatch_stubs;
  /// Version of the torch the schemas belong to ("" when unknown).
  std::string torch_version;
};

/// Where a run's schemas come from, resolved once for everything that
/// needs to know: the input fingerprint and the schema loading.
struct SchemaLocation {
  /// `--schemas` as given: "" (the installed torch), a
  /// native_functions.yaml, or a torch version.
  std::string arg;
  /// The installed torch; always set when `arg` is empty, else when it
  /// could be found (its ATen headers declare the DispatchStubs).
  std::optional<TorchFacts> torch;
  /// The native_functions.yaml the input fingerprint covers; "" when `arg`
  /// is a torch version (no fingerprint then).
  std::string fingerprint_file;
  /// The torch version the fingerprint records: the installed torch's
  /// without `arg`, "" for an explicit file.
  std::string fingerprint_version;

  bool fingerprinted() const { return !fingerprint_file.empty(); }
};

/// Resolves `schemas_arg` (see SchemaLocation::arg). Throws
/// AccgenError(kInvalidInput) when it is empty and no torch is installed.
SchemaLocation locateSchemas(const std::string& schemas_arg);

/// Loads the schemas `where` names.
SchemaSource loadSchemas(const SchemaLocation& where);

/// Writes to `err` the warning for a torch outside the supported releases
/// (torch_releases.txt) that `where` names: the installed torch, the torch
/// a --schemas file belongs to, or a --schemas version. Nothing when the
/// version is supported or unknown.
void warnIfUnsupportedTorch(const SchemaLocation& where, std::ostream& err);

/// Loads `schemas_file`, or the installed torch's native_functions.yaml when
/// it is empty.
SchemaSource loadSchemas(const std::string& schemas_file);

/// Loads and validates the specs in `specs_dir`; prints every diagnostic to
/// `err`; throws AccgenError(kInvalidInput) when any was an error.
model::Backend loadBackend(const std::string& specs_dir,
                           const SchemaSource& schemas, std::ostream& err);

/// Runs every emitter and renders its files with `templates`. User-owned
/// files that already exist under `out_dir` (when given) are listed with
/// empty content and not rendered: the writer never touches them.
std::vector<write::RenderedFile> renderBackend(const model::Backend& backend,
                                               const emit::RunInfo& run,
                                               render::TemplateSet& templates,
                                               const std::string& out_dir = "");

/// Inputs a run is about to write (the lock it creates or updates, the
/// user kernels it creates): file names inside the spec directory and
/// inside `<out>/kernels`, with their new contents.
struct PendingInputFiles {
  std::map<std::string, std::string> specs;
  std::map<std::string, std::string> kernels;

  bool empty() const { return specs.empty() && kernels.empty(); }
};

/// Hash of everything a generated tree depends on: accgen's version, the
/// schema file, every template, the specs (with the lock) and the user
/// kernels under `out_dir`/kernels, each as on disk or, when `pending`
/// names it, as the run will write it. Contents only, never times, so it is
/// the same on every machine (Note [Input fingerprint] in writer.h).
std::string inputFingerprint(const std::string& specs_dir,
                             const std::string& out_dir,
                             const std::string& schema_file,
                             const std::string& torch_version,
                             const std::string& templates_root,
                             const PendingInputFiles& pending = {});

/// Prints `diags` (warnings or errors about user kernels) to `err`.
void printDiagnostics(const std::vector<Diagnostic>& diags, std::ostream& err);

/// What the manifest records besides the files.
nlohmann::json manifestExtra(const emit::RunInfo& run);

}  // namespace accgen::cli
