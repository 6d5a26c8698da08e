// Small I/O helpers every layer shares: reading a whole file, and running a
// shell command for its output (how accgen asks Python about torch).
#pragma once

#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace accgen {

/// The bytes of `path`, or nullopt when it cannot be opened.
std::optional<std::string> readFile(const std::string& path);

/// The paths among `paths` (relative to `dir`, '/'-separated) that exist.
/// Each directory is listed once instead of every path being probed:
/// thousands of user kernels live in one directory.
std::set<std::string> existingFiles(const std::string& dir,
                                    const std::vector<std::string>& paths);

/// `s` quoted for a POSIX shell ('...' with embedded quotes escaped).
std::string shellQuote(std::string_view s);

/// Runs `command` through /bin/sh and returns its standard output, or
/// nullopt when it cannot start or exits non-zero.
std::optional<std::string> captureCommand(const std::string& command);

}  // namespace accgen
