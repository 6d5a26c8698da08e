// Helpers the generator's gtest suites share: a file's bytes, a file
// written with its directories, and a DiagnosticEngine's report as text.
#pragma once

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "generator/support/diagnostics.h"

namespace accgen {

inline std::string slurp(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

inline void spit(const std::filesystem::path& p, const std::string& text) {
  std::filesystem::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary) << text;
}

inline std::string printed(const DiagnosticEngine& diags) {
  std::ostringstream out;
  diags.print(out);
  return out.str();
}

}  // namespace accgen
