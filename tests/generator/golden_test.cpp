// Golden cases: tests/golden/<case>/specs is generated with the real accgen
// binary, and the files the backend model drives (the registrations and
// configuration under csrc/, the kernel starters under kernels/, the
// conformance suite's tests/conformance/backend_spec.py) must equal
// tests/golden/<case>/expected, byte for byte. The files that are the same
// for every spec (build files, the package's __init__.py, the manifest) are
// checked once, in generated_example/ (`accgen generate --check` in CI). A
// mismatch prints a unified diff per file and the command that updates the
// goldens; with ACCGEN_UPDATE_GOLDEN=1 the test rewrites expected/ instead
// (review the change before committing it).
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include <gtest/gtest.h>

#include "generator/write/writer.h"

namespace {

namespace fs = std::filesystem;

const fs::path kGoldenDir = fs::path(ACCGEN_SOURCE_DIR) / "tests" / "golden";

// The files of a generated tree that the backend model decides.
bool modelDriven(const std::string& path) {
  return path.rfind("csrc/", 0) == 0 || path.rfind("kernels/", 0) == 0 ||
         path == "tests/conformance/backend_spec.py";
}

std::map<std::string, std::string> readTree(const fs::path& root) {
  std::map<std::string, std::string> files;
  if (!fs::exists(root)) return files;
  for (const auto& e : fs::recursive_directory_iterator(root)) {
    if (!e.is_regular_file()) continue;
    std::ifstream in(e.path(), std::ios::binary);
    std::ostringstream ss;
    ss << in.rdbuf();
    files[fs::relative(e.path(), root).generic_string()] = ss.str();
  }
  return files;
}

std::vector<std::string> cases() {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(kGoldenDir)) {
    if (fs::exists(e.path() / "specs")) names.push_back(e.path().filename());
  }
  std::sort(names.begin(), names.end());
  return names;
}

class Golden : public ::testing::TestWithParam<std::string> {};

TEST_P(Golden, GeneratedTreeMatchesExpected) {
  const fs::path golden = kGoldenDir / GetParam();
  const fs::path work =
      fs::temp_directory_path() /
      ("accgen_golden_" + std::to_string(::getpid()) + "_" + GetParam());
  fs::remove_all(work);
  fs::create_directories(work);
  fs::copy(golden / "specs", work / "specs", fs::copy_options::recursive);
  // The lock is an output of generate: start every run without it.
  fs::remove(work / "specs" / "accgen.lock");

  std::string cmd = "cd '" + work.string() +
                    "' && '" ACCGEN_BINARY
                    "' generate --specs specs --out out >accgen.log 2>&1";
  int status = std::system(cmd.c_str());
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
      << readTree(work)["accgen.log"];

  auto actual = readTree(work / "out");
  std::erase_if(actual, [](const auto& f) { return !modelDriven(f.first); });
  ASSERT_FALSE(actual.empty());
  if (const char* update = std::getenv("ACCGEN_UPDATE_GOLDEN");
      update && std::string(update) == "1") {
    fs::remove_all(golden / "expected");
    for (const auto& [path, content] : actual) {
      fs::create_directories((golden / "expected" / path).parent_path());
      std::ofstream(golden / "expected" / path, std::ios::binary) << content;
    }
    fs::remove_all(work);
    GTEST_SKIP() << "updated " << (golden / "expected").string();
  }

  auto expected = readTree(golden / "expected");
  std::string diffs;
  for (const auto& [path, content] : expected) {
    auto it = actual.find(path);
    diffs += accgen::write::unifiedDiff(
        content, it == actual.end() ? "" : it->second, "expected/" + path,
        it == actual.end() ? "/dev/null" : "generated/" + path);
  }
  for (const auto& [path, content] : actual) {
    if (!expected.count(path)) {
      diffs += accgen::write::unifiedDiff("", content, "/dev/null",
                                          "generated/" + path);
    }
  }
  fs::remove_all(work);
  EXPECT_TRUE(diffs.empty())
      << diffs << "\nThe generated tree of golden case '" << GetParam()
      << "' differs from tests/golden/" << GetParam()
      << "/expected. If the change is intended, update the goldens with:\n"
         "  ACCGEN_UPDATE_GOLDEN=1 build/bin/accgen_tests "
         "--gtest_filter='Cases/Golden.*'\n";
}

INSTANTIATE_TEST_SUITE_P(Cases, Golden, ::testing::ValuesIn(cases()),
                         [](const auto& info) { return info.param; });

}  // namespace
