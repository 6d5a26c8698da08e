// Resolving schema-diff's OLD and NEW arguments to schema registries.
//
// A zip library is not among accgen's dependencies, and one member of one
// archive per run does not justify adding one: Python is already required
// (findTorch asks it where torch lives), and its standard zipfile module
// reads the member in a few hundred milliseconds even from a 2 GB CUDA
// wheel, because a zip's central directory lets it seek straight to the
// member. `unzip -p` is the fallback for machines whose Python is broken.
#include "generator/upgrade/schema_source.h"

#include "generator/support/io.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>

namespace accgen::upgrade {
namespace {

namespace fs = std::filesystem;

/// "2.13.0" matches "2.13.0" and "2.13.0+cpu"; "2.13.0+cpu" only itself.
bool versionMatches(const std::string& wanted, const std::string& have) {
  return have == wanted || (wanted.find('+') == std::string::npos &&
                            have.rfind(wanted + "+", 0) == 0);
}

}  // namespace

std::string versionBesideYaml(const std::string& yaml_path) {
  std::error_code ec;
  fs::path abs = fs::weakly_canonical(yaml_path, ec);
  if (ec) return "";
  fs::path site =
      abs.parent_path().parent_path().parent_path().parent_path().parent_path();
  if (abs.parent_path().parent_path().parent_path().parent_path().filename() !=
      "torchgen") {
    return "";
  }
  fs::path version_py = site / "torch" / "version.py";
  return schema::readTorchVersion(version_py.string());
}

bool looksLikeVersion(const std::string& text) {
  // \d+\.\d+(\.\d+)?[.a-z0-9]*(\+[A-Za-z0-9.]+)?, matched by hand:
  // std::regex recurses once a character. The optional third number is
  // covered by the [.a-z0-9]* tail.
  auto digit = [](char c) { return c >= '0' && c <= '9'; };
  std::size_t i = 0;
  auto digits = [&] {
    const std::size_t start = i;
    while (i < text.size() && digit(text[i]))
      ++i;
    return i > start;
  };
  if (!digits() || i >= text.size() || text[i] != '.') return false;
  ++i;
  if (!digits()) return false;
  while (i < text.size() && (text[i] == '.' || digit(text[i]) ||
                             (text[i] >= 'a' && text[i] <= 'z')))
    ++i;
  if (i == text.size()) return true;
  if (text[i] != '+' || i + 1 == text.size()) return false;
  for (++i; i < text.size(); ++i) {
    const char c = text[i];
    if (!(digit(c) || c == '.' || (c >= 'a' && c <= 'z') ||
          (c >= 'A' && c <= 'Z')))
      return false;
  }
  return true;
}

std::string findWheel(const std::string& wheels_dir,
                      const std::string& version) {
  std::error_code ec;
  std::vector<std::string> hits;
  for (fs::directory_iterator it(wheels_dir, ec), end; !ec && it != end;
       it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (!name.starts_with("torch-") || !name.ends_with(".whl")) continue;
    // torch-<version>-<python tag>-<abi tag>-<platform tag>.whl
    std::string rest = name.substr(6);
    std::string file_version = rest.substr(0, rest.find('-'));
    if (versionMatches(version, file_version)) hits.push_back(it->path());
  }
  if (hits.empty()) return "";
  std::sort(hits.begin(), hits.end());
  return hits.front();
}

std::string readZipMember(const std::string& archive,
                          const std::string& member) {
  const char* env = std::getenv("ACCGEN_PYTHON");
  std::string python = env && *env ? env : "python3";
  const std::string script =
      "import sys, zipfile\n"
      "sys.stdout.buffer.write(zipfile.ZipFile(sys.argv[1]).read(sys.argv[2]))"
      "\n";
  auto text = captureCommand(shellQuote(python) + " -c " + shellQuote(script) +
                             " " + shellQuote(archive) + " " +
                             shellQuote(member) + " 2>/dev/null");
  if (text) return *text;
  text = captureCommand("unzip -p " + shellQuote(archive) + " " +
                        shellQuote(member) + " 2>/dev/null");
  if (text && !text->empty()) return *text;
  throw AccgenError(ExitCode::kInvalidInput,
                    archive + ": error: cannot read '" + member +
                        "' from the archive (tried '" + python +
                        "' -m zipfile and unzip -p); is it a torch wheel?");
}

SchemaSource loadSchemaSource(const std::string& arg,
                              const std::string& wheels_dir) {
  std::error_code ec;
  if (fs::is_regular_file(arg, ec) || !looksLikeVersion(arg)) {
    if (!fs::is_regular_file(arg, ec)) {
      throw AccgenError(
          ExitCode::kInvalidInput,
          arg +
              ": error: no such file; give a native_functions.yaml path or "
              "a torch version such as 2.14.1");
    }
    SchemaSource src{arg, versionBesideYaml(arg),
                     schema::SchemaRegistry::load(arg)};
    src.registry.setTorchVersion(src.torch_version);
    return src;
  }

  // A version string: the installed torch first (no archive to read).
  std::string installed_version;
  try {
    schema::TorchInstall torch = schema::findTorch();
    installed_version = torch.version;
    if (versionMatches(arg, torch.version)) {
      SchemaSource src{
          "installed torch", torch.version,
          schema::SchemaRegistry::load(torch.native_functions_yaml)};
      src.registry.setTorchVersion(torch.version);
      return src;
    }
  } catch (const AccgenError&) {
    // No usable installed torch: the wheel directory may still have it.
  }

  std::string dir = wheels_dir;
  if (dir.empty()) {
    const char* env = std::getenv("ACCGEN_WHEEL_DIR");
    if (env) dir = env;
  }
  std::string wheel = dir.empty() ? "" : findWheel(dir, arg);
  if (wheel.empty()) {
    std::string msg = "error: no schemas for torch " + arg + ": ";
    msg += installed_version.empty()
               ? "torch is not installed"
               : "the installed torch is " + installed_version;
    msg += dir.empty() ? ", and no wheel directory was given"
                       : ", and " + dir + " has no torch-" + arg + "-*.whl";
    msg +=
        "\nnote: download the wheel without installing it: pip download "
        "torch==" +
        arg +
        " --no-deps -d DIR, then pass --wheels DIR (or "
        "set ACCGEN_WHEEL_DIR=DIR)";
    throw AccgenError(ExitCode::kInvalidInput, msg);
  }
  const std::string label = fs::path(wheel).filename().string();
  std::string text = readZipMember(wheel, kWheelSchemaMember);
  // The wheel's file name carries the exact version (with its local part).
  std::string rest = label.substr(6);
  std::string version = rest.substr(0, rest.find('-'));
  SchemaSource src{label, version,
                   schema::SchemaRegistry::loadFromString(
                       text, label + "!/" + kWheelSchemaMember)};
  src.registry.setTorchVersion(version);
  return src;
}

}  // namespace accgen::upgrade
