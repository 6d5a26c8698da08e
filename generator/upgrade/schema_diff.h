// `accgen schema-diff OLD NEW [--specs DIR] [--json]`: what changed between
// two sets of PyTorch operator schemas, and what it means for one backend.
//
// diffSchemas classifies every difference between two registries (removed,
// added, changed operators with changes.h's classes); analyzeBackend maps
// it onto the operators a backend registers and the user kernel files that
// need an edit; the two render functions print the human and the JSON
// report; runSchemaDiff is the whole command for the CLI. Exit codes:
// 0 when nothing needs action (without --specs: the schemas are the same),
// 1 when something does (docs/upgrading.md, "schema-diff").
#pragma once

#include <iosfwd>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "generator/model/backend.h"
#include "generator/schema/schema.h"
#include "generator/upgrade/changes.h"

namespace accgen::upgrade {

/// How an operator differs between the two registries.
enum class DiffStatus { kAdded, kRemoved, kChanged };

/// "added", "removed", "changed".
std::string_view diffStatusName(DiffStatus status);

/// One operator (native_functions.yaml entry) that differs.
struct OperatorDiff {
  /// "add.out".
  std::string name;
  DiffStatus status = DiffStatus::kChanged;
  /// The entries; nullptr on the side where the operator does not exist.
  /// They point into the registries given to diffSchemas.
  const schema::NativeFunction* old_fn = nullptr;
  const schema::NativeFunction* new_fn = nullptr;
  /// Classified changes; for added/removed operators one change of class
  /// kAddedOperator / kAddedOverload / kRemovedOperator.
  std::vector<Change> changes;

  /// Some change needs action (classNeedsAction).
  bool needsAction() const { return upgrade::needsAction(changes); }
  /// Only default values differ (tags aside).
  bool defaultOnly() const;
  /// Only tags differ.
  bool tagOnly() const;
};

/// Every difference between two registries, sorted by name.
struct SchemaDiff {
  std::vector<OperatorDiff> operators;

  /// The diff of `name`, or nullptr when it did not change.
  const OperatorDiff* find(std::string_view name) const;
};

/// Compares two registries. The result points into both, which must
/// outlive it.
SchemaDiff diffSchemas(const schema::SchemaRegistry& old_registry,
                       const schema::SchemaRegistry& new_registry);

/// One of a backend's registrations that the diff touches.
struct AffectedOperator {
  /// "add.out".
  std::string name;
  /// "kernel", "emulate", ...; `via` is the operators.yaml entry.
  std::string kind;
  std::string via;
  /// The operators.yaml entry's location.
  SourceLoc loc;
  /// The diff (owned by the SchemaDiff).
  const OperatorDiff* diff = nullptr;
  /// Some change needs action for this backend.
  bool needs_action = false;
  /// The user-owned file to edit; "" when none needs an edit.
  std::string kernel_file;
  /// The user kernel (or generated wrapper) signature before and after;
  /// "" when the operator does not exist on that side.
  std::string old_cpp;
  std::string new_cpp;
};

/// The backend section of the report.
struct BackendImpact {
  /// The specs directory and the number of registrations examined.
  std::string specs_dir;
  std::size_t registered = 0;
  /// Every registration with any difference, sorted by name.
  std::vector<AffectedOperator> affected;

  /// User-owned files needing an edit, sorted, unique.
  std::vector<std::string> kernelFilesToEdit() const;
  /// Some registration needs action.
  bool needsAction() const;
};

/// Maps `diff` onto `backend` (built against the old registry; see
/// runSchemaDiff). Custom operators are the backend's own and never
/// affected by a torch release.
BackendImpact analyzeBackend(const model::Backend& backend,
                             const SchemaDiff& diff);

/// What the report says about its two inputs.
struct DiffInputs {
  std::string old_label;
  std::string old_version;  ///< "" when unknown
  std::string new_label;
  std::string new_version;
};

/// The human report (docs/upgrading.md shows a real one).
std::string formatSchemaDiff(const DiffInputs& inputs, const SchemaDiff& diff,
                             const BackendImpact* impact);

/// The same report as JSON (docs/upgrading.md, "--json").
nlohmann::ordered_json schemaDiffJson(const DiffInputs& inputs,
                                      const SchemaDiff& diff,
                                      const BackendImpact* impact);

/// The command's exit code for a report: 1 when something needs action
/// (with a backend: for the backend; without: any difference), else 0.
int schemaDiffExitCode(const SchemaDiff& diff, const BackendImpact* impact);

/// schema-diff's options, as the CLI parses them.
struct SchemaDiffOptions {
  /// native_functions.yaml paths or torch versions (schema_source.h).
  std::string old_source;
  std::string new_source;
  /// --specs DIR: also report what the change means for this backend.
  std::optional<std::string> specs_dir;
  /// --wheels DIR: where version strings find torch-<ver>-*.whl (default:
  /// $ACCGEN_WHEEL_DIR).
  std::string wheels_dir;
  /// --json: the report as JSON on `out`.
  bool json = false;
};

/// The whole command: resolves both sources, loads and validates the specs
/// (against OLD, falling back to NEW when they only validate there), prints
/// the report on `out` and returns 0 or 1. Invalid input (a missing file,
/// no wheel, invalid specs) is printed on `err` with exit code 3
/// (ExitCode::kInvalidInput); it does not throw for user errors.
int runSchemaDiff(const SchemaDiffOptions& options, std::ostream& out,
                  std::ostream& err);

}  // namespace accgen::upgrade
