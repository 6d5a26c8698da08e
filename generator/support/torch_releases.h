// The torch releases accgen supports (torch_releases.txt at the top of the
// repository, compiled in): a torch outside them still works with accgen,
// with a warning that names the supported range.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace accgen {

/// The supported releases, oldest first ("2.13.0", "2.14.1", ...).
const std::vector<std::string>& supportedTorchReleases();

/// The warning for a torch `version` ("2.16.0", "2.12.1+cpu") whose
/// major.minor lies outside the supported releases' first and last, or
/// nullopt when it lies inside or cannot be read as a version (an unknown
/// version is not a reason to warn).
std::optional<std::string> untestedTorchWarning(const std::string& version);

}  // namespace accgen
