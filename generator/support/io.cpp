// File reading and command capture.
#include "generator/support/io.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <map>

namespace accgen {

std::optional<std::string> readFile(const std::string& path) {
  // One open, one fstat and reads straight into the result: accgen reads
  // thousands of files a run (templates, user kernels, the tree on disk).
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  struct stat st {};
  if (::fstat(fd, &st) != 0 || S_ISDIR(st.st_mode)) {
    ::close(fd);
    return std::nullopt;
  }
  std::string text;
  // st_size is a hint (0 for /proc files); read on until the end. A read
  // that leaves room in the buffer has reached the end of a regular file.
  text.resize(static_cast<std::size_t>(st.st_size > 0 ? st.st_size : 0) + 1);
  std::size_t size = 0;
  for (;;) {
    if (size == text.size()) text.resize(text.size() * 2 + 4096);
    const ssize_t n = ::read(fd, text.data() + size, text.size() - size);
    if (n < 0) {
      ::close(fd);
      return std::nullopt;
    }
    size += static_cast<std::size_t>(n);
    if (n == 0 || (S_ISREG(st.st_mode) && size < text.size())) break;
  }
  ::close(fd);
  text.resize(size);
  return text;
}

std::set<std::string> existingFiles(const std::string& dir,
                                    const std::vector<std::string>& paths) {
  namespace fs = std::filesystem;
  const fs::path root(dir.empty() ? "." : dir);
  // Directory (relative, with its trailing '/') -> the names in it.
  std::map<std::string, std::set<std::string>> listed;
  std::set<std::string> found;
  for (const auto& path : paths) {
    const std::size_t slash = path.rfind('/');
    const std::string parent =
        slash == std::string::npos ? "" : path.substr(0, slash + 1);
    auto it = listed.find(parent);
    if (it == listed.end()) {
      it = listed.emplace(parent, std::set<std::string>{}).first;
      std::error_code ec;
      for (fs::directory_iterator d(root / parent, ec), end; !ec && d != end;
           d.increment(ec)) {
        // A link counts when what it names exists, as for fs::exists.
        if (d->is_symlink(ec) && !fs::exists(d->path(), ec)) continue;
        it->second.insert(d->path().filename().string());
      }
    }
    if (it->second.count(path.substr(parent.size()))) found.insert(path);
  }
  return found;
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
