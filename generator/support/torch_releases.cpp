// ACCGEN_TORCH_RELEASES is torch_releases.txt's releases separated by
// spaces; generator/CMakeLists.txt defines it for this file alone.
#include "generator/support/torch_releases.h"

#include <charconv>
#include <sstream>
#include <utility>

namespace accgen {
namespace {

/// (major, minor) of "2.14.1+cu130", or nullopt.
std::optional<std::pair<int, int>> majorMinor(const std::string& version) {
  int major = 0;
  int minor = 0;
  const char* end = version.data() + version.size();
  auto [p, ec] = std::from_chars(version.data(), end, major);
  if (ec != std::errc() || p == end || *p != '.') return std::nullopt;
  auto [q, ec2] = std::from_chars(p + 1, end, minor);
  if (ec2 != std::errc()) return std::nullopt;
  return std::pair{major, minor};
}

}  // namespace

const std::vector<std::string>& supportedTorchReleases() {
  static const std::vector<std::string> releases = [] {
    std::vector<std::string> list;
    std::istringstream in(ACCGEN_TORCH_RELEASES);
    for (std::string release; in >> release;)
      list.push_back(release);
    return list;
  }();
  return releases;
}

std::optional<std::string> untestedTorchWarning(const std::string& version) {
  const auto& releases = supportedTorchReleases();
  const auto have = majorMinor(version);
  if (!have || releases.empty()) return std::nullopt;
  const auto oldest = majorMinor(releases.front());
  const auto newest = majorMinor(releases.back());
  if (!oldest || !newest) return std::nullopt;
  const bool older = *have < *oldest;
  if (!older && !(*have > *newest)) return std::nullopt;
  std::string tested;
  for (const auto& release : releases) {
    tested += (tested.empty() ? "" : ", ") + release;
  }
  return "warning: torch " + version + " is " +
         (older ? "older than the oldest" : "newer than the newest") +
         " release accgen supports; supported and tested: " + tested +
         "\nnote: the backend is generated as for any release; build and "
         "test it before relying on it (docs/upgrading.md, \"Supported "
         "releases\")\n";
}

}  // namespace accgen
