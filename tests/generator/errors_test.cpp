// Runs every error case of tests/errors/ (see tests/errors/README.md)
// through loadSpecs + buildBackend against the installed torch and compares
// the diagnostics with the case's expected.txt and exit_code.
//
// A case directory holds only the spec files that differ from
// tests/errors/base/; the test assembles <tmp>/<case>/specs from both and
// runs from <tmp>/<case> with the spec directory "specs", exactly as
// `accgen validate --specs specs` would from there. On a mismatch it prints
// a unified diff and the command that rewrites the expectations.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <dtl/dtl.hpp>
#include <filesystem>
#include <fstream>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "generator/model/backend.h"
#include "generator/schema/schema.h"
#include "generator/spec/spec.h"

namespace fs = std::filesystem;

namespace accgen {
namespace {

const fs::path kErrorsDir = fs::path(ACCGEN_SOURCE_DIR) / "tests" / "errors";
const std::set<std::string> kSpecFiles = {"backend.yaml", "operators.yaml",
                                          "autocast.yaml"};

std::string readText(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

void writeText(const fs::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
}

std::vector<std::string> splitLines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    lines.push_back(line);
  return lines;
}

std::string unifiedDiff(const std::string& expected,
                        const std::string& actual) {
  std::vector<std::string> a = splitLines(expected);
  std::vector<std::string> b = splitLines(actual);
  dtl::Diff<std::string> diff(a, b);
  diff.compose();
  diff.composeUnifiedHunks();
  std::ostringstream out;
  out << "--- expected.txt\n+++ actual\n";
  diff.printUnifiedFormat(out);
  return out.str();
}

std::vector<std::string> caseNames() {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(kErrorsDir)) {
    if (e.is_directory() && e.path().filename() != "base") {
      names.push_back(e.path().filename().string());
    }
  }
  std::sort(names.begin(), names.end());
  return names;
}

// Changes the working directory for one scope.
class ScopedCwd {
 public:
  explicit ScopedCwd(const fs::path& dir) : previous_(fs::current_path()) {
    fs::current_path(dir);
  }
  ~ScopedCwd() { fs::current_path(previous_); }

 private:
  fs::path previous_;
};

// The installed torch's registry and stubs, loaded once for all cases.
struct TorchFixture {
  schema::TorchInstall torch;
  std::unique_ptr<schema::SchemaRegistry> registry;
  schema::DispatchStubs stubs;
};

const TorchFixture& torchFixture() {
  static const TorchFixture fixture = [] {
    TorchFixture f;
    f.torch = schema::findTorch();
    f.registry = std::make_unique<schema::SchemaRegistry>(
        schema::SchemaRegistry::load(f.torch.native_functions_yaml));
    // What buildBackend would scan from torch_include_dir, scanned once.
    f.stubs = schema::findDispatchStubs(f.torch.include_dir);
    return f;
  }();
  return fixture;
}

struct RunResult {
  std::string diagnostics;
  int exit_code = 0;
};

RunResult runCase(const fs::path& case_root) {
  const TorchFixture& torch = torchFixture();
  ScopedCwd cwd(case_root);
  DiagnosticEngine diags;
  auto specs = spec::loadSpecs("specs", diags);
  if (specs) {
    model::BuildOptions options;
    options.torch_include_dir = torch.torch.include_dir;
    options.dispatch_stubs = torch.stubs;
    model::buildBackend(*specs, *torch.registry, diags, options);
  }
  std::ostringstream out;
  diags.print(out);
  return {out.str(), diags.hasErrors()
                         ? static_cast<int>(ExitCode::kInvalidInput)
                         : static_cast<int>(ExitCode::kOk)};
}

// <tmp>/accgen_errors_<pid>/<name>: a case's directory in this process's.
fs::path caseRoot(const std::string& name) {
  return fs::temp_directory_path() /
         ("accgen_errors_" + std::to_string(::getpid())) / name;
}

// Removes a case's directory, and the process's when it is the last.
void removeCase(const fs::path& root) {
  fs::remove_all(root);
  std::error_code not_empty;
  fs::remove(root.parent_path(), not_empty);
}

// Builds <tmp>/<case>/specs from base/ and the case's own files.
fs::path assembleCase(const std::string& name) {
  fs::path root = caseRoot(name);
  fs::remove_all(root);
  fs::create_directories(root / "specs");
  for (const auto& f : kSpecFiles) {
    if (fs::exists(kErrorsDir / "base" / f)) {
      fs::copy_file(kErrorsDir / "base" / f, root / "specs" / f);
    }
  }
  fs::path dir = kErrorsDir / name;
  for (const auto& e : fs::directory_iterator(dir)) {
    std::string file = e.path().filename().string();
    if (kSpecFiles.count(file)) {
      fs::copy_file(e.path(), root / "specs" / file,
                    fs::copy_options::overwrite_existing);
    } else if (file == "absent") {
      for (const auto& line : splitLines(readText(e.path()))) {
        if (!line.empty()) fs::remove(root / "specs" / line);
      }
    } else if (file != "expected.txt" && file != "exit_code") {
      ADD_FAILURE() << dir << " has an unexpected file '" << file
                    << "'; a case holds spec files, absent, expected.txt "
                       "and exit_code";
    }
  }
  return root;
}

class ErrorCase : public ::testing::TestWithParam<std::string> {};

TEST_P(ErrorCase, MatchesExpected) {
  const std::string& name = GetParam();
  fs::path dir = kErrorsDir / name;
  fs::path root = assembleCase(name);
  RunResult result = runCase(root);
  removeCase(root);

  if (const char* update = std::getenv("ACCGEN_UPDATE_GOLDEN");
      update && std::string(update) == "1") {
    writeText(dir / "expected.txt", result.diagnostics);
    writeText(dir / "exit_code", std::to_string(result.exit_code) + "\n");
    return;
  }

  ASSERT_TRUE(fs::exists(dir / "expected.txt")) << dir << "/expected.txt";
  ASSERT_TRUE(fs::exists(dir / "exit_code")) << dir << "/exit_code";
  std::string expected = readText(dir / "expected.txt");
  int expected_code = std::stoi(readText(dir / "exit_code"));
  std::string hint =
      "\nIf the new output is right, update the expectations with:\n"
      "  ACCGEN_UPDATE_GOLDEN=1 " +
      std::string(::testing::internal::GetArgvs()[0]) +
      " --gtest_filter='Errors/ErrorCase.MatchesExpected/" + name + "'\n";
  EXPECT_EQ(expected, result.diagnostics)
      << "diagnostics of case '" << name << "' differ:\n"
      << unifiedDiff(expected, result.diagnostics) << hint;
  EXPECT_EQ(expected_code, result.exit_code)
      << "exit code of case '" << name << "'" << hint;
}

INSTANTIATE_TEST_SUITE_P(Errors, ErrorCase, ::testing::ValuesIn(caseNames()),
                         [](const ::testing::TestParamInfo<std::string>& i) {
                           return i.param;
                         });

// The base set itself is valid and complete, so that each case's output is
// caused by its own files alone.
TEST(ErrorCases, BaseIsValid) {
  fs::path root = caseRoot("base");
  fs::remove_all(root);
  fs::create_directories(root / "specs");
  for (const auto& f : kSpecFiles) {
    fs::copy_file(kErrorsDir / "base" / f, root / "specs" / f);
  }
  RunResult result = runCase(root);
  removeCase(root);
  EXPECT_EQ(result.diagnostics, "");
  EXPECT_EQ(result.exit_code, 0);
}

// Every case exits with the invalid-spec code or, for warning-only cases, 0;
// a case directory without expectations is a mistake.
TEST(ErrorCases, EveryCaseHasExpectations) {
  std::vector<std::string> names = caseNames();
  EXPECT_GE(names.size(), 20u);
  for (const auto& name : names) {
    EXPECT_TRUE(fs::exists(kErrorsDir / name / "expected.txt")) << name;
    EXPECT_TRUE(fs::exists(kErrorsDir / name / "exit_code")) << name;
  }
}

}  // namespace
}  // namespace accgen
