// Where a set of operator schemas comes from: a native_functions.yaml path,
// or a torch version string that names an installed torch or a downloaded
// wheel.
//
// `accgen schema-diff 2.13.0 2.14.1` compares two releases without
// installing either: a wheel is a zip archive, and the one member we need,
// torchgen/packaged/ATen/native/native_functions.yaml, is read straight out
// of it (docs/upgrading.md, "Where the schemas come from").
#pragma once

#include <string>

#include "generator/schema/schema.h"

namespace accgen::upgrade {

/// The member of a torch wheel that holds the operator schemas.
inline constexpr const char* kWheelSchemaMember =
    "torchgen/packaged/ATen/native/native_functions.yaml";

/// One resolved OLD or NEW argument of schema-diff.
struct SchemaSource {
  /// What the report calls it: the path as given,
  /// "torch-2.14.1-cp311-...whl" for a wheel, or "installed torch".
  std::string label;
  /// "2.14.1", "2.13.0+cpu"; empty when unknown (a bare yaml file outside
  /// an installed torch).
  std::string torch_version;
  /// Every operator of the release; its path() is the label.
  schema::SchemaRegistry registry;
};

/// The version of the torch a native_functions.yaml belongs to, read from
/// torch/version.py beside its torchgen/packaged/ATen/native/ directory;
/// "" for a file outside an installed torch.
std::string versionBesideYaml(const std::string& yaml_path);

/// True for "2.14", "2.14.1", "2.13.0+cpu", "2.15.0.dev20260101": what
/// looks like a torch version rather than a file name.
bool looksLikeVersion(const std::string& text);

/// The torch wheel for `version` in `wheels_dir`: a file named
/// `torch-<version>-*.whl`, or `torch-<version>+<local>-*.whl` when
/// `version` has no local part (2.13.0 finds torch-2.13.0+cpu-...whl).
/// Returns "" when there is none; several matches pick the first by name
/// (they differ only in platform tags; the schemas are the same).
std::string findWheel(const std::string& wheels_dir,
                      const std::string& version);

/// Reads one member of a zip archive (a wheel) as bytes: through the
/// Python that findTorch() uses ($ACCGEN_PYTHON, else python3; the zipfile
/// module of its standard library), else `unzip -p` when Python cannot.
/// Throws AccgenError(kInvalidInput) when neither can read it.
std::string readZipMember(const std::string& archive,
                          const std::string& member);

/// Resolves `arg`: an existing file is a native_functions.yaml; otherwise a
/// version string is looked up (1) in the installed torch when its version
/// matches (with or without the local part), then (2) as a wheel in
/// `wheels_dir`, or $ACCGEN_WHEEL_DIR when `wheels_dir` is empty. Throws
/// AccgenError(kInvalidInput) with what to do when none is found.
SchemaSource loadSchemaSource(const std::string& arg,
                              const std::string& wheels_dir);

}  // namespace accgen::upgrade
