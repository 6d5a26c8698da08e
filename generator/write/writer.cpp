// Safe writing of the generated tree: plan first, then write, then the
// manifest last.
//
// Note [Writing new files]
// Nothing is written before the whole tree is rendered and the plan is
// made, so a refusal or an error while rendering leaves the disk as it was.
// A file that replaces one on disk is written to a temporary file and
// renamed over it: the old bytes stay whole until the new ones are. A file
// that does not exist yet has no old bytes to keep, so it is written in
// place, and a write that fails removes it: either way no file is ever left
// half-written by an error. A new tree (a clean generate, thousands of user
// kernel starters) thus costs one create and one write a file, not a
// temporary file and a rename besides. Each directory is created once.
#include "generator/write/writer.h"
#include "generator/support/io.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include <xxhash.h>
#include <dtl/dtl.hpp>

#include "generator/support/diagnostics.h"

namespace accgen::write {
namespace fs = std::filesystem;

namespace {

/// `rel` under `dir`, as a plain string: thousands of paths a run, each
/// formed once.
std::string under(const std::string& dir, const std::string& rel) {
  if (dir.empty()) return rel;
  return dir.back() == '/' ? dir + rel : dir + "/" + rel;
}

/// Creates the parent directories of the files it writes, each once.
class Directories {
 public:
  void ensureParent(const std::string& path) {
    const std::size_t slash = path.rfind('/');
    if (slash == std::string::npos || slash == 0) return;
    std::string dir = path.substr(0, slash);
    if (!made_.insert(dir).second) return;
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (ec) {
      throw AccgenError(ExitCode::kInternal, "cannot create directory '" + dir +
                                                 "': " + ec.message());
    }
  }

 private:
  std::set<std::string> made_;
};

/// Writes `content` to `path` in full or removes it: a failed write leaves
/// no half-written file behind.
void writeWhole(const std::string& path, const std::string& content) {
  const int fd =
      ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
  bool ok = fd >= 0;
  for (std::size_t done = 0; ok && done < content.size();) {
    const ssize_t n = ::write(fd, content.data() + done, content.size() - done);
    if (n < 0 && errno == EINTR) continue;
    ok = n > 0;
    if (ok) done += static_cast<std::size_t>(n);
  }
  if (fd >= 0 && ::close(fd) != 0) ok = false;
  if (!ok) {
    const std::string reason = std::strerror(errno);
    if (fd >= 0) ::unlink(path.c_str());
    throw AccgenError(ExitCode::kInternal,
                      "cannot write '" + path + "': " + reason);
  }
}

/// Replaces the file at `path` through a temporary file and a rename, so
/// that the old bytes stay whole until the new ones are.
void writeAtomically(const std::string& path, const std::string& content) {
  const std::string tmp = path + ".accgen-tmp";
  writeWhole(tmp, content);
  std::error_code ec;
  fs::rename(tmp, path, ec);
  if (ec) {
    fs::remove(tmp);
    throw AccgenError(ExitCode::kInternal,
                      "cannot rename '" + tmp + "': " + ec.message());
  }
}

/// Previously generated files and their hashes, from the old manifest.
std::map<std::string, std::string> loadManifestHashes(const fs::path& out) {
  std::map<std::string, std::string> hashes;
  auto text = readFile((out / kManifestName).string());
  if (!text) return hashes;
  auto j = nlohmann::json::parse(*text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.contains("files")) {
    throw AccgenError(ExitCode::kInvalidInput,
                      (out / kManifestName).string() +
                          ": error: the manifest is not valid JSON; restore it "
                          "or remove it together with the generated files");
  }
  for (const auto& [path, entry] : j["files"].items()) {
    hashes[path] = entry.value("hash", "");
  }
  return hashes;
}

/// Removes now-empty directories from `dir` up to (not including) `stop`.
void pruneEmptyDirs(fs::path dir, const fs::path& stop) {
  std::error_code ec;
  while (!dir.empty() && dir != stop && fs::is_directory(dir, ec) &&
         fs::is_empty(dir, ec)) {
    fs::remove(dir, ec);
    dir = dir.parent_path();
  }
}

}  // namespace

std::string contentHash(const std::string& bytes) {
  char buf[17];
  std::snprintf(
      buf, sizeof buf, "%016llx",
      static_cast<unsigned long long>(XXH3_64bits(bytes.data(), bytes.size())));
  return buf;
}

std::string WriteReport::summary() const {
  std::string s = std::to_string(written.size()) + " written, " +
                  std::to_string(unchanged.size()) + " unchanged, " +
                  std::to_string(removed.size()) + " removed";
  if (!created_user.empty()) {
    s += ", " + std::to_string(created_user.size()) + " user files created";
  }
  return s;
}

std::string manifestText(const std::vector<RenderedFile>& files,
                         const nlohmann::json& extra) {
  nlohmann::ordered_json j;
  j["generator"] = "accgen";
  for (const auto& [key, value] : extra.items())
    j[key] = value;
  nlohmann::ordered_json generated = nlohmann::ordered_json::object();
  nlohmann::ordered_json user = nlohmann::ordered_json::array();
  std::vector<const RenderedFile*> sorted;
  for (const auto& f : files)
    sorted.push_back(&f);
  std::sort(sorted.begin(), sorted.end(),
            [](auto* a, auto* b) { return a->path < b->path; });
  for (const auto* f : sorted) {
    if (f->user_owned) {
      user.push_back(f->path);
    } else {
      generated[f->path] = {{"hash", contentHash(f->content)}};
    }
  }
  j["files"] = generated;
  j["user_files"] = user;
  return j.dump(2) + "\n";
}

WriteReport writeTree(const std::string& out_dir,
                      const std::vector<RenderedFile>& files,
                      const WriteOptions& options) {
  const fs::path out(out_dir);
  const auto old_hashes = loadManifestHashes(out);
  WriteReport report;
  // Files to write, and whether each replaces one on disk.
  std::vector<std::pair<const RenderedFile*, bool>> to_write;
  std::set<std::string> produced;
  std::vector<std::string> paths;
  for (const auto& f : files)
    paths.push_back(f.path);
  // Only files that exist are read: a new tree reads nothing.
  const std::set<std::string> existing = existingFiles(out_dir, paths);

  for (const auto& f : files) {
    // Only a previous manifest can name stale files.
    if (!old_hashes.empty()) produced.insert(f.path);
    std::optional<std::string> on_disk;
    if (existing.count(f.path)) on_disk = readFile(under(out_dir, f.path));
    if (f.user_owned) {
      if (on_disk) {
        report.kept_user.push_back(f.path);
      } else {
        report.created_user.push_back(f.path);
        to_write.emplace_back(&f, false);
      }
      continue;
    }
    if (on_disk && *on_disk == f.content) {
      report.unchanged.push_back(f.path);
      continue;
    }
    if (on_disk) {
      // Ours only if the manifest says so and the bytes are what we wrote.
      auto it = old_hashes.find(f.path);
      bool ours = it != old_hashes.end() && it->second == contentHash(*on_disk);
      if (!ours && !options.force) {
        report.edited.push_back(f.path);
        continue;
      }
    }
    report.written.push_back(f.path);
    to_write.emplace_back(&f, on_disk.has_value());
  }

  std::vector<std::string> stale;
  for (const auto& [path, hash] : old_hashes) {
    if (produced.count(path)) continue;
    auto on_disk = readFile((out / path).string());
    if (!on_disk) continue;
    if (contentHash(*on_disk) != hash && !options.force) {
      report.edited.push_back(path);
      continue;
    }
    stale.push_back(path);
  }

  if (report.refused()) {
    report.written.clear();
    report.created_user.clear();
    return report;
  }

  // Note [Writing new files].
  Directories dirs;
  for (const auto& [f, replaces] : to_write) {
    const std::string path = under(out_dir, f->path);
    dirs.ensureParent(path);
    if (replaces) {
      writeAtomically(path, f->content);
    } else {
      writeWhole(path, f->content);
    }
  }
  for (const auto& path : stale) {
    std::error_code ec;
    fs::remove(out / path, ec);
    pruneEmptyDirs((out / path).parent_path(), out);
    report.removed.push_back(path);
  }
  std::string manifest = manifestText(files, options.manifest_extra);
  const std::string manifest_path = under(out_dir, kManifestName);
  auto old_manifest = readFile(manifest_path);
  if (old_manifest != manifest) {
    dirs.ensureParent(manifest_path);
    if (old_manifest) {
      writeAtomically(manifest_path, manifest);
    } else {
      writeWhole(manifest_path, manifest);
    }
  }
  return report;
}

std::optional<WriteReport> currentTree(const std::string& out_dir,
                                       const std::string& inputs) {
  const fs::path out(out_dir);
  auto text = readFile((out / kManifestName).string());
  if (!text) return std::nullopt;
  auto j = nlohmann::json::parse(*text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object() || j.value("inputs", "") != inputs ||
      !j.contains("files")) {
    return std::nullopt;
  }
  WriteReport report;
  for (const auto& [path, entry] : j["files"].items()) {
    auto on_disk = readFile((out / path).string());
    if (!on_disk || contentHash(*on_disk) != entry.value("hash", "")) {
      return std::nullopt;
    }
    report.unchanged.push_back(path);
  }
  std::vector<std::string> user_files;
  for (const auto& path : j.value("user_files", nlohmann::json::array())) {
    user_files.push_back(path.get<std::string>());
  }
  if (existingFiles(out_dir, user_files).size() != user_files.size()) {
    return std::nullopt;
  }
  report.kept_user = std::move(user_files);
  return report;
}

std::string unifiedDiff(const std::string& old_text,
                        const std::string& new_text,
                        const std::string& old_label,
                        const std::string& new_label) {
  if (old_text == new_text) return "";
  auto split = [](const std::string& s) {
    std::vector<std::string> lines;
    std::istringstream in(s);
    for (std::string line; std::getline(in, line);)
      lines.push_back(line);
    return lines;
  };
  dtl::Diff<std::string, std::vector<std::string>> diff(split(old_text),
                                                        split(new_text));
  diff.onHuge();
  diff.compose();
  diff.composeUnifiedHunks();
  std::ostringstream ss;
  ss << "--- " << old_label << "\n+++ " << new_label << "\n";
  diff.printUnifiedFormat(ss);
  std::string text = ss.str();
  // Differences only in the final newline leave no hunk; say so.
  if (text.find("@@") == std::string::npos) {
    text += "@@ final newline differs @@\n";
  }
  return text;
}

std::vector<std::string> checkTree(const std::string& out_dir,
                                   const std::vector<RenderedFile>& files,
                                   const nlohmann::json& manifest_extra) {
  const fs::path out(out_dir);
  std::vector<std::string> diffs;
  std::set<std::string> produced;
  auto compare = [&](const std::string& path, const std::string& content) {
    auto on_disk = readFile((out / path).string());
    std::string d =
        unifiedDiff(on_disk.value_or(""), content,
                    on_disk ? "a/" + path : "/dev/null", "b/" + path);
    if (!d.empty()) diffs.push_back(d);
  };
  for (const auto& f : files) {
    produced.insert(f.path);
    if (f.user_owned) {
      if (!fs::exists(out / f.path)) compare(f.path, f.content);
      continue;
    }
    compare(f.path, f.content);
  }
  for (const auto& [path, hash] : loadManifestHashes(out)) {
    if (produced.count(path)) continue;
    if (auto on_disk = readFile((out / path).string())) {
      diffs.push_back(unifiedDiff(*on_disk, "", "a/" + path, "/dev/null"));
    }
  }
  compare(kManifestName, manifestText(files, manifest_extra));
  return diffs;
}

}  // namespace accgen::write
