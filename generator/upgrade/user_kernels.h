// Checks of user-owned kernel files against the current backend.
//
// accgen creates a user kernel file once and never writes it again, so a
// schema change that alters a kernel's C++ signature regenerates the
// declaration and the wrapper but leaves the user's definition behind; and
// an operator removed from the specs leaves its kernel file orphaned. These
// checks find both before the C++ compiler (or the linker) does, and point
// at the user's file with the signature it must now have. `generate`
// reports them as warnings (the new declaration is written so the user can
// see it), `validate` as errors (docs/upgrading.md, "Safe regeneration").
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "generator/model/backend.h"
#include "generator/schema/schema.h"
#include "generator/support/diagnostics.h"

namespace accgen::upgrade {

/// Searches `source` (the text of `path`) for a definition of `function`
/// whose parameter types (whitespace, parameter names, defaults, east/west
/// const and at::/c10::/std:: qualifiers aside) are those of `signature`.
/// Returns nothing when one exists, else a diagnostic at the definition
/// that no longer matches (or at the file when there is none) saying that
/// `function` no longer matches `op` and what the signature is now.
std::vector<Diagnostic> checkKernelSource(std::string_view source,
                                          const std::string& path,
                                          const std::string& function,
                                          const schema::CppSignature& signature,
                                          const std::string& op,
                                          Severity severity = Severity::kError);

/// Checks every user-written kernel of `backend` (the primary form of each
/// `kernel` entry, each custom operator's device kernel and Meta kernel) in
/// its user-owned file under `out_dir`. Files that do not exist yet are
/// skipped: generate creates them from the starter with the right
/// signature.
std::vector<Diagnostic> checkUserKernels(const model::Backend& backend,
                                         const std::string& out_dir,
                                         Severity severity = Severity::kError);

/// User-owned kernel files under `out_dir` that no operator of `backend`
/// uses any more: listed in the previous manifest's "user_files" under
/// kernels/, or present as kernels/*.cpp, but not a kernel file of the
/// backend now. One warning each, never a deletion.
std::vector<Diagnostic> findOrphanedKernels(const model::Backend& backend,
                                            const std::string& out_dir);

/// `out_dir` joined with a relative path the way diagnostics print it:
/// "kernels/add.cpp" for out_dir "" or ".", else "<out_dir>/kernels/add.cpp".
std::string displayPath(const std::string& out_dir, const std::string& rel);

}  // namespace accgen::upgrade
