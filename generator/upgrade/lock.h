// The schema lock: <specs>/accgen.lock records the torch version and the
// exact schema of every operator a backend registers, so that a PyTorch
// upgrade that changes one of them stops `accgen generate` with a report
// instead of silently regenerating wrappers the user's kernels no longer
// fit.
//
// The file is YAML, one operator per line, sorted, with no timestamps, so
// that its diff in a pull request is the list of accepted schema changes:
//
//   torch: "2.13.0"
//   operators:
//     "aten::add.out": {schema: "add.out(Tensor self, ...) -> Tensor(a!)"}
//     "aten::mul.Tensor": {schema: "...", cpp: "at::Tensor
//     kernel_mul_Tensor(...)"}
//
// `cpp` is the C++ signature a person implements (the primary form of a
// `kernel` entry, custom operators); generated-only registrations have none.
// docs/upgrading.md describes the workflow; the CLI calls planLock before
// writing anything and commitLock after the tree was written.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "generator/model/backend.h"
#include "generator/support/diagnostics.h"
#include "generator/upgrade/changes.h"
#include "generator/upgrade/registered_ops.h"

namespace accgen::upgrade {

/// The lock's file name inside the specs directory.
inline constexpr const char* kLockFileName = "accgen.lock";
/// The temporary the lock is written to before it replaces the lock.
inline constexpr const char* kLockTempFileName = "accgen.lock.tmp";

/// One locked operator.
struct LockEntry {
  /// "aten::add.out", "accel::scaled_add".
  std::string op;
  /// The schema text exactly as registered.
  std::string schema;
  /// The user-implemented C++ declaration; "" for generated-only ones.
  std::string cpp;
  /// Its line in the lock file (parsed locks), else unknown.
  SourceLoc loc;
};

/// A parsed or freshly built lock.
struct SchemaLock {
  /// "2.13.0" (the release, without a local version part).
  std::string torch_version;
  /// Sorted by op.
  std::vector<LockEntry> entries;

  const LockEntry* find(std::string_view op) const;
};

/// The lock for what `ops` register, against `torch_version` (recorded
/// without its local part: "2.13.0+cpu" is locked as "2.13.0").
SchemaLock buildLock(const std::vector<RegisteredOp>& ops,
                     const std::string& torch_version);
/// The same for a whole backend.
SchemaLock buildLock(const model::Backend& backend,
                     const std::string& torch_version);

/// The lock file's text: byte-stable (sorted, LF, final newline).
std::string renderLock(const SchemaLock& lock);

/// Parses lock text read from `path`. Throws AccgenError(kInvalidInput,
/// "path:line:col: error: ...") for malformed YAML, unknown keys, missing
/// keys, duplicate operators and schemas that do not parse.
SchemaLock parseLock(std::string_view text, const std::string& path);

/// How one operator compares with its lock entry.
enum class LockStatus {
  kUnchanged,  ///< same schema (up to spelling)
  kChanged,    ///< the schema differs; see changes
  kAdded,      ///< registered now, not locked: needs no acceptance
  kRemoved,    ///< locked, no longer registered: dropped from the lock
};

/// "unchanged", "changed", "added", "removed".
std::string_view lockStatusName(LockStatus status);

/// One operator of a comparison.
struct LockDelta {
  std::string op;
  LockStatus status = LockStatus::kUnchanged;
  std::string old_schema;  ///< locked ("" when added)
  std::string new_schema;  ///< current ("" when removed)
  /// C++ signature of the locked and current schema, under the user kernel
  /// name where there is one; "" when not computable.
  std::string old_cpp;
  std::string new_cpp;
  /// diffSchema(locked, current).
  std::vector<Change> changes;
  /// A change that must be accepted (needsAction(changes)).
  bool needs_action = false;
  /// The user-written body must be edited (needsKernelEdit).
  bool kernel_edit = false;
  /// Current registration facts ("" when removed): kind, entry, user file.
  std::string kind;
  std::string via;
  std::string kernel_file;
  /// A person writes this operator's body (RegisteredOp::user_signature):
  /// only then are the C++ signatures part of the report.
  bool user_signature = false;
  /// The lock file line of the locked entry.
  SourceLoc lock_loc;
};

/// A lock compared with what the backend registers now.
struct LockComparison {
  std::string locked_torch;
  std::string current_torch;
  /// Every operator of either side, sorted by op.
  std::vector<LockDelta> deltas;

  /// Some locked schema changed in a way that needs acceptance.
  bool drifted() const;
  /// The deltas that need acceptance.
  std::vector<const LockDelta*> drift() const;
  /// User-owned files whose kernels must be edited, sorted, unique.
  std::vector<std::string> kernelFilesToEdit() const;
};

/// Compares `locked` with `current` (built by buildLock from `ops`, which
/// supply the kind, entry and user file of each current operator).
LockComparison compareLock(const SchemaLock& locked, const SchemaLock& current,
                           const std::vector<RegisteredOp>& ops);

/// The report `generate` prints when it refuses: one block per drifted
/// operator pointing at its lock line, the schema and C++ signature locked
/// and now, the user file to edit; then the files to edit and how to
/// accept. `lock_path` is the lock as the user names it. With `accepted`
/// (--update-lock) the headline is a note saying what is being accepted.
std::string formatDriftReport(const LockComparison& cmp,
                              const std::string& lock_path,
                              bool accepted = false);

/// What `generate` does with the lock.
struct LockPlan {
  enum class Action {
    kCreate,  ///< no lock yet: write it
    kKeep,    ///< the lock is up to date: leave it alone
    kUpdate,  ///< rewrite it (accepted changes, added/removed operators,
              ///< default-only changes, a new torch version)
    kRefuse,  ///< locked schemas drifted without --update-lock: write nothing
  };
  Action action = Action::kKeep;
  /// <specs dir>/accgen.lock.
  std::string path;
  /// The lock text to write for kCreate and kUpdate (and what it would be
  /// for kRefuse).
  std::string text;
  /// The lock text on disk ("" when there is none).
  std::string old_text;
  /// kRefuse: formatDriftReport. kUpdate with --update-lock: the same
  /// report of what was accepted. Otherwise one-line notes (added,
  /// removed, default-only changes absorbed) or "".
  std::string report;
  /// The comparison behind the decision; empty for kKeep when the lock on
  /// disk is byte for byte the lock that would be written (nothing was
  /// compared because nothing can differ).
  LockComparison comparison;

  /// The exit code the CLI returns when it stops here: kSchemaDrift for
  /// kRefuse, else kOk.
  ExitCode exitCode() const;
};

/// Decides what to do with `<backend.specDir()>/accgen.lock` for a run
/// against `torch_version`. Reads the lock but writes nothing. Throws
/// AccgenError(kInvalidInput) for a malformed lock.
LockPlan planLock(const model::Backend& backend,
                  const std::string& torch_version, bool update_lock);

/// Writes plan.text to plan.path for kCreate and kUpdate (through a
/// temporary file and a rename); does nothing otherwise.
void commitLock(const LockPlan& plan);

}  // namespace accgen::upgrade
