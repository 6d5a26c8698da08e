// Loading a spec directory: reads the three files, parses each one even when
// another failed (so one run reports every error), and names files the way
// the user named the directory.
#include <filesystem>

#include "generator/spec/spec.h"
#include "generator/support/io.h"

namespace accgen::spec {
namespace {

std::string joinPath(const std::string& dir, std::string_view file) {
  if (dir.empty()) return std::string(file);
  if (dir.back() == '/') return dir + std::string(file);
  return dir + "/" + std::string(file);
}

// The file's text, nullopt when it does not exist or cannot be read; a file
// that exists but cannot be read (a directory, a FIFO, a device, a link
// loop, an unreadable or oversized file) is reported, never taken as empty.
std::optional<std::string> readSpecFile(const std::string& path, bool* exists,
                                        DiagnosticEngine& diags) {
  InputFile file = readInputFile(path);
  *exists = file.status != InputFile::Status::kMissing;
  if (file.status == InputFile::Status::kError) {
    diags.error(SourceLoc{path, 0, 0}, file.error);
  }
  if (file.status != InputFile::Status::kRead) return std::nullopt;
  return std::move(file.text);
}

}  // namespace

std::optional<Specs> loadSpecs(const std::string& dir,
                               DiagnosticEngine& diags) {
  int errors_before = diags.errorCount();
  std::error_code ec;
  if (!std::filesystem::is_directory(dir.empty() ? "." : dir, ec)) {
    diags.error(SourceLoc{dir, 0, 0}, "spec directory not found",
                {"`accgen init NAME` writes a starter spec directory"});
    return std::nullopt;
  }

  Specs specs;
  specs.dir = dir;
  std::optional<BackendSpec> backend;
  std::optional<OperatorsSpec> operators;
  std::optional<AutocastSpec> autocast = AutocastSpec{};

  auto required = [&](std::string_view file) -> std::optional<std::string> {
    std::string path = joinPath(dir, file);
    bool exists = false;
    auto text = readSpecFile(path, &exists, diags);
    if (!exists) {
      diags.error(SourceLoc{path, 0, 0}, "missing spec file",
                  {"a spec directory holds backend.yaml, operators.yaml and "
                   "optionally autocast.yaml"});
    }
    return text;
  };

  std::string backend_path = joinPath(dir, "backend.yaml");
  if (auto text = required("backend.yaml")) {
    backend = parseBackendSpec(*text, backend_path, diags);
  }
  std::string operators_path = joinPath(dir, "operators.yaml");
  if (auto text = required("operators.yaml")) {
    operators = parseOperatorsSpec(*text, operators_path, diags);
  }
  std::string autocast_path = joinPath(dir, "autocast.yaml");
  bool autocast_exists = false;
  if (auto text = readSpecFile(autocast_path, &autocast_exists, diags)) {
    autocast = parseAutocastSpec(*text, autocast_path, diags);
  }

  if (diags.errorCount() > errors_before || !backend || !operators ||
      !autocast) {
    return std::nullopt;
  }
  specs.backend = std::move(*backend);
  specs.operators = std::move(*operators);
  specs.autocast = std::move(*autocast);
  if (!specs.autocast.present) specs.autocast.loc = SourceLoc{autocast_path};
  return specs;
}

}  // namespace accgen::spec
