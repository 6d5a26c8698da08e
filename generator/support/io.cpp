// File reading and command capture.
#include "generator/support/io.h"
#include "generator/support/diagnostics.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>

namespace accgen {

const char* fileKind(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode) || S_ISBLK(mode)) return "a device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

namespace {

std::string tooLarge(std::uintmax_t size, std::size_t max_bytes) {
  return "file too large: " +
         (size > max_bytes ? std::to_string(size)
                           : "more than " + std::to_string(max_bytes)) +
         " bytes (accgen reads files of at most " + std::to_string(max_bytes) +
         ")";
}

/// The one bounded read every file accgen reads goes through: the regular
/// file open as `fd` (its fstat in `st`) read into `text`, at most
/// `max_bytes` of it, whether it grows while read or not. Returns the
/// reason it could not be read, or "" once read; closes `fd`.
std::string readOpen(int fd, const struct stat& st, std::size_t max_bytes,
                     std::string& text) {
  if (static_cast<std::uintmax_t>(st.st_size) > max_bytes) {
    ::close(fd);
    return tooLarge(static_cast<std::uintmax_t>(st.st_size), max_bytes);
  }
  // st_size is a hint (0 for /proc files); read on until the end, into a
  // buffer one byte larger than the bound so that a file past it shows.
  text.assign(static_cast<std::size_t>(st.st_size) + 1, '\0');
  std::size_t size = 0;
  for (;;) {
    if (size == text.size()) {
      if (size > max_bytes) break;
      text.resize(std::min(text.size() * 2 + 4096, max_bytes + 1));
    }
    const ssize_t n = ::read(fd, text.data() + size, text.size() - size);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      ::close(fd);
      return std::string("cannot read file: ") + std::strerror(err);
    }
    if (n == 0) break;
    size += static_cast<std::size_t>(n);
  }
  ::close(fd);
  if (size > max_bytes) return tooLarge(size, max_bytes);
  text.resize(size);
  return "";
}

}  // namespace

std::optional<std::string> readFile(const std::string& path) {
  // One open, one fstat and reads straight into the result: accgen reads
  // thousands of files a run (templates, user kernels, the tree on disk).
  // O_NONBLOCK: opening a FIFO must not wait for a writer; fstat then
  // refuses everything but regular files.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return std::nullopt;
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return std::nullopt;
  }
  std::string text;
  const std::string error = readOpen(fd, st, kMaxInputBytes, text);
  if (!error.empty()) {
    throw AccgenError(ExitCode::kInvalidInput, path + ": error: " + error);
  }
  return text;
}

InputFile readInputFile(const std::string& path, std::size_t max_bytes) {
  InputFile result;
  auto fail = [&](std::string why) {
    result.status = InputFile::Status::kError;
    result.error = std::move(why);
    return result;
  };
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    const int err = errno;
    if (err == ENOENT) {
      // A dangling symbolic link is missing too, but say where it points.
      struct stat link {};
      if (::lstat(path.c_str(), &link) == 0 && S_ISLNK(link.st_mode)) {
        return fail("a symbolic link to a file that does not exist");
      }
      return result;
    }
    return fail(std::string("cannot read file: ") + std::strerror(err));
  }
  if (!S_ISREG(st.st_mode)) {
    return fail(std::string("expected a file, found ") + fileKind(st.st_mode));
  }
  if (static_cast<std::uintmax_t>(st.st_size) > max_bytes) {
    return fail(tooLarge(static_cast<std::uintmax_t>(st.st_size), max_bytes));
  }
  // The file may have been swapped since stat: open without blocking and
  // check again what was opened.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    return fail(std::string("cannot read file: ") + std::strerror(errno));
  }
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return fail(std::string("expected a file, found ") + fileKind(st.st_mode));
  }
  std::string error = readOpen(fd, st, max_bytes, result.text);
  if (!error.empty()) {
    result.text.clear();
    return fail(std::move(error));
  }
  result.status = InputFile::Status::kRead;
  return result;
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
        // A regular file, or a link to one: a directory, a FIFO or a
        // dangling link where a file goes is no file.
        if (!d->is_regular_file(ec)) continue;
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

std::optional<std::size_t> firstInvalidUtf8(std::string_view text) {
  const auto byte = [&](std::size_t i) {
    return static_cast<unsigned char>(text[i]);
  };
  std::size_t i = 0;
  while (i < text.size()) {
    const unsigned char lead = byte(i);
    if (lead < 0x80) {
      ++i;
      continue;
    }
    // The sequence's length and the range of its second byte (which
    // excludes overlong forms, surrogates and code points past U+10FFFF).
    std::size_t length = 0;
    unsigned char low = 0x80;
    unsigned char high = 0xBF;
    if (lead >= 0xC2 && lead <= 0xDF) {
      length = 2;
    } else if (lead >= 0xE0 && lead <= 0xEF) {
      length = 3;
      if (lead == 0xE0) low = 0xA0;
      if (lead == 0xED) high = 0x9F;
    } else if (lead >= 0xF0 && lead <= 0xF4) {
      length = 4;
      if (lead == 0xF0) low = 0x90;
      if (lead == 0xF4) high = 0x8F;
    } else {
      return i;
    }
    if (i + length > text.size()) return i;
    if (byte(i + 1) < low || byte(i + 1) > high) return i;
    for (std::size_t k = 2; k < length; ++k) {
      if (byte(i + k) < 0x80 || byte(i + k) > 0xBF) return i;
    }
    i += length;
  }
  return std::nullopt;
}

}  // namespace accgen
