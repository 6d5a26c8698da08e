// schema-diff without a backend: every change class on its fixture pair
// (tests/fixtures/schema_diff/<class>/), the classifier's matching rules,
// the text and JSON reports, and where the schemas come from (files,
// installed torch, wheels read without installing them).
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "generator/schema/schema.h"
#include "generator/upgrade/changes.h"
#include "generator/upgrade/schema_diff.h"
#include "generator/upgrade/schema_source.h"
#include "generator/write/writer.h"
#include "tests/generator/test_support.h"

namespace accgen::upgrade {
namespace {

namespace fs = std::filesystem;

const fs::path kFixtures =
    fs::path(ACCGEN_SOURCE_DIR) / "tests" / "fixtures" / "schema_diff";

std::string replaceAll(std::string s, const std::string& from,
                       const std::string& to) {
  for (std::size_t pos = 0; (pos = s.find(from, pos)) != std::string::npos;
       pos += to.size()) {
    s.replace(pos, from.size(), to);
  }
  return s;
}

std::vector<std::string> fixtureCases() {
  std::vector<std::string> cases;
  for (const auto& e : fs::directory_iterator(kFixtures)) {
    if (e.is_directory()) cases.push_back(e.path().filename().string());
  }
  std::sort(cases.begin(), cases.end());
  return cases;
}

struct RunResult {
  int code;
  std::string out;
  std::string err;
};

RunResult runCase(const std::string& name, bool json) {
  const fs::path dir = kFixtures / name;
  SchemaDiffOptions options;
  options.old_source = (dir / "old.yaml").string();
  options.new_source = (dir / "new.yaml").string();
  options.json = json;
  std::ostringstream out, err;
  int code = runSchemaDiff(options, out, err);
  // Paths relative to the case directory keep the expectations portable.
  return {code, replaceAll(out.str(), dir.string() + "/", ""), err.str()};
}

class SchemaDiffFixtures : public ::testing::TestWithParam<std::string> {};

TEST_P(SchemaDiffFixtures, JsonFindsExactlyTheExpectedClasses) {
  const auto r = runCase(GetParam(), /*json=*/true);
  ASSERT_EQ(r.err, "");
  auto j = nlohmann::json::parse(r.out);
  std::set<std::string> found;
  for (const auto& op : j["operators"]) {
    for (const auto& c : op["classes"]) {
      found.insert(op["name"].get<std::string>() + " " + c.get<std::string>());
    }
  }
  std::set<std::string> expected;
  std::istringstream lines(slurp(kFixtures / GetParam() / "classes"));
  for (std::string line; std::getline(lines, line);) {
    if (!line.empty()) expected.insert(line);
  }
  EXPECT_EQ(found, expected);
  EXPECT_EQ(j["exit_code"], r.code);
  EXPECT_EQ(j["backend"], nullptr);
  EXPECT_EQ(j["old"]["source"], "old.yaml");
  EXPECT_EQ(j["new"]["torch_version"], nullptr);
}

TEST_P(SchemaDiffFixtures, TextReportMatchesExpected) {
  const auto r = runCase(GetParam(), /*json=*/false);
  ASSERT_EQ(r.err, "");
  const fs::path expected_path = kFixtures / GetParam() / "expected.txt";
  const fs::path code_path = kFixtures / GetParam() / "exit_code";
  if (std::getenv("ACCGEN_UPDATE_GOLDEN")) {
    std::ofstream(expected_path, std::ios::binary) << r.out;
    std::ofstream(code_path, std::ios::binary) << r.code << "\n";
  }
  const std::string expected = slurp(expected_path);
  EXPECT_EQ(r.out, expected)
      << write::unifiedDiff(expected, r.out, "expected.txt", "actual")
      << "\nUpdate with: ACCGEN_UPDATE_GOLDEN=1 "
         "build-upgrade/bin/accgen_tests --gtest_filter='SchemaDiffFixtures*'";
  EXPECT_EQ(std::to_string(r.code) + "\n", slurp(code_path));
}

INSTANTIATE_TEST_SUITE_P(Cases, SchemaDiffFixtures,
                         ::testing::ValuesIn(fixtureCases()),
                         [](const auto& info) { return info.param; });

TEST(SchemaDiffFixtureSet, CoversEveryChangeClass) {
  std::set<std::string> covered;
  for (const auto& name : fixtureCases()) {
    std::istringstream lines(slurp(kFixtures / name / "classes"));
    for (std::string line; std::getline(lines, line);) {
      if (!line.empty()) covered.insert(line.substr(line.find(' ') + 1));
    }
  }
  for (int c = 0; c <= static_cast<int>(ChangeClass::kDefaultChange); ++c) {
    EXPECT_TRUE(covered.count(
        std::string(changeClassName(static_cast<ChangeClass>(c)))))
        << changeClassName(static_cast<ChangeClass>(c));
  }
}

TEST(SchemaDiffFixtureSet, ExitCodes) {
  EXPECT_EQ(runCase("no_change", false).code, 0);
  EXPECT_EQ(runCase("type_change", false).code, 1);
  // Without a backend every difference counts, even a default-only one.
  EXPECT_EQ(runCase("default_change", false).code, 1);
}

// --- the classifier ------------------------------------------------------

std::vector<Change> diff(const char* a, const char* b) {
  return diffSchema(schema::parseFunctionSchema(a),
                    schema::parseFunctionSchema(b));
}

TEST(DiffSchema, SameSchemaSpelledDifferentlyIsNoChange) {
  EXPECT_TRUE(diff("f(Tensor self, Scalar  alpha=1) -> Tensor",
                   "f(Tensor self,Scalar alpha=1)->Tensor")
                  .empty());
}

TEST(DiffSchema, RenameNeedsTheSamePositionAndType) {
  // Same position, same type: a rename.
  auto r = diff("f(Tensor grad, Tensor x) -> Tensor",
                "f(Tensor grad_output, Tensor x) -> Tensor");
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0], (Change{ChangeClass::kRenamedArgument,
                          "argument #1 'grad' is now 'grad_output'"}));
  // Same position, another type: a removal and an addition.
  auto t = diff("f(Tensor self, int dim) -> Tensor",
                "f(Tensor self, float scale) -> Tensor");
  ASSERT_EQ(t.size(), 2u);
  EXPECT_EQ(t[0].cls, ChangeClass::kRemovedArgument);
  EXPECT_EQ(t[1].cls, ChangeClass::kNewArgumentWithoutDefault);
}

TEST(DiffSchema, AnnotationAndTypeChangesAreSeparateClasses) {
  auto r = diff("f(Tensor self, Scalar other) -> Tensor",
                "f(Tensor(a!) self, float other) -> Tensor(a!)");
  std::vector<ChangeClass> classes;
  for (const auto& c : r)
    classes.push_back(c.cls);
  EXPECT_EQ(classes,
            (std::vector<ChangeClass>{ChangeClass::kAliasAnnotationChange,
                                      ChangeClass::kTypeChange,
                                      ChangeClass::kAliasAnnotationChange}));
  EXPECT_EQ(r[0].detail, "argument 'self': alias annotation (none) -> (a!)");
  EXPECT_EQ(r[2].detail, "return #1: alias annotation (none) -> (a!)");
}

TEST(DiffSchema, KernelEditFollowsTheCppSignature) {
  auto sig = [](const char* s) {
    static std::vector<schema::FunctionSchema> keep;
    keep.reserve(16);
    keep.push_back(schema::parseFunctionSchema(s));
    return schema::dispatcherSignature(keep.back(), {});
  };
  const char* base = "f(Tensor self, Tensor other) -> Tensor";
  const char* renamed = "f(Tensor self, Tensor rhs) -> Tensor";
  const char* swapped = "f(Tensor other, Tensor self) -> Tensor";
  const char* defaulted = "f(Tensor self, Tensor other, int k=1) -> Tensor";
  EXPECT_FALSE(needsKernelEdit(sig(base), sig(renamed), diff(base, renamed)));
  // Same C++ types in the same order, but the values swapped places.
  EXPECT_TRUE(needsKernelEdit(sig(base), sig(swapped), diff(base, swapped)));
  EXPECT_TRUE(
      needsKernelEdit(sig(base), sig(defaulted), diff(base, defaulted)));
}

// --- where schemas come from ---------------------------------------------

TEST(SchemaSource, VersionStringsAndPaths) {
  EXPECT_TRUE(looksLikeVersion("2.14.1"));
  EXPECT_TRUE(looksLikeVersion("2.13.0+cpu"));
  EXPECT_TRUE(looksLikeVersion("2.15.0.dev20260101"));
  EXPECT_TRUE(looksLikeVersion("2.14"));
  EXPECT_FALSE(looksLikeVersion("native_functions.yaml"));
  EXPECT_FALSE(looksLikeVersion("old/2.14.1.yaml"));
}

class WheelTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("accgen_wheels_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  /// A fake wheel: a zip holding only the schema member.
  void makeWheel(const std::string& file, const std::string& yaml) {
    fs::path src = dir_ / "src";
    fs::create_directories(src / fs::path(kWheelSchemaMember).parent_path());
    std::ofstream(src / kWheelSchemaMember) << yaml;
    std::string cmd = "cd '" + src.string() + "' && python3 -m zipfile -c '" +
                      (dir_ / file).string() + "' torchgen >/dev/null";
    ASSERT_EQ(std::system(cmd.c_str()), 0);
    fs::remove_all(src);
  }
  fs::path dir_;
};

TEST_F(WheelTest, FindsWheelsByVersionWithAndWithoutLocalPart) {
  makeWheel("torch-9.1.0+cpu-cp311-cp311-manylinux_2_28_x86_64.whl", "");
  makeWheel("torch-9.2.0-cp311-cp311-manylinux_2_28_x86_64.whl", "");
  makeWheel("torchvision-9.1.0-cp311-cp311-manylinux_2_28_x86_64.whl", "");
  EXPECT_EQ(fs::path(findWheel(dir_.string(), "9.1.0")).filename(),
            "torch-9.1.0+cpu-cp311-cp311-manylinux_2_28_x86_64.whl");
  EXPECT_EQ(fs::path(findWheel(dir_.string(), "9.1.0+cpu")).filename(),
            "torch-9.1.0+cpu-cp311-cp311-manylinux_2_28_x86_64.whl");
  EXPECT_EQ(findWheel(dir_.string(), "9.1.0+cu130"), "");
  EXPECT_EQ(fs::path(findWheel(dir_.string(), "9.2.0")).filename(),
            "torch-9.2.0-cp311-cp311-manylinux_2_28_x86_64.whl");
  EXPECT_EQ(findWheel(dir_.string(), "9.2"), "");
}

TEST_F(WheelTest, DiffsTwoVersionsStraightFromTheirWheels) {
  const fs::path fx = kFixtures / "type_change";
  makeWheel("torch-9.1.0-py3-none-any.whl", slurp(fx / "old.yaml"));
  makeWheel("torch-9.2.0-py3-none-any.whl", slurp(fx / "new.yaml"));
  SchemaDiffOptions options;
  options.old_source = "9.1.0";
  options.new_source = "9.2.0";
  options.wheels_dir = dir_.string();
  options.json = true;
  std::ostringstream out, err;
  EXPECT_EQ(runSchemaDiff(options, out, err), 1) << err.str();
  auto j = nlohmann::json::parse(out.str());
  EXPECT_EQ(j["old"]["source"], "torch-9.1.0-py3-none-any.whl");
  EXPECT_EQ(j["old"]["torch_version"], "9.1.0");
  EXPECT_EQ(j["new"]["torch_version"], "9.2.0");
  ASSERT_EQ(j["operators"].size(), 1u);
  EXPECT_EQ(j["operators"][0]["name"], "scale");

  // ACCGEN_WHEEL_DIR stands in for --wheels.
  ::setenv("ACCGEN_WHEEL_DIR", dir_.c_str(), 1);
  options.wheels_dir.clear();
  std::ostringstream out2, err2;
  EXPECT_EQ(runSchemaDiff(options, out2, err2), 1) << err2.str();
  ::unsetenv("ACCGEN_WHEEL_DIR");
}

TEST_F(WheelTest, MissingWheelSaysHowToGetIt) {
  SchemaDiffOptions options;
  options.old_source = "9.1.0";
  options.new_source = "9.3.0";
  options.wheels_dir = dir_.string();
  std::ostringstream out, err;
  EXPECT_EQ(runSchemaDiff(options, out, err), 3);
  EXPECT_NE(err.str().find("error: no schemas for torch 9.1.0"),
            std::string::npos)
      << err.str();
  EXPECT_NE(err.str().find("pip download torch==9.1.0 --no-deps -d DIR"),
            std::string::npos);
  EXPECT_EQ(out.str(), "");
}

TEST(SchemaSourceInstalled, TheInstalledTorchAgainstItselfIsTheSame) {
  const auto torch = schema::findTorch();
  SchemaDiffOptions options;
  options.old_source = torch.version;  // a version string: the installed one
  options.new_source = torch.native_functions_yaml;
  std::ostringstream out, err;
  EXPECT_EQ(runSchemaDiff(options, out, err), 0) << err.str();
  EXPECT_NE(
      out.str().find("  old: installed torch (torch " + torch.version + ")\n"),
      std::string::npos)
      << out.str();
  // A yaml path inside an installed torchgen knows its torch version.
  EXPECT_NE(out.str().find("(torch " + torch.version +
                           ")\n\nThe schemas are "
                           "the same.\n"),
            std::string::npos)
      << out.str();
}

}  // namespace
}  // namespace accgen::upgrade
