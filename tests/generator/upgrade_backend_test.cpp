// The upgrade tools on a real backend model: the schema lock (clean, drifted
// and refused with a report, accepted), the user-kernel signature check,
// orphaned kernel files, and schema-diff's backend section.
//
// The schemas are the installed torch's native_functions.yaml, and a
// "next release" made from it by editing a few `func:` lines, the way a
// PyTorch upgrade does: mul gains an `alpha` argument (its user kernel must
// change), mm's `mat2` is renamed (accept, no edit), add's default alpha
// changes (nothing to do).
#include <filesystem>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "generator/model/backend.h"
#include "generator/schema/schema.h"
#include "generator/spec/spec.h"
#include "generator/upgrade/lock.h"
#include "generator/upgrade/schema_diff.h"
#include "generator/upgrade/user_kernels.h"
#include "tests/generator/test_support.h"

namespace accgen::upgrade {
namespace {

namespace fs = std::filesystem;

/// Replaces the one occurrence of `from` in `text`; fails the test if it is
/// not there exactly once (the installed torch changed).
std::string replaceOnce(std::string text, const std::string& from,
                        const std::string& to) {
  auto pos = text.find(from);
  EXPECT_NE(pos, std::string::npos) << from;
  if (pos == std::string::npos) return text;
  EXPECT_EQ(text.find(from, pos + 1), std::string::npos) << from;
  return text.replace(pos, from.size(), to);
}

const std::string& installedYaml() {
  static const std::string text =
      slurp(schema::findTorch().native_functions_yaml);
  return text;
}

/// The "next release": see the file comment.
std::string nextReleaseYaml() {
  std::string t = installedYaml();
  t = replaceOnce(t, "- func: mul.Tensor(Tensor self, Tensor other) -> Tensor",
                  "- func: mul.Tensor(Tensor self, Tensor other, *, Scalar "
                  "alpha=1) -> Tensor");
  t = replaceOnce(t,
                  "- func: mul_.Tensor(Tensor(a!) self, Tensor other) -> "
                  "Tensor(a!)",
                  "- func: mul_.Tensor(Tensor(a!) self, Tensor other, *, "
                  "Scalar alpha=1) -> Tensor(a!)");
  t = replaceOnce(t,
                  "- func: mul.out(Tensor self, Tensor other, *, Tensor(a!) "
                  "out) -> Tensor(a!)",
                  "- func: mul.out(Tensor self, Tensor other, *, Scalar "
                  "alpha=1, Tensor(a!) out) -> Tensor(a!)");
  t = replaceOnce(t, "- func: mm(Tensor self, Tensor mat2) -> Tensor",
                  "- func: mm(Tensor self, Tensor other) -> Tensor");
  return t;
}

/// Only add's default alpha differs.
std::string defaultOnlyYaml() {
  std::string t = installedYaml();
  t = replaceOnce(t,
                  "- func: add.Tensor(Tensor self, Tensor other, *, Scalar "
                  "alpha=1) -> Tensor",
                  "- func: add.Tensor(Tensor self, Tensor other, *, Scalar "
                  "alpha=2) -> Tensor");
  t = replaceOnce(t,
                  "- func: add_.Tensor(Tensor(a!) self, Tensor other, *, "
                  "Scalar alpha=1) -> Tensor(a!)",
                  "- func: add_.Tensor(Tensor(a!) self, Tensor other, *, "
                  "Scalar alpha=2) -> Tensor(a!)");
  t = replaceOnce(t,
                  "- func: add.out(Tensor self, Tensor other, *, Scalar "
                  "alpha=1, Tensor(a!) out) -> Tensor(a!)",
                  "- func: add.out(Tensor self, Tensor other, *, Scalar "
                  "alpha=2, Tensor(a!) out) -> Tensor(a!)");
  return t;
}

const schema::SchemaRegistry& oldRegistry() {
  static const schema::SchemaRegistry r =
      schema::SchemaRegistry::loadFromString(installedYaml(), "old.yaml");
  return r;
}

const schema::SchemaRegistry& newRegistry() {
  static const schema::SchemaRegistry r =
      schema::SchemaRegistry::loadFromString(nextReleaseYaml(), "new.yaml");
  return r;
}

constexpr const char* kBackendYaml =
    "device: accel\n"
    "package: torch_accel\n"
    "namespace: accel\n";

std::string operatorsYaml(bool with_mm = true) {
  std::string s = "operators:\n";
  for (const auto& b : model::builtinOperators()) {
    s += "  - {op: " + b + ", kind: builtin}\n";
  }
  s += "  - {op: add.Tensor, kind: emulate}\n";
  s += "  - {op: mul.Tensor, kind: kernel}\n";
  if (with_mm) s += "  - {op: mm, kind: kernel, group: false}\n";
  s += "custom:\n";
  s += "  - schema: \"scaled_add(Tensor self, Tensor other, float alpha=1.0) "
       "-> Tensor\"\n";
  return s;
}

class UpgradeBackendTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() /
            ("accgen_upgrade_" + std::to_string(::getpid()) + "_" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(root_);
    specs_ = root_ / "specs";
    out_ = root_ / "out";
    spit(specs_ / "backend.yaml", kBackendYaml);
    spit(specs_ / "operators.yaml", operatorsYaml());
  }
  void TearDown() override { fs::remove_all(root_); }

  model::Backend build(const schema::SchemaRegistry& registry) {
    DiagnosticEngine diags;
    auto specs = spec::loadSpecs(specs_.string(), diags);
    EXPECT_TRUE(specs.has_value());
    model::BuildOptions options;
    options.dispatch_stubs = schema::DispatchStubs{};
    auto backend = model::buildBackend(*specs, registry, diags, options);
    if (!backend) {
      std::ostringstream os;
      diags.print(os);
      throw std::runtime_error("the test specs do not validate:\n" + os.str());
    }
    return std::move(*backend);
  }

  fs::path root_, specs_, out_;
};

// --- the lock ---------------------------------------------------------------

TEST_F(UpgradeBackendTest, LockRecordsEveryRegistrationSortedAndRoundTrips) {
  model::Backend backend = build(oldRegistry());
  SchemaLock lock = buildLock(backend, "2.13.0+cpu");
  std::vector<std::string> names;
  for (const auto& e : lock.entries)
    names.push_back(e.op);
  // Builtins, the add and mul groups, mm and the custom op.
  for (const char* op :
       {"aten::add.Tensor", "aten::add_.Tensor", "aten::add.out",
        "aten::mul.Tensor", "aten::mul_.Tensor", "aten::mul.out", "aten::mm",
        "aten::empty.memory_format", "aten::view", "accel::scaled_add"}) {
    EXPECT_NE(lock.find(op), nullptr) << op;
  }
  EXPECT_TRUE(std::is_sorted(names.begin(), names.end()));
  EXPECT_EQ(lock.find("aten::mm.out"), nullptr);  // group: false

  const LockEntry* mul = lock.find("aten::mul.Tensor");
  ASSERT_NE(mul, nullptr);
  EXPECT_EQ(mul->schema, "mul.Tensor(Tensor self, Tensor other) -> Tensor");
  EXPECT_EQ(mul->cpp,
            "at::Tensor kernel_mul_Tensor(const at::Tensor& self, const "
            "at::Tensor& other)");
  // Generated-only registrations have no user signature to lock.
  EXPECT_EQ(lock.find("aten::mul_.Tensor")->cpp, "");
  EXPECT_EQ(lock.find("aten::add.Tensor")->cpp, "");

  const std::string text = renderLock(lock);
  // The release, not the build: 2.13.0+cpu and 2.13.0+cu130 share schemas.
  EXPECT_NE(text.find("torch: \"2.13.0\"\n"), std::string::npos);
  EXPECT_NE(text.find("  \"aten::mul.Tensor\": {schema: \"mul.Tensor(Tensor "
                      "self, Tensor other) -> Tensor\", cpp: \"at::Tensor "
                      "kernel_mul_Tensor(const at::Tensor& self, const "
                      "at::Tensor& other)\"}\n"),
            std::string::npos)
      << text;
  SchemaLock parsed = parseLock(text, "specs/accgen.lock");
  EXPECT_EQ(parsed.torch_version, "2.13.0");
  ASSERT_EQ(parsed.entries.size(), lock.entries.size());
  for (std::size_t i = 0; i < lock.entries.size(); ++i) {
    EXPECT_EQ(parsed.entries[i].op, lock.entries[i].op);
    EXPECT_EQ(parsed.entries[i].schema, lock.entries[i].schema);
    EXPECT_EQ(parsed.entries[i].cpp, lock.entries[i].cpp);
  }
  EXPECT_EQ(renderLock(parsed), text);
  // Each entry knows its line: entries start after the 7 header lines.
  EXPECT_EQ(parsed.entries[0].loc.line, 8);
  EXPECT_EQ(parsed.entries[0].loc.column, 3);
}

TEST_F(UpgradeBackendTest, SchemasWithQuotesSurviveTheLock) {
  SchemaLock lock;
  lock.torch_version = "2.13.0";
  lock.entries.push_back(
      {"aten::conv1d.padding",
       "conv1d.padding(Tensor input, Tensor weight, Tensor? bias=None, "
       "SymInt[1] stride=1, str padding=\"valid\", SymInt[1] dilation=1, "
       "SymInt groups=1) -> Tensor",
       "",
       {}});
  SchemaLock parsed = parseLock(renderLock(lock), "accgen.lock");
  ASSERT_EQ(parsed.entries.size(), 1u);
  EXPECT_EQ(parsed.entries[0].schema, lock.entries[0].schema);
}

TEST_F(UpgradeBackendTest, NoLockCreatesOneThenCleanRunsKeepIt) {
  model::Backend backend = build(oldRegistry());
  LockPlan first = planLock(backend, "2.13.0+cpu", false);
  EXPECT_EQ(first.action, LockPlan::Action::kCreate);
  EXPECT_EQ(first.path, (specs_ / "accgen.lock").string());
  EXPECT_FALSE(fs::exists(first.path));  // planning writes nothing
  commitLock(first);
  EXPECT_EQ(slurp(first.path), first.text);

  LockPlan second = planLock(backend, "2.13.0+cpu", false);
  EXPECT_EQ(second.action, LockPlan::Action::kKeep);
  EXPECT_EQ(second.exitCode(), ExitCode::kOk);
  EXPECT_FALSE(second.comparison.drifted());
  EXPECT_EQ(second.report, "");
  auto mtime = fs::last_write_time(first.path);
  commitLock(second);
  EXPECT_EQ(fs::last_write_time(first.path), mtime);
  // Another build of the same release (a developer's CUDA wheel) agrees.
  EXPECT_EQ(planLock(backend, "2.13.0+cu130", false).action,
            LockPlan::Action::kKeep);
}

TEST_F(UpgradeBackendTest, DriftedSchemasAreRefusedWithAReport) {
  commitLock(planLock(build(oldRegistry()), "2.13.0+cpu", false));
  const std::string locked_text = slurp(specs_ / "accgen.lock");

  model::Backend backend = build(newRegistry());
  LockPlan plan = planLock(backend, "2.14.1", false);
  EXPECT_EQ(plan.action, LockPlan::Action::kRefuse);
  EXPECT_EQ(plan.exitCode(), ExitCode::kSchemaDrift);
  EXPECT_EQ(static_cast<int>(plan.exitCode()), 5);

  // mul's three forms and mm drifted; add and the builtins did not.
  std::vector<std::string> drifted;
  for (const auto* d : plan.comparison.drift())
    drifted.push_back(d->op);
  EXPECT_EQ(drifted,
            (std::vector<std::string>{"aten::mm", "aten::mul.Tensor",
                                      "aten::mul.out", "aten::mul_.Tensor"}));
  // Only the user-written primary of mul needs an edit; mm was renamed.
  EXPECT_EQ(plan.comparison.kernelFilesToEdit(),
            std::vector<std::string>{"kernels/mul_Tensor.cpp"});

  const std::string lock_path = (specs_ / "accgen.lock").string();
  const std::string& r = plan.report;
  EXPECT_EQ(r.rfind(lock_path + ": error: the changed schemas of 4 locked "
                                "operators (locked with torch 2.13.0, "
                                "now torch 2.14.1); nothing was written\n",
                    0),
            0u)
      << r;
  // The mul.Tensor block points at its lock line and shows both sides.
  const SchemaLock locked = parseLock(locked_text, lock_path);
  const LockEntry* locked_mul = locked.find("aten::mul.Tensor");
  ASSERT_NE(locked_mul, nullptr);
  EXPECT_NE(r.find(locked_mul->loc.str() +
                   ": aten::mul.Tensor [kernel]: edit kernels/mul_Tensor.cpp\n"
                   "    new-argument-with-default: new argument #3 (Scalar "
                   "alpha=1)\n"
                   "    schema locked: mul.Tensor(Tensor self, Tensor other) "
                   "-> Tensor\n"
                   "              now: mul.Tensor(Tensor self, Tensor other, "
                   "*, Scalar alpha=1) -> Tensor\n"
                   "    C++    locked: at::Tensor kernel_mul_Tensor(const "
                   "at::Tensor& self, const at::Tensor& other)\n"
                   "              now: at::Tensor kernel_mul_Tensor(const "
                   "at::Tensor& self, const at::Tensor& other, const "
                   "at::Scalar& alpha)\n"),
            std::string::npos)
      << r;
  EXPECT_NE(r.find(": aten::mul.out [kernel via mul.Tensor]: "
                   "kernels/mul_Tensor.cpp needs no edit (generated code "
                   "adapts)\n"),
            std::string::npos)
      << r;
  // A generated sibling's block shows schemas only: its C++ is not yours.
  const auto out_block = r.find(": aten::mul.out [kernel via mul.Tensor]");
  ASSERT_NE(out_block, std::string::npos);
  EXPECT_EQ(
      r.substr(out_block, r.find("\n\n", out_block) - out_block).find("C++"),
      std::string::npos);
  EXPECT_NE(r.find(": aten::mm [kernel]: kernels/mm.cpp needs no edit (same "
                   "C++ types)"),
            std::string::npos)
      << r;
  EXPECT_NE(r.find("    renamed-argument: argument #2 'mat2' is now 'other'\n"),
            std::string::npos)
      << r;
  EXPECT_NE(r.find("note: user kernel files to edit (1): "
                   "kernels/mul_Tensor.cpp\n"),
            std::string::npos)
      << r;
  EXPECT_NE(r.find("`accgen generate --update-lock`"), std::string::npos);
  // Refusing leaves the lock as it was.
  commitLock(plan);
  EXPECT_EQ(slurp(specs_ / "accgen.lock"), locked_text);
}

TEST_F(UpgradeBackendTest, UpdateLockAcceptsAndTheNextRunIsClean) {
  commitLock(planLock(build(oldRegistry()), "2.13.0+cpu", false));
  model::Backend backend = build(newRegistry());
  LockPlan plan = planLock(backend, "2.14.1", true);
  EXPECT_EQ(plan.action, LockPlan::Action::kUpdate);
  EXPECT_EQ(plan.exitCode(), ExitCode::kOk);
  EXPECT_NE(plan.report.find(": note: accepting the changed schemas of 4 "
                             "locked operators"),
            std::string::npos)
      << plan.report;
  commitLock(plan);
  const std::string text = slurp(specs_ / "accgen.lock");
  EXPECT_NE(text.find("torch: \"2.14.1\""), std::string::npos);
  EXPECT_NE(text.find("mul.Tensor(Tensor self, Tensor other, *, Scalar "
                      "alpha=1) -> Tensor"),
            std::string::npos);
  LockPlan again = planLock(backend, "2.14.1", false);
  EXPECT_EQ(again.action, LockPlan::Action::kKeep);
}

TEST_F(UpgradeBackendTest,
       DefaultOnlyChangesAddedAndRemovedOpsNeedNoAcceptance) {
  commitLock(planLock(build(oldRegistry()), "2.13.0+cpu", false));
  const auto default_only = schema::SchemaRegistry::loadFromString(
      defaultOnlyYaml(), "defaults.yaml");
  LockPlan plan = planLock(build(default_only), "2.13.0+cpu", false);
  EXPECT_EQ(plan.action, LockPlan::Action::kUpdate);
  EXPECT_FALSE(plan.comparison.drifted());
  EXPECT_NE(plan.report.find("3 operator(s) changed only in default values"),
            std::string::npos)
      << plan.report;
  commitLock(plan);

  // Dropping mm from the specs drops it from the lock without a question.
  spit(specs_ / "operators.yaml", operatorsYaml(/*with_mm=*/false));
  LockPlan removed = planLock(build(default_only), "2.13.0+cpu", false);
  EXPECT_EQ(removed.action, LockPlan::Action::kUpdate);
  EXPECT_NE(removed.report.find("1 operator(s) no longer registered"),
            std::string::npos);
  commitLock(removed);
  EXPECT_EQ(slurp(specs_ / "accgen.lock").find("aten::mm\""),
            std::string::npos);

  // Adding it back is an addition: no acceptance either.
  spit(specs_ / "operators.yaml", operatorsYaml(/*with_mm=*/true));
  LockPlan added = planLock(build(default_only), "2.13.0+cpu", false);
  EXPECT_EQ(added.action, LockPlan::Action::kUpdate);
  EXPECT_NE(added.report.find("1 operator(s) added to the lock"),
            std::string::npos);
}

TEST_F(UpgradeBackendTest, MalformedLocksAreErrorsWithPositions) {
  auto expectError = [](const std::string& text, const std::string& expected) {
    try {
      parseLock(text, "specs/accgen.lock");
      ADD_FAILURE() << "no error for:\n" << text;
    } catch (const AccgenError& e) {
      EXPECT_EQ(e.code(), ExitCode::kInvalidInput);
      EXPECT_NE(std::string(e.what()).find(expected), std::string::npos)
          << e.what();
    }
  };
  expectError(
      "torch: \"2.13\"\noperators:\n  \"aten::relu\": {schema: "
      "\"relu(Tensor self -> Tensor\"}\n",
      "specs/accgen.lock:3:44: error: malformed schema: expected ',' or ')' "
      "after an argument");
  expectError(
      "torch: \"2.13\"\noperators:\n  \"aten::relu\": {schema: "
      "\"relu(Tensor self) -> Tensor\"}\n  \"aten::relu\": {schema: "
      "\"relu(Tensor self) -> Tensor\"}\n",
      "specs/accgen.lock:4:3: error: duplicate operator 'aten::relu'");
  expectError(
      "torch: \"2.13\"\noperators:\n  \"aten::relu\": {shema: "
      "\"relu(Tensor self) -> Tensor\"}\n",
      "specs/accgen.lock:3:18: error: unknown key 'shema'");
  expectError(
      "torch: \"2.13\"\noperators:\n  \"aten::relu\": {schema: "
      "\"abs(Tensor self) -> Tensor\"}\n",
      "specs/accgen.lock:3:27: error: the schema of 'aten::relu' "
      "names 'abs'");
  expectError("operators: {}\n", "specs/accgen.lock: error: ");
}

// --- user kernels
// -------------------------------------------------------------

TEST_F(UpgradeBackendTest, ChangedKernelSignatureIsReportedAtTheUserFile) {
  // The user's kernel, written against the old schema.
  spit(out_ / "kernels/mul_Tensor.cpp",
       "// Implements mul for accel.\n"
       "#include \"KernelDecls.h\"\n"
       "\n"
       "namespace accel::kernels {\n"
       "\n"
       "at::Tensor kernel_mul_Tensor(const at::Tensor& self,\n"
       "                             const at::Tensor& other) {\n"
       "  return self;  // kernel_mul_Tensor(const at::Tensor& x)\n"
       "}\n"
       "\n"
       "}  // namespace accel::kernels\n");
  spit(out_ / "kernels/mm.cpp",
       "at::Tensor kernel_mm(const at::Tensor &a, at::Tensor const& b) {\n"
       "  return a;\n"
       "}\n");
  spit(out_ / "kernels/scaled_add.cpp",
       "at::Tensor kernel_scaled_add(const at::Tensor& self, const "
       "at::Tensor& other, double alpha) { return self; }\n"
       "at::Tensor meta_scaled_add(const at::Tensor& self, const at::Tensor& "
       "other, double alpha) { return self; }\n");

  // Against the schemas it was written for, everything matches.
  EXPECT_TRUE(checkUserKernels(build(oldRegistry()), out_.string()).empty());

  // Against the next release, mul's kernel no longer does; mm's rename does
  // not matter to C++.
  auto diags = checkUserKernels(build(newRegistry()), out_.string());
  ASSERT_EQ(diags.size(), 1u);
  EXPECT_EQ(diags[0].format(),
            out_.string() +
                "/kernels/mul_Tensor.cpp:6:1: error: kernel "
                "'kernel_mul_Tensor' no longer matches aten::mul.Tensor; the "
                "signature is now: at::Tensor kernel_mul_Tensor(const "
                "at::Tensor& self, const at::Tensor& other, const at::Scalar& "
                "alpha)\n"
                "note: this definition takes (const at::Tensor& self, const "
                "at::Tensor& other)\n"
                "note: update the parameters (and the body) to the new "
                "signature; accgen never rewrites this file\n");

  // generate reports the same as a warning.
  auto warnings =
      checkUserKernels(build(newRegistry()), out_.string(), Severity::kWarning);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_EQ(warnings[0].severity, Severity::kWarning);

  // The user updates the kernel: clean again.
  spit(out_ / "kernels/mul_Tensor.cpp",
       "at::Tensor kernel_mul_Tensor(const at::Tensor& self, const "
       "at::Tensor& other, const at::Scalar& alpha) {\n  return self;\n}\n");
  EXPECT_TRUE(checkUserKernels(build(newRegistry()), out_.string()).empty());
}

TEST_F(UpgradeBackendTest, MissingKernelFilesAreLeftToTheWriter) {
  EXPECT_TRUE(checkUserKernels(build(oldRegistry()), out_.string()).empty());
}

TEST_F(UpgradeBackendTest, OrphanedKernelFilesAreReportedNeverDeleted) {
  spit(out_ / "kernels/mul_Tensor.cpp", "// mul\n");
  spit(out_ / "kernels/mm.cpp", "// mm\n");
  spit(out_ / "kernels/old_op.cpp", "// an operator that was removed\n");
  spit(out_ / "kernels/notes.txt", "not a kernel\n");
  spit(out_ / "kernels/helpers/util.cpp", "// helpers live below kernels/\n");
  spit(
      out_ / "accgen-manifest.json",
      R"({"generator": "accgen", "files": {}, "user_files": )"
      R"(["kernels/mm.cpp", "kernels/gone_from_disk.cpp", "kernels/mul_Tensor.cpp"]})");

  model::Backend with_mm = build(oldRegistry());
  auto diags = findOrphanedKernels(with_mm, out_.string());
  ASSERT_EQ(diags.size(), 1u);
  EXPECT_EQ(
      diags[0].format(),
      out_.string() +
          "/kernels/old_op.cpp: warning: orphaned user "
          "kernel file; no operator in " +
          specs_.string() +
          "/operators.yaml uses it; delete it or add the operator back\n");

  // mm leaves the specs: its file is orphaned too, and still on disk.
  spit(specs_ / "operators.yaml", operatorsYaml(/*with_mm=*/false));
  auto after = findOrphanedKernels(build(oldRegistry()), out_.string());
  ASSERT_EQ(after.size(), 2u);
  EXPECT_EQ(after[0].loc.file, out_.string() + "/kernels/mm.cpp");
  EXPECT_EQ(after[1].loc.file, out_.string() + "/kernels/old_op.cpp");
  EXPECT_TRUE(fs::exists(out_ / "kernels/mm.cpp"));
}

// --- schema-diff --specs --------------------------------------------------

TEST_F(UpgradeBackendTest, SchemaDiffNamesTheBackendsOperatorsAndFiles) {
  const SchemaDiff diff = diffSchemas(oldRegistry(), newRegistry());
  model::Backend backend = build(oldRegistry());
  BackendImpact impact = analyzeBackend(backend, diff);
  std::vector<std::string> affected;
  for (const auto& a : impact.affected)
    affected.push_back(a.name);
  EXPECT_EQ(affected, (std::vector<std::string>{"mm", "mul.Tensor", "mul.out",
                                                "mul_.Tensor"}));
  EXPECT_TRUE(impact.needsAction());
  EXPECT_EQ(impact.kernelFilesToEdit(),
            std::vector<std::string>{"kernels/mul_Tensor.cpp"});
  EXPECT_EQ(schemaDiffExitCode(diff, &impact), 1);

  const std::string text = formatSchemaDiff(
      {"old.yaml", "2.13.0", "new.yaml", "2.14.1"}, diff, &impact);
  EXPECT_NE(text.find("      edit kernels/mul_Tensor.cpp: the kernel's "
                      "signature changes\n"
                      "      C++ old: at::Tensor kernel_mul_Tensor(const "
                      "at::Tensor& self, const at::Tensor& other)\n"
                      "      C++ new: at::Tensor kernel_mul_Tensor(const "
                      "at::Tensor& self, const at::Tensor& other, const "
                      "at::Scalar& alpha)\n"),
            std::string::npos)
      << text;
  EXPECT_NE(
      text.find("  mm  [kernel]  " + specs_.string() + "/operators.yaml:"),
      std::string::npos)
      << text;
  EXPECT_NE(text.find("      the user kernel needs no edit (same C++ types)"),
            std::string::npos);
  EXPECT_NE(text.find("User kernel files to edit (1):\n  "
                      "kernels/mul_Tensor.cpp\n"),
            std::string::npos);

  auto j = schemaDiffJson({"old.yaml", "2.13.0", "new.yaml", "2.14.1"}, diff,
                          &impact);
  auto parsed = nlohmann::json::parse(j.dump());
  EXPECT_EQ(parsed["exit_code"], 1);
  EXPECT_EQ(parsed["backend"]["kernel_files_to_edit"],
            nlohmann::json::array({"kernels/mul_Tensor.cpp"}));
  const auto& first = parsed["backend"]["affected"][0];
  EXPECT_EQ(first["name"], "mm");
  EXPECT_EQ(first["kernel_file"], nullptr);
  EXPECT_EQ(first["classes"], nlohmann::json::array({"renamed-argument"}));
  const auto& mul = parsed["backend"]["affected"][1];
  EXPECT_EQ(mul["name"], "mul.Tensor");
  EXPECT_EQ(mul["kernel_file"], "kernels/mul_Tensor.cpp");
  EXPECT_EQ(mul["new_cpp"],
            "at::Tensor kernel_mul_Tensor(const at::Tensor& self, const "
            "at::Tensor& other, const at::Scalar& alpha)");
}

TEST_F(UpgradeBackendTest, DefaultOnlyChangesDoNotAffectTheBackend) {
  const auto next = schema::SchemaRegistry::loadFromString(defaultOnlyYaml(),
                                                           "defaults.yaml");
  const SchemaDiff diff = diffSchemas(oldRegistry(), next);
  ASSERT_EQ(diff.operators.size(), 3u);
  BackendImpact impact = analyzeBackend(build(oldRegistry()), diff);
  EXPECT_EQ(impact.affected.size(), 3u);  // add's group: listed, no action
  EXPECT_FALSE(impact.needsAction());
  EXPECT_EQ(schemaDiffExitCode(diff, &impact), 0);
  EXPECT_EQ(schemaDiffExitCode(diff, nullptr), 1);  // the files do differ
}

TEST_F(UpgradeBackendTest, RunSchemaDiffWithSpecsEndToEnd) {
  spit(root_ / "old.yaml", installedYaml());
  spit(root_ / "new.yaml", nextReleaseYaml());
  SchemaDiffOptions options;
  options.old_source = (root_ / "old.yaml").string();
  options.new_source = (root_ / "new.yaml").string();
  options.specs_dir = specs_.string();
  options.json = true;
  std::ostringstream out, err;
  EXPECT_EQ(runSchemaDiff(options, out, err), 1) << err.str();
  auto j = nlohmann::json::parse(out.str());
  EXPECT_EQ(j["backend"]["specs"], specs_.string());
  EXPECT_EQ(j["summary"]["needs_action"], 4);

  // Specs that do not validate: exit 3 with the diagnostics on err.
  spit(specs_ / "operators.yaml",
       "operators:\n  - {op: mull.Tensor, kind: kernel}\n");
  std::ostringstream out2, err2;
  EXPECT_EQ(runSchemaDiff(options, out2, err2), 3);
  EXPECT_NE(err2.str().find("unknown operator 'mull.Tensor'"),
            std::string::npos)
      << err2.str();
}

}  // namespace
}  // namespace accgen::upgrade
