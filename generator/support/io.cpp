// File reading and command capture.
#include "generator/support/io.h"

#include <array>
#include <cstdio>
#include <fstream>
#include <sstream>

namespace accgen {

std::optional<std::string> readFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string shellQuote(std::string_view s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out += c;
    }
  }
  return out + "'";
}

std::optional<std::string> captureCommand(const std::string& command) {
  FILE* pipe = ::popen(command.c_str(), "r");
  if (!pipe) return std::nullopt;
  std::string out;
  std::array<char, 65536> buf;
  while (std::size_t n = std::fread(buf.data(), 1, buf.size(), pipe)) {
    out.append(buf.data(), n);
  }
  if (::pclose(pipe) != 0) return std::nullopt;
  return out;
}

}  // namespace accgen
