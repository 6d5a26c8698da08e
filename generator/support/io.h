// Small I/O helpers every layer shares: reading a whole file, and running a
// shell command for its output (how accgen asks Python about torch).
#pragma once

#include <sys/types.h>

#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace accgen {

/// The bytes of `path`, or nullopt when it cannot be opened or is not a
/// regular file (a FIFO, a device or a directory is never read: reading one
/// could block or never end). A file larger than kMaxInputBytes is not
/// read: AccgenError (exit 3) names it.
std::optional<std::string> readFile(const std::string& path);

/// What a file of mode `mode` (stat's st_mode) is, for a message: "a
/// directory", "a FIFO", "a device", "a socket".
const char* fileKind(mode_t mode);

/// The outcome of reading an input file (a spec, the lock) with
/// readInputFile.
struct InputFile {
  enum class Status { kRead, kMissing, kError };
  Status status = Status::kMissing;
  std::string text;   ///< the bytes, when kRead
  std::string error;  ///< why it could not be read, when kError
};

/// The largest input file accgen reads: specs and locks are a few hundred
/// kilobytes at most.
inline constexpr std::size_t kMaxInputBytes = 64u << 20;

/// Reads an input file within bounded time and memory: a missing file is
/// kMissing; a directory, FIFO, device or socket, a symbolic link loop, an
/// over-long path, an unreadable file or one larger than `max_bytes` is
/// kError with a reason people can act on. Never blocks on a FIFO.
InputFile readInputFile(const std::string& path,
                        std::size_t max_bytes = kMaxInputBytes);

/// The paths among `paths` (relative to `dir`, '/'-separated) that are
/// regular files, or symbolic links to one.
/// Each directory is listed once instead of every path being probed:
/// thousands of user kernels live in one directory.
std::set<std::string> existingFiles(const std::string& dir,
                                    const std::vector<std::string>& paths);

/// `s` quoted for a POSIX shell ('...' with embedded quotes escaped).
std::string shellQuote(std::string_view s);

/// The offset of the first byte of `text` that does not begin a well-formed
/// UTF-8 sequence (a stray continuation byte, a truncated or overlong
/// sequence, a surrogate, a code point past U+10FFFF); nullopt when `text`
/// is all UTF-8.
std::optional<std::size_t> firstInvalidUtf8(std::string_view text);

/// Runs `command` through /bin/sh and returns its standard output, or
/// nullopt when it cannot start or exits non-zero.
std::optional<std::string> captureCommand(const std::string& command);

}  // namespace accgen
