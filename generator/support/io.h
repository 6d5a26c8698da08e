// Small I/O helpers every layer shares: reading a whole file, and running a
// shell command for its output (how accgen asks Python about torch).
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace accgen {

/// The bytes of `path`, or nullopt when it cannot be opened.
std::optional<std::string> readFile(const std::string& path);

/// `s` quoted for a POSIX shell ('...' with embedded quotes escaped).
std::string shellQuote(std::string_view s);

/// Runs `command` through /bin/sh and returns its standard output, or
/// nullopt when it cannot start or exits non-zero.
std::optional<std::string> captureCommand(const std::string& command);

}  // namespace accgen
