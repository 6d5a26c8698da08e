// Source locations, diagnostics and the one exception type for user errors.
//
// Every layer reports problems in the input as Diagnostics that carry a
// SourceLoc; a DiagnosticEngine collects them so that validation reports every
// error before the run stops. `main` maps an AccgenError to its exit code.
#pragma once

#include <cstdint>
#include <ostream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace accgen {

/// Documented process exit codes (docs/cli.md).
enum class ExitCode : int {
  kOk = 0,
  kCheckDiff = 1,         ///< `generate --check` found differences
  kUsage = 2,             ///< bad command line
  kInvalidInput = 3,      ///< invalid spec or schema input
  kRefusedOverwrite = 4,  ///< a generated file was edited by hand
  kSchemaDrift = 5,       ///< locked operator schemas changed
  kFileSystem = 6,        ///< the system refused a write (permissions, space,
                          ///< a path too long)
  kInternal = 70,         ///< a bug in accgen
};

/// A position in an input file; line and column are 1-based (0 = unknown).
struct SourceLoc {
  std::string file;
  int line = 0;
  int column = 0;

  /// "file:line:col", "file:line" or "file" depending on what is known.
  std::string str() const;
};

enum class Severity { kError, kWarning, kNote };

struct Diagnostic {
  Severity severity = Severity::kError;
  SourceLoc loc;
  std::string message;
  std::vector<std::string> notes;  ///< printed as "note: ..." lines

  /// "file:line:col: error: message" followed by the note lines.
  std::string format() const;
};

/// Collects diagnostics; callers check hasErrors() at a stage boundary.
class DiagnosticEngine {
 public:
  void error(SourceLoc loc, std::string message,
             std::vector<std::string> notes = {});
  void warning(SourceLoc loc, std::string message,
               std::vector<std::string> notes = {});
  bool hasErrors() const { return error_count_ > 0; }
  int errorCount() const { return error_count_; }
  const std::vector<Diagnostic>& diagnostics() const { return diags_; }
  void print(std::ostream& os) const;

 private:
  std::vector<Diagnostic> diags_;
  int error_count_ = 0;
};

/// `text` made safe to print, line by line: within each line every control
/// character (C0 and C1), the line and paragraph separators, the
/// bidirectional controls and every byte that is not UTF-8 are escaped
/// (`\x85`, `\u202e`). The one escaping
/// of quoted user text: every diagnostic and every error message passes
/// through it.
std::string printableLines(std::string_view text);

/// The one exception type for user-facing failures; `main` prints it and
/// exits with its code.
class AccgenError : public std::runtime_error {
 public:
  AccgenError(ExitCode code, std::string message)
      : std::runtime_error(std::move(message)), code_(code) {}
  ExitCode code() const { return code_; }

 private:
  ExitCode code_;
};

/// Levenshtein distance, for "did you mean" notes.
std::size_t editDistance(std::string_view a, std::string_view b);

/// The candidate nearest to `word`, or "" when none is close enough to be a
/// plausible misspelling.
std::string nearestName(std::string_view word,
                        const std::vector<std::string>& candidates);

}  // namespace accgen
