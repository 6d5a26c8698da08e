// Safe writing of the generated tree: plan first, then write, then the
// manifest last.
//
// Nothing is written before the whole tree is rendered and the plan is
// made, and then a run's writes are one transaction (Note [A run's writes
// are one transaction]): a refusal, an error while rendering or a failed
// write leaves the disk as it was. Each directory is created once.
#include "generator/write/writer.h"
#include "generator/support/io.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <ranges>
#include <set>
#include <sstream>

#include <xxhash.h>
#include <dtl/dtl.hpp>

#include "generator/support/diagnostics.h"

namespace accgen::write {
namespace fs = std::filesystem;

namespace {

// The largest file of the output tree accgen reads: no generated file, no
// manifest and no journal comes near it.
constexpr std::uintmax_t kMaxOutputBytes = std::uintmax_t{64} << 20;

// What a file of the output tree larger than kMaxOutputBytes reads as: a
// marker that equals no generated content and hashes to no recorded hash,
// so such a file counts as edited by hand (kept, unless --force), and a
// manifest or journal of that size as unreadable, without reading it.
constexpr char kOversizedBytes[] = "\0accgen: a file too large to read\0";
constexpr std::string_view kOversized(kOversizedBytes,
                                      sizeof kOversizedBytes - 1);

/// A file at a generated path, read within kMaxOutputBytes (readFile: only
/// a regular file is read). The records (the manifest, the journal) are
/// read with readFile, which refuses one past the bound.
std::optional<std::string> readOutput(const std::string& path) {
  std::error_code ec;
  const std::uintmax_t size = fs::file_size(path, ec);
  if (!ec && size > kMaxOutputBytes) return std::string(kOversized);
  return readFile(path);
}

/// `rel` under `dir`, as a plain string: thousands of paths a run, each
/// formed once.
std::string under(const std::string& dir, const std::string& rel) {
  if (dir.empty()) return rel;
  return dir.back() == '/' ? dir + rel : dir + "/" + rel;
}

/// Note [The output tree is a boundary]
/// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
/// Every path the writer writes or removes is checked to stay inside the
/// output directory: manifest and journal entries must be relative paths
/// without '.' or '..' parts (isTreePath), a directory on the way that is a
/// symbolic link must lead to a directory inside the tree (Directories::
/// check, before anything is written), and files are created with
/// O_NOFOLLOW | O_EXCL and replaced through a rename, which replaces a link
/// rather than writing where it points.
bool isTreePath(const std::string& rel) {
  if (rel.empty() || rel.front() == '/' ||
      rel.find('\\') != std::string::npos ||
      rel.find('\0') != std::string::npos) {
    return false;
  }
  std::size_t start = 0;
  for (;;) {
    const std::size_t slash = rel.find('/', start);
    const std::string_view part = std::string_view(rel).substr(
        start, slash == std::string::npos ? std::string::npos : slash - start);
    if (part.empty() || part == "." || part == "..") return false;
    if (slash == std::string::npos) return true;
    start = slash + 1;
  }
}

/// The output directory with links resolved, as paths of the tree are
/// compared with it (its absolute path when it cannot be resolved).
fs::path treeRoot(const std::string& out_dir) {
  const fs::path dir = fs::absolute(out_dir.empty() ? "." : out_dir);
  std::error_code ec;
  fs::path root = fs::weakly_canonical(dir, ec);
  return ec ? dir : root;
}

/// The directories of the files a run writes or removes: checked to lie
/// inside the tree before anything is written, created each once.
class Directories {
 public:
  explicit Directories(const std::string& out_dir) : out_(out_dir) {}

  /// Refuses (AccgenError, exit 4) when the directory of `rel` (a tree path)
  /// is reached through a symbolic link that leads outside the tree, or is
  /// not a directory.
  void check(const std::string& rel) {
    const std::size_t slash = rel.rfind('/');
    if (slash == std::string::npos) return;
    std::string dir = rel.substr(0, slash);
    if (!checked_.insert(dir).second) return;
    std::error_code ec;
    if (root_.empty()) root_ = treeRoot(out_);
    std::string walked;
    for (std::size_t start = 0; start <= dir.size();) {
      std::size_t end = dir.find('/', start);
      if (end == std::string::npos) end = dir.size();
      walked = dir.substr(0, end);
      start = end + 1;
      const std::string path = under(out_, walked);
      struct stat st {};
      if (::lstat(path.c_str(), &st) != 0) return;  // created by the run
      if (S_ISDIR(st.st_mode)) continue;
      if (!S_ISLNK(st.st_mode)) refuse(path, "is not a directory");
      const fs::path target = fs::canonical(path, ec);
      if (ec) refuse(path, "is a symbolic link to nothing");
      const auto [end_root, end_target] = std::mismatch(
          root_.begin(), root_.end(), target.begin(), target.end());
      if (end_root != root_.end()) {
        refuse(path,
               "is a symbolic link that leads outside the output "
               "directory, to '" +
                   target.string() + "'");
      }
      if (!fs::is_directory(target, ec)) refuse(path, "is not a directory");
    }
  }

  /// Creates the directory of `path` and those above it that are missing,
  /// remembering each it creates (created()).
  void ensureParent(const std::string& path) {
    const std::size_t slash = path.rfind('/');
    if (slash == std::string::npos || slash == 0) return;
    std::string dir = path.substr(0, slash);
    if (!made_.insert(dir).second) return;
    std::vector<std::string> missing;
    for (std::string d = dir; !d.empty();) {
      struct stat st {};
      if (::lstat(d.c_str(), &st) == 0) break;
      missing.push_back(d);
      const std::size_t up = d.rfind('/');
      d = up == std::string::npos || up == 0 ? "" : d.substr(0, up);
    }
    for (auto it = missing.rbegin(); it != missing.rend(); ++it) {
      if (::mkdir(it->c_str(), 0777) != 0 && errno != EEXIST) {
        throw AccgenError(
            ExitCode::kFileSystem,
            *it + ": error: cannot create directory: " + std::strerror(errno));
      }
      created_.push_back(*it);
    }
  }

  /// The directories ensureParent created, in the order it created them.
  const std::vector<std::string>& created() const { return created_; }

 private:
  [[noreturn]] static void refuse(const std::string& path,
                                  const std::string& why) {
    throw AccgenError(ExitCode::kRefusedOverwrite,
                      path + ": error: " + why +
                          "; not followed\nnote: accgen writes only inside "
                          "the output directory; nothing was written");
  }

  std::string out_;
  fs::path root_;
  std::set<std::string> checked_;
  std::set<std::string> made_;
  std::vector<std::string> created_;
};

/// Writes `content` to `path` in full or removes it: a failed write leaves
/// no half-written file behind.
/// The file must not exist: O_EXCL | O_NOFOLLOW never write through a link.
/// Returns false, writing nothing, when something is there already.
bool writeWhole(const std::string& path, const std::string& content) {
  const int fd = ::open(
      path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
  if (fd < 0 && (errno == EEXIST || errno == ELOOP)) return false;
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
    throw AccgenError(ExitCode::kFileSystem,
                      path + ": error: cannot write: " + reason);
  }
  return true;
}

/// Refuses, before anything is written, a path the run writes that holds
/// something a file cannot replace: a directory (exit 6, as the rename
/// would fail), or a FIFO, a device or a socket (exit 3: never opened,
/// never replaced). A regular file or a symbolic link is replaced.
void checkReplaceable(const std::string& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0 || S_ISREG(st.st_mode) ||
      S_ISLNK(st.st_mode)) {
    return;
  }
  if (S_ISDIR(st.st_mode)) {
    throw AccgenError(ExitCode::kFileSystem,
                      path +
                          ": error: cannot replace it: Is a directory\n"
                          "note: nothing was written");
  }
  throw AccgenError(ExitCode::kInvalidInput,
                    path + ": error: expected a file, found " +
                        fileKind(st.st_mode) +
                        "\nnote: nothing was written; remove it, or move it "
                        "out of the output directory");
}

/// Note [A run's writes are one transaction]
/// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
/// Every check that can refuse a run runs before its first write (Note
/// [The output tree is a boundary], checkReplaceable). Then the journal is
/// written (Note [Interrupted runs]), then the bytes of every file the run
/// writes, the manifest last, each into a temporary file beside it; only
/// when all of them are whole are they renamed into place and the stale
/// files removed. A failure before the renames (no space, no permission)
/// removes the temporary files and the directories the run made and puts
/// the journal back as it was: the tree is byte for byte as the run found
/// it. A failure among the renames, which the checks make all but
/// impossible, leaves the journal, and the next run finishes the work. No
/// file is ever half-written, new or replaced, so a file on disk is either
/// what a run wrote in full or not accgen's.
class Transaction {
 public:
  explicit Transaction(Directories& dirs) : dirs_(dirs) {}

  /// The bytes of `path`, staged in its temporary file.
  void stage(const std::string& path, const std::string& content) {
    const std::string tmp = path + kTempSuffix;
    dirs_.ensureParent(path);
    // A stray one from an interrupted run, or a link, is removed first; a
    // clean run finds none and pays no extra call.
    if (!writeWhole(tmp, content) &&
        (::unlink(tmp.c_str()) != 0 || !writeWhole(tmp, content))) {
      throw AccgenError(ExitCode::kFileSystem,
                        tmp +
                            ": error: cannot write: something else is "
                            "there\nnote: nothing was written");
    }
    staged_.push_back(path);
  }

  /// Puts every staged file in place, in the order staged.
  void commit() {
    for (std::size_t i = 0; i < staged_.size(); ++i) {
      const std::string& path = staged_[i];
      if (::rename((path + kTempSuffix).c_str(), path.c_str()) != 0) {
        const std::string reason = std::strerror(errno);
        for (std::size_t k = i; k < staged_.size(); ++k)
          ::unlink((staged_[k] + kTempSuffix).c_str());
        staged_.clear();
        throw AccgenError(ExitCode::kFileSystem,
                          path + ": error: cannot replace it: " + reason);
      }
    }
    staged_.clear();
  }

  /// Removes the temporary files stage() wrote (the run removes the
  /// directories it made, once every transaction is rolled back).
  void rollBack() {
    for (const auto& path : staged_)
      ::unlink((path + kTempSuffix).c_str());
    staged_.clear();
  }

 private:
  Directories& dirs_;
  std::vector<std::string> staged_;
};

std::string hashOf(const nlohmann::json& entry) {
  if (!entry.is_object()) return "";
  auto it = entry.find("hash");
  return it != entry.end() && it->is_string() ? it->get<std::string>() : "";
}

[[noreturn]] void outsideEntry(const fs::path& file, const std::string& rel) {
  throw AccgenError(ExitCode::kInvalidInput,
                    file.string() + ": error: entry '" + rel +
                        "' is not a path inside the output directory\nnote: "
                        "nothing was written or removed; restore the "
                        "manifest, or remove it together with the generated "
                        "files");
}

/// Note [Interrupted runs]
/// ~~~~~~~~~~~~~~~~~~~~~~~
/// A run writes a journal, `accgen-manifest.json.pending`, before it
/// touches any file: the hash of every generated file it is about to write
/// and the paths it creates. The manifest is written last and the journal
/// removed after it. A run killed in between leaves the journal, and the
/// next run takes a file as its own only when its bytes are what the old
/// manifest or the journal says accgen wrote there (their hash): every
/// file is put in place whole (Note [A run's writes are one transaction]),
/// so no other bytes can be a killed run's. A forged entry thus takes no
/// file a person wrote or edited. Temporary files of the journal's paths
/// are removed. The fast path does not run while a journal is there. The
/// journal's entries are checked like the manifest's.
struct Journal {
  bool present = false;
  std::string text;  ///< its bytes, put back when a run fails
  std::map<std::string, std::set<std::string>> hashes;
  std::set<std::string> created;
};

Journal loadJournal(const fs::path& out) {
  Journal journal;
  const fs::path file = out / kJournalName;
  checkReplaceable(file.string());
  auto text = readFile(file.string());
  if (!text) return journal;
  journal.present = true;
  journal.text = *text;
  // A journal cut short was being written when the run was killed: no file
  // had been touched yet.
  auto j = nlohmann::json::parse(*text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return journal;
  const nlohmann::json files = j.value("files", nlohmann::json::object());
  const nlohmann::json created = j.value("created", nlohmann::json::array());
  if (!files.is_object() || !created.is_array()) return journal;
  for (const auto& [path, list] : files.items()) {
    if (!list.is_array()) continue;
    if (!isTreePath(path)) outsideEntry(file, path);
    for (const auto& h : list) {
      if (h.is_string()) journal.hashes[path].insert(h.get<std::string>());
    }
  }
  for (const auto& path : created) {
    if (!path.is_string()) continue;
    if (!isTreePath(path.get<std::string>())) {
      outsideEntry(file, path.get<std::string>());
    }
    journal.created.insert(path.get<std::string>());
  }
  return journal;
}

/// The old manifest: previously generated files with their hashes, and the
/// user files it lists.
struct Manifest {
  std::optional<std::string> text;  ///< its bytes, when there is one
  std::map<std::string, std::string> hashes;
  std::set<std::string> user_files;
};

/// The manifest in `out`. `interrupted`: a journal is there, and a
/// manifest cut short is taken as none.
Manifest loadManifest(const fs::path& out, bool interrupted = false) {
  Manifest manifest;
  checkReplaceable((out / kManifestName).string());
  manifest.text = readFile((out / kManifestName).string());
  const auto& text = manifest.text;
  if (!text) return manifest;
  auto j = nlohmann::json::parse(*text, nullptr, /*allow_exceptions=*/false);
  if (interrupted &&
      (j.is_discarded() || !j.is_object() || !j.contains("files"))) {
    return manifest;
  }
  if (j.is_discarded() || !j.is_object() || !j.contains("files") ||
      !j["files"].is_object()) {
    throw AccgenError(ExitCode::kInvalidInput,
                      (out / kManifestName).string() +
                          ": error: the manifest is not valid JSON; restore it "
                          "or remove it together with the generated files");
  }
  for (const auto& [path, entry] : j["files"].items()) {
    if (!isTreePath(path)) outsideEntry(out / kManifestName, path);
    manifest.hashes[path] = hashOf(entry);
  }
  const nlohmann::json user = j.value("user_files", nlohmann::json::array());
  if (user.is_array()) {
    for (const auto& path : user) {
      if (path.is_string()) manifest.user_files.insert(path.get<std::string>());
    }
  }
  return manifest;
}

/// Note [Paths that are never accgen's]
/// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
/// Whatever a manifest or a journal says, a run never removes, replaces or
/// cleans the temporary file of: anything inside a `.git` directory, the
/// user kernels (`kernels/`), a user file (this run's or one the manifest
/// lists under `user_files`), and a file directly in the spec directory
/// that the run does not generate (in an `accgen init` project the output
/// directory holds `specs/`). Paths are compared once links are resolved.
/// An entry naming such a path is refused (exit 3), as an entry outside the
/// tree is: the records were edited, and nothing is written or removed.
class NeverOurs {
 public:
  NeverOurs(const std::string& out_dir, const std::string& specs_dir,
            const std::vector<RenderedFile>& files,
            const std::set<std::string>& old_user_files)
      : root_(treeRoot(out_dir)), user_(old_user_files) {
    if (!specs_dir.empty()) {
      std::error_code ec;
      specs_ = fs::weakly_canonical(fs::absolute(specs_dir), ec);
      if (ec) specs_.clear();
    }
    for (const auto& f : files)
      rendered_.insert(f.path);
  }

  /// Refuses (exit 3) when entry `rel` of `records` names such a path; a
  /// path the run renders is the run's own (a user file among them is
  /// created once and never replaced).
  void check(const fs::path& records, const std::string& rel) const {
    if (rendered_.count(rel)) return;
    if (auto why = reason(rel)) {
      throw AccgenError(
          ExitCode::kInvalidInput,
          records.string() + ": error: entry '" + rel + "' " + *why +
              ", which accgen never removes or overwrites\nnote: nothing "
              "was written or removed; restore the manifest, or remove it "
              "and its journal together with the generated files");
    }
  }

 private:
  /// Why `rel` (a tree path the run does not render) is never the run's to
  /// remove, or nullopt when it may be.
  std::optional<std::string> reason(const std::string& rel) const {
    if (user_.count(rel)) return "names a file of yours";
    std::error_code ec;
    const fs::path real = fs::weakly_canonical(root_ / rel, ec);
    // As named and as resolved.
    const fs::path paths[] = {
        fs::path(rel), ec ? fs::path(rel) : real.lexically_relative(root_)};
    for (const fs::path& path : paths) {
      for (const fs::path& part : path) {
        if (part == ".git") return "is inside a .git directory";
      }
    }
    for (const fs::path& path : paths) {
      if (!path.empty() && *path.begin() == "kernels")
        return "is a user kernel";
    }
    if (user_.count(paths[1].generic_string())) return "names a file of yours";
    if (!ec && !specs_.empty() && real.parent_path() == specs_) {
      return "is a spec file";
    }
    return std::nullopt;
  }

  fs::path root_;
  fs::path specs_;
  std::set<std::string> user_;
  std::set<std::string> rendered_;
};

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
  const Journal journal = loadJournal(out);  // Note [Interrupted runs]
  const Manifest old = loadManifest(out, journal.present);
  const auto& old_hashes = old.hashes;
  // Note [Paths that are never accgen's]: what the records name and the
  // run does not produce.
  const NeverOurs never_ours(out_dir, options.specs_dir, files, old.user_files);
  for (const auto& [path, hash] : old_hashes)
    never_ours.check(out / kManifestName, path);
  for (const auto& [path, hashes] : journal.hashes)
    never_ours.check(out / kJournalName, path);
  for (const auto& path : journal.created)
    never_ours.check(out / kJournalName, path);
  // Ours: what the last complete run or a killed one wrote there, in full.
  auto ours = [&](const std::string& path, const std::string& bytes) {
    const std::string hash = contentHash(bytes);
    auto it = old_hashes.find(path);
    if (it != old_hashes.end() && it->second == hash) return true;
    auto j = journal.hashes.find(path);
    return j != journal.hashes.end() && j->second.count(hash) > 0;
  };
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
    // Only a previous manifest or journal can name stale files.
    if (!old_hashes.empty() || journal.present) produced.insert(f.path);
    std::optional<std::string> on_disk;
    if (existing.count(f.path)) on_disk = readOutput(under(out_dir, f.path));
    if (f.user_owned) {
      if (on_disk) {
        report.kept_user.push_back(f.path);
      } else {
        report.created_user.push_back(f.path);
        to_write.emplace_back(&f, on_disk.has_value());
      }
      continue;
    }
    if (on_disk && *on_disk == f.content) {
      report.unchanged.push_back(f.path);
      continue;
    }
    if (on_disk && !ours(f.path, *on_disk) && !options.force) {
      report.edited.push_back(f.path);
      continue;
    }
    report.written.push_back(f.path);
    to_write.emplace_back(&f, on_disk.has_value());
  }

  std::vector<std::string> stale;
  std::set<std::string> candidates;
  for (const auto& [path, hash] : old_hashes)
    candidates.insert(path);
  for (const auto& [path, hashes] : journal.hashes)
    candidates.insert(path);
  for (const auto& path : candidates) {
    if (produced.count(path)) continue;
    auto on_disk = readOutput((out / path).string());
    if (!on_disk) continue;
    if (!ours(path, *on_disk) && !options.force) {
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

  // Note [The output tree is a boundary], Note [A run's writes are one
  // transaction]: every check before the first write.
  Directories dirs(out_dir);
  for (const auto& [f, replaces] : to_write) {
    dirs.check(f->path);
    checkReplaceable(under(out_dir, f->path));
    checkReplaceable(under(out_dir, f->path) + kTempSuffix);
  }
  for (const auto& path : stale)
    dirs.check(path);
  // The temporary files of the journal's paths are removed below.
  for (const auto& [path, hashes] : journal.hashes)
    dirs.check(path);
  for (const auto& path : journal.created)
    dirs.check(path);
  const std::string journal_path = under(out_dir, kJournalName);
  const std::string manifest_path = under(out_dir, kManifestName);
  const std::string manifest = manifestText(files, options.manifest_extra);
  const bool new_manifest = old.text != manifest;
  if (to_write.empty() && stale.empty() && !journal.present && !new_manifest) {
    return report;
  }
  checkReplaceable(journal_path + kTempSuffix);
  checkReplaceable(manifest_path + kTempSuffix);

  // The journal first, with what a killed earlier run was writing.
  nlohmann::json hashes = nlohmann::json::object();
  for (const auto& [path, list] : journal.hashes) {
    for (const auto& h : list)
      hashes[path].push_back(h);
  }
  std::set<std::string> created = journal.created;
  for (const auto& [f, replaces] : to_write) {
    if (!f->user_owned) hashes[f->path].push_back(contentHash(f->content));
    if (!replaces) created.insert(f->path);
  }
  nlohmann::json j;
  j["files"] = std::move(hashes);
  j["created"] = created;
  Transaction journal_write(dirs), files_write(dirs), manifest_write(dirs);
  bool journal_written = false;
  try {
    journal_write.stage(journal_path, j.dump() + "\n");
    journal_write.commit();
    journal_written = true;
    // Temporary files a killed run left.
    for (const auto& [path, list] : journal.hashes)
      ::unlink((under(out_dir, path) + kTempSuffix).c_str());
    for (const auto& path : journal.created)
      ::unlink((under(out_dir, path) + kTempSuffix).c_str());
    for (const auto& [f, replaces] : to_write)
      files_write.stage(under(out_dir, f->path), f->content);
    if (new_manifest) manifest_write.stage(manifest_path, manifest);
  } catch (...) {
    journal_write.rollBack();
    files_write.rollBack();
    manifest_write.rollBack();
    if (journal_written && journal.present) {
      Transaction restore(dirs);
      restore.stage(journal_path, journal.text);
      restore.commit();
    } else if (journal_written) {
      ::unlink(journal_path.c_str());
    }
    for (const auto& dir : dirs.created() | std::views::reverse)
      ::rmdir(dir.c_str());
    throw;
  }
  files_write.commit();
  for (const auto& path : stale) {
    std::error_code ec;
    fs::remove(out / path, ec);
    pruneEmptyDirs((out / path).parent_path(), out);
    report.removed.push_back(path);
  }
  manifest_write.commit();
  ::unlink(journal_path.c_str());
  return report;
}

std::optional<WriteReport> currentTree(const std::string& out_dir,
                                       const std::string& inputs) {
  const fs::path out(out_dir);
  auto text = readOutput((out / kManifestName).string());
  if (!text) return std::nullopt;
  auto j = nlohmann::json::parse(*text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object() || !j.contains("files") ||
      !j["files"].is_object()) {
    return std::nullopt;
  }
  auto recorded = j.find("inputs");
  if (recorded == j.end() || *recorded != inputs) return std::nullopt;
  // Note [Interrupted runs]: a killed run's tree renders again.
  if (::access(under(out_dir, kJournalName).c_str(), F_OK) == 0) {
    return std::nullopt;
  }
  WriteReport report;
  for (const auto& [path, entry] : j["files"].items()) {
    // Entries outside the tree are reported by the run that renders.
    if (!isTreePath(path)) return std::nullopt;
    auto on_disk = readOutput((out / path).string());
    if (!on_disk || contentHash(*on_disk) != hashOf(entry)) {
      return std::nullopt;
    }
    report.unchanged.push_back(path);
  }
  std::vector<std::string> user_files;
  auto listed = j.find("user_files");
  if (listed != j.end() && !listed->is_array()) return std::nullopt;
  for (const auto& path : j.value("user_files", nlohmann::json::array())) {
    if (!path.is_string() || !isTreePath(path.get<std::string>())) {
      return std::nullopt;
    }
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
    auto on_disk = readOutput((out / path).string());
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
  for (const auto& [path, hash] : loadManifest(out).hashes) {
    if (produced.count(path)) continue;
    if (auto on_disk = readOutput((out / path).string())) {
      diffs.push_back(unifiedDiff(*on_disk, "", "a/" + path, "/dev/null"));
    }
  }
  compare(kManifestName, manifestText(files, manifest_extra));
  return diffs;
}

}  // namespace accgen::write
