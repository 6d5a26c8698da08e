// The writer: puts a rendered file set on disk safely.
//
// Everything is rendered in memory first; the writer then plans the whole
// run (write, keep, create user file, remove stale, refuse) before touching
// the disk, so a refusal or an error leaves the tree as it was. Files whose
// bytes did not change are not written (their mtimes stay and a rebuild
// compiles nothing); every file written goes through a temporary file and
// a rename, all of them staged before any is renamed (Note [A run's writes
// are one transaction]).
// A manifest in the output directory records every generated file with its
// hash; it is how the writer tells its own files from hand edits and which
// files became stale.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace accgen::write {

/// One rendered file.
struct RenderedFile {
  std::string path;  ///< relative to the output directory, '/'-separated
  std::string content;
  bool user_owned = false;  ///< created once, never overwritten or removed
};

/// The manifest's file name inside the output directory.
inline constexpr const char* kManifestName = "accgen-manifest.json";

/// The journal of a run in progress (Note [Interrupted runs] in writer.cpp):
/// written before the first file and removed after the manifest.
inline constexpr const char* kJournalName = "accgen-manifest.json.pending";

/// The suffix of the temporary file each written file is staged in; a run
/// killed before its renames leaves them behind, the next run replaces them.
inline constexpr const char* kTempSuffix = ".accgen-tmp";

/// 64-bit content hash as 16 lowercase hex digits (XXH3).
std::string contentHash(const std::string& bytes);

/// What a run did, or would do.
struct WriteReport {
  std::vector<std::string> written;    ///< created or changed generated files
  std::vector<std::string> unchanged;  ///< generated files already up to date
  std::vector<std::string> created_user;  ///< user-owned files created now
  std::vector<std::string> kept_user;     ///< user-owned files left as they are
  std::vector<std::string> removed;       ///< stale generated files removed
  std::vector<std::string> edited;  ///< hand-edited generated files (refused)
  bool refused() const { return !edited.empty(); }
  /// "N written, N unchanged, N removed" (+ user files when any were created).
  std::string summary() const;
};

struct WriteOptions {
  bool force = false;  ///< overwrite / remove hand-edited generated files
  /// The spec directory: its files are never removed or overwritten,
  /// whatever the manifest says (Note [Paths that are never accgen's]).
  std::string specs_dir;
  nlohmann::json manifest_extra = nlohmann::json::object();  ///< e.g. versions
};

/// Writes `files` (plus the manifest) into `out_dir`. On refusal (an edited
/// file without force) nothing is written and the report lists the files.
WriteReport writeTree(const std::string& out_dir,
                      const std::vector<RenderedFile>& files,
                      const WriteOptions& options);

/// Renders the manifest text that writeTree would write for `files`.
std::string manifestText(const std::vector<RenderedFile>& files,
                         const nlohmann::json& extra);

// Note [Input fingerprint]
// ~~~~~~~~~~~~~~~~~~~~~~~~
// The inputs of a run are the specs, the user kernels, the schemas, the
// templates and accgen itself (its version and the hash of its executable).
// When the manifest records the inputs' fingerprint and every generated
// file it lists still has its hash (and every user file exists), a
// regeneration from the same inputs would write nothing. The recorded
// fingerprint is that of the inputs the run leaves behind: a run that
// writes the lock or creates user kernels fingerprints them as written
// (inputsAfterWriting in generator/cli/generate.cpp).

/// When the manifest in `out_dir` records `inputs` and every file it lists
/// is as it records (Note [Input fingerprint]), the report of a run from
/// those inputs, which would write nothing (everything unchanged or kept);
/// else nullopt.
std::optional<WriteReport> currentTree(const std::string& out_dir,
                                       const std::string& inputs);

/// Compares `files` (and the manifest) with the tree on disk without writing.
/// Returns one unified diff per differing file (empty when the tree matches);
/// user-owned files are compared only for existence.
std::vector<std::string> checkTree(const std::string& out_dir,
                                   const std::vector<RenderedFile>& files,
                                   const nlohmann::json& manifest_extra);

/// A unified diff (3 lines of context) between two texts, with ---/+++
/// headers naming `old_label` and `new_label`; empty when they are equal.
std::string unifiedDiff(const std::string& old_text,
                        const std::string& new_text,
                        const std::string& old_label,
                        const std::string& new_label);

}  // namespace accgen::write
