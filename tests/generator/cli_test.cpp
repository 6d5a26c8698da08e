// CLI tests: the real accgen binary run in temporary directories. They
// check exit codes, the summary line, --check diffs, the refusal to
// overwrite hand edits, that errors leave the output tree untouched, and
// hostile inputs and interrupted runs (CliHardening).
#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include "tests/generator/test_support.h"

namespace {

namespace fs = std::filesystem;
using accgen::slurp;

struct Result {
  int code = -1;
  std::string out;
  std::string err;
};

/// Runs accgen with `args` in `cwd`, capturing stdout and stderr; `env` is
/// a prefix of VAR=value assignments.
Result accgen(const std::string& args, const fs::path& cwd,
              const std::string& env = "",
              const std::string& binary = ACCGEN_BINARY) {
  const fs::path out = cwd / ".cli_stdout", err = cwd / ".cli_stderr";
  std::string cmd = "cd '" + cwd.string() + "' && " + env + " '" + binary +
                    "' " + args + " >'" + out.string() + "' 2>'" +
                    err.string() + "'";
  int status = std::system(cmd.c_str());
  Result r;
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.out = slurp(out);
  r.err = slurp(err);
  fs::remove(out);
  fs::remove(err);
  return r;
}

/// Every file under `dir` (manifest and generated files) with its bytes and
/// modification time, to prove a failed run touched nothing.
std::map<std::string, std::pair<std::string, fs::file_time_type>> snapshot(
    const fs::path& dir) {
  std::map<std::string, std::pair<std::string, fs::file_time_type>> files;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    if (!e.is_regular_file()) continue;
    files[fs::relative(e.path(), dir).string()] = {slurp(e.path()),
                                                   e.last_write_time()};
  }
  return files;
}

/// The installed torch's native_functions.yaml, or "" without one.
std::string installedSchemas() {
  FILE* pipe = ::popen(
      "python3 -c 'import pathlib, torchgen; print(pathlib.Path("
      "torchgen.__file__).parent / \"packaged/ATen/native/"
      "native_functions.yaml\")' 2>/dev/null",
      "r");
  if (pipe == nullptr) return "";
  char line[4096] = {0};
  const bool got = std::fgets(line, sizeof(line), pipe) != nullptr;
  ::pclose(pipe);
  std::string schemas = got ? std::string(line) : "";
  while (!schemas.empty() && schemas.back() == '\n')
    schemas.pop_back();
  return fs::exists(schemas) ? schemas : "";
}

class CliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("accgen_cli_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  /// `accgen init demo` in dir_, asserting success; returns the project.
  fs::path initProject() {
    Result r = accgen("init demo", dir_);
    EXPECT_EQ(r.code, 0) << r.err;
    return dir_ / "demo";
  }

  fs::path dir_;
};

TEST_F(CliTest, VersionHelpAndUsageErrors) {
  Result version = accgen("--version", dir_);
  EXPECT_EQ(version.code, 0);
  EXPECT_NE(version.out.find("accgen "), std::string::npos);
  for (const char* cmd : {"--help", "init --help", "generate --help",
                          "validate --help", "inspect --help"}) {
    EXPECT_EQ(accgen(cmd, dir_).code, 0) << cmd;
  }
  EXPECT_EQ(accgen("", dir_).code, 2);
  EXPECT_EQ(accgen("frobnicate", dir_).code, 2);
  EXPECT_EQ(accgen("generate --no-such-flag", dir_).code, 2);
  EXPECT_EQ(accgen("init", dir_).code, 2);
}

TEST_F(CliTest, InitRefusesInvalidNamesAndNonEmptyDirectories) {
  for (const char* bad : {"cuda", "class", "My-Device", "2fast", "nn"}) {
    Result r = accgen(std::string("init '") + bad + "'", dir_);
    EXPECT_EQ(r.code, 3) << bad;
    EXPECT_NE(r.err.find("invalid device name"), std::string::npos) << r.err;
    EXPECT_FALSE(fs::exists(dir_ / bad)) << bad;
  }
  fs::create_directories(dir_ / "taken");
  std::ofstream(dir_ / "taken" / "mine.txt") << "keep me\n";
  Result r = accgen("init demo --dir taken", dir_);
  EXPECT_EQ(r.code, 4);
  EXPECT_NE(r.err.find("not empty"), std::string::npos) << r.err;
  EXPECT_EQ(slurp(dir_ / "taken" / "mine.txt"), "keep me\n");
  EXPECT_EQ(std::distance(fs::directory_iterator(dir_ / "taken"),
                          fs::directory_iterator{}),
            1);
}

TEST_F(CliTest, InitCreatesAProjectThatRegeneratesToNothing) {
  fs::path project = initProject();
  for (const char* f : {"specs/backend.yaml", "specs/operators.yaml",
                        "specs/autocast.yaml", "accgen-manifest.json",
                        "tests/test_demo.py", ".github/workflows/demo.yml"}) {
    EXPECT_TRUE(fs::exists(project / f)) << f;
  }
  // No staging directory is left beside it.
  for (const auto& e : fs::directory_iterator(dir_)) {
    EXPECT_EQ(e.path().filename(), "demo");
  }
  Result again = accgen("generate", project);
  ASSERT_EQ(again.code, 0) << again.err;
  EXPECT_EQ(again.out.rfind("0 written, ", 0), 0u) << again.out;
  EXPECT_EQ(accgen("generate --check", project).code, 0);
  EXPECT_EQ(accgen("validate", project).code, 0);
}

// init generates its project as `generate` would, lock and input
// fingerprint included: the CI workflow it writes runs `generate --check`
// first, and a plain generate right after init has nothing to write.
TEST_F(CliTest, InitLeavesAProjectThatIsAlreadyCurrent) {
  fs::path project = initProject();
  EXPECT_TRUE(fs::exists(project / "specs" / "accgen.lock"));
  auto manifest =
      nlohmann::json::parse(slurp(project / "accgen-manifest.json"));
  EXPECT_TRUE(manifest.contains("inputs")) << manifest.dump(2);

  Result check = accgen("generate --check", project);
  EXPECT_EQ(check.code, 0) << check.out << check.err;

  auto before = snapshot(project);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  Result again = accgen("generate", project);
  ASSERT_EQ(again.code, 0) << again.err;
  EXPECT_EQ(again.out.rfind("0 written, ", 0), 0u) << again.out;
  EXPECT_EQ(snapshot(project), before);  // bytes and times, manifest too
}

// The same for a first generate that creates the lock and user kernels:
// the manifest records the inputs as the run leaves them.
/// The releases of torch_releases.txt, as the warning lists them.
std::string supportedReleases() {
  std::ifstream in(fs::path(ACCGEN_SOURCE_DIR) / "torch_releases.txt");
  std::string list;
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#') continue;
    list += (list.empty() ? "" : ", ") + line;
  }
  return list;
}

// A torch outside the supported releases is a warning naming them, never a
// failure: init pins it as it pins any torch, and generate and validate
// warn again. A supported release is not warned about.
TEST_F(CliTest, TorchOutsideTheSupportedReleasesIsAWarning) {
  const std::string schemas = installedSchemas();
  if (schemas.empty()) GTEST_SKIP() << "torchgen's schemas not found";
  const std::string releases = supportedReleases();
  ASSERT_FALSE(releases.empty());
  const std::string newest = releases.substr(releases.rfind(' ') + 1);
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"2.99.0", "newer than the newest"},
      {"2.12.1+cpu", "older than the oldest"},
      {newest, ""},
  };
  int n = 0;
  for (const auto& [version, warning] : cases) {
    // A site directory as a torch install lays it out: torchgen's schemas
    // and torch/version.py, which is where accgen reads the version from.
    const fs::path site = dir_ / ("site" + std::to_string(n));
    const fs::path yaml =
        site / "torchgen/packaged/ATen/native/native_functions.yaml";
    fs::create_directories(yaml.parent_path());
    fs::create_directories(site / "torch");
    fs::copy_file(schemas, yaml);
    std::ofstream(site / "torch" / "version.py")
        << "__version__ = '" << version << "'\n";
    const std::string name =
        std::string("proj_") + static_cast<char>('a' + n++);
    Result init =
        accgen("init " + name + " --schemas '" + yaml.string() + "'", dir_);
    ASSERT_EQ(init.code, 0) << version << ": " << init.err;
    const std::string plain = version.substr(0, version.find('+'));
    EXPECT_NE(slurp(dir_ / name / "pyproject.toml").find("torch==" + plain),
              std::string::npos)
        << version;
    EXPECT_NE(slurp(dir_ / name / "specs/accgen.lock")
                  .find("torch: \"" + plain + "\""),
              std::string::npos)
        << version;
    const std::string args = " --schemas '" + yaml.string() + "'";
    for (const Result& r : {init, accgen("generate" + args, dir_ / name),
                            accgen("validate" + args, dir_ / name)}) {
      EXPECT_EQ(r.code, 0) << version << ": " << r.err;
      if (warning.empty()) {
        EXPECT_EQ(r.err.find("warning: torch"), std::string::npos) << r.err;
        continue;
      }
      EXPECT_NE(r.err.find("warning: torch " + version + " is " + warning +
                           " release accgen supports; supported and tested: " +
                           releases),
                std::string::npos)
          << r.err;
    }
  }
}

TEST_F(CliTest, FirstGenerateRecordsTheInputsItLeaves) {
  fs::copy(fs::path(ACCGEN_SOURCE_DIR) / "specs", dir_ / "specs");
  fs::remove(dir_ / "specs" / "accgen.lock");
  Result first = accgen("generate --out out", dir_);
  ASSERT_EQ(first.code, 0) << first.err;
  ASSERT_NE(first.out.find("user files created"), std::string::npos)
      << first.out;
  EXPECT_EQ(accgen("generate --out out --check", dir_).code, 0);
  auto before = snapshot(dir_ / "out");
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  Result again = accgen("generate --out out", dir_);
  ASSERT_EQ(again.code, 0) << again.err;
  EXPECT_EQ(snapshot(dir_ / "out"), before);
}

TEST_F(CliTest, InitIntoAnEmptyExistingDirectory) {
  fs::create_directories(dir_ / "empty");
  Result r = accgen("init demo --dir empty", dir_);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(fs::exists(dir_ / "empty" / "specs" / "backend.yaml"));
}

TEST_F(CliTest, FailedInitLeavesNothingBehind) {
  std::ofstream(dir_ / "broken.yaml") << "- func: add(Tensor self -> Tensor\n";
  Result r = accgen("init demo --schemas broken.yaml", dir_);
  EXPECT_EQ(r.code, 3) << r.err;
  for (const auto& e : fs::directory_iterator(dir_)) {
    EXPECT_EQ(e.path().filename(), "broken.yaml") << e.path();
  }
}

TEST_F(CliTest, CheckFindsHandEditsAndGenerateRefusesThem) {
  fs::path project = initProject();
  auto manifest =
      nlohmann::json::parse(slurp(project / "accgen-manifest.json"));
  ASSERT_FALSE(manifest["files"].empty());
  const std::string rel = manifest["files"].begin().key();
  const fs::path victim = project / rel;
  const std::string original = slurp(victim);
  std::ofstream(victim, std::ios::app) << "// my tweak\n";

  Result check = accgen("generate --check", project);
  EXPECT_EQ(check.code, 1);
  EXPECT_NE(check.out.find("--- a/" + rel), std::string::npos) << check.out;
  EXPECT_NE(check.out.find("-// my tweak"), std::string::npos) << check.out;
  EXPECT_NE(check.err.find("regenerate with: accgen generate"),
            std::string::npos)
      << check.err;

  Result refused = accgen("generate", project);
  EXPECT_EQ(refused.code, 4);
  EXPECT_NE(
      refused.err.find(rel + ": error: generated file was edited by hand"),
      std::string::npos)
      << refused.err;
  EXPECT_EQ(slurp(victim), original + "// my tweak\n");

  Result forced = accgen("generate --force", project);
  EXPECT_EQ(forced.code, 0) << forced.err;
  EXPECT_EQ(slurp(victim), original);
  EXPECT_EQ(accgen("generate --check", project).code, 0);
}

TEST_F(CliTest, ChangedInputsAreNeverSkipped) {
  // Note [Input fingerprint]: a no-op run skips rendering only while specs,
  // templates, schemas and kernels are what the manifest recorded.
  const fs::path templates = dir_ / "templates";
  fs::copy(fs::path(ACCGEN_SOURCE_DIR) / "templates", templates,
           fs::copy_options::recursive);
  const std::string env = "ACCGEN_TEMPLATE_DIR='" + templates.string() + "'";
  ASSERT_EQ(accgen("init demo", dir_, env).code, 0);
  const fs::path project = dir_ / "demo";
  ASSERT_EQ(accgen("generate", project, env).code, 0);  // records the inputs
  Result same = accgen("generate", project, env);
  ASSERT_EQ(same.code, 0) << same.err;
  EXPECT_EQ(same.out.rfind("0 written, ", 0), 0u) << same.out;

  std::ofstream(templates / "backend" / "pyproject.toml.mustache",
                std::ios::app)
      << "# one more line\n";
  Result changed = accgen("generate", project, env);
  ASSERT_EQ(changed.code, 0) << changed.err;
  EXPECT_EQ(changed.out.rfind("1 written, ", 0), 0u) << changed.out;
  EXPECT_NE(slurp(project / "pyproject.toml").find("# one more line"),
            std::string::npos);

  // accgen itself is an input: another build of the same version (here the
  // same binary with bytes appended) renders again and records itself.
  const auto recorded = [&] {
    return nlohmann::json::parse(slurp(project / "accgen-manifest.json"))
        .at("inputs")
        .get<std::string>();
  };
  const std::string inputs_before = recorded();
  const fs::path rebuilt = dir_ / "accgen-rebuilt";
  fs::copy_file(ACCGEN_BINARY, rebuilt);
  std::ofstream(rebuilt, std::ios::app | std::ios::binary) << "another build";
  Result other_build = accgen("generate", project, env, rebuilt.string());
  ASSERT_EQ(other_build.code, 0) << other_build.err;
  EXPECT_NE(recorded(), inputs_before);
  ASSERT_EQ(accgen("generate", project, env).code, 0);
  EXPECT_EQ(recorded(), inputs_before);

  std::ofstream(project / "specs" / "operators.yaml", std::ios::app)
      << "  - {op: lerp.Scalar, kind: emulate}\n";
  Result spec_changed = accgen("generate", project, env);
  ASSERT_EQ(spec_changed.code, 0) << spec_changed.err;
  EXPECT_EQ(spec_changed.out.rfind("0 written, ", 0), std::string::npos)
      << spec_changed.out;
}

TEST_F(CliTest, StaleGeneratedFilesAreRemoved) {
  fs::path project = initProject();
  // Renaming the package moves the Python package directory: the old
  // files are no longer produced and must go.
  auto backend = slurp(project / "specs" / "backend.yaml");
  auto pos = backend.find("package: torch_demo");
  ASSERT_NE(pos, std::string::npos);
  backend.replace(pos, 19, "package: torch_demo2");
  std::ofstream(project / "specs" / "backend.yaml") << backend;
  Result r = accgen("generate", project);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out.find(" 0 removed"), std::string::npos) << r.out;
  EXPECT_FALSE(fs::exists(project / "src" / "torch_demo"));
  EXPECT_TRUE(fs::exists(project / "src" / "torch_demo2"));
}

TEST_F(CliTest, InvalidSpecLeavesTheTreeUntouched) {
  fs::path project = initProject();
  auto before = snapshot(project);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  std::ofstream(project / "specs" / "operators.yaml", std::ios::app)
      << "  - {op: ad.Tensor, kind: emulate}\n";
  auto specs_after = slurp(project / "specs" / "operators.yaml");
  Result r = accgen("generate", project);
  EXPECT_EQ(r.code, 3);
  EXPECT_NE(r.err.find("specs/operators.yaml:"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("did you mean 'add.Tensor'"), std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("nothing was written"), std::string::npos) << r.err;
  auto after = snapshot(project);
  before["specs/operators.yaml"].first = specs_after;
  after["specs/operators.yaml"].second = before["specs/operators.yaml"].second;
  EXPECT_EQ(before, after);
}

TEST_F(CliTest, MissingSpecDirectoryIsAClearError) {
  Result r = accgen("generate --specs nowhere --out out", dir_);
  EXPECT_EQ(r.code, 3);
  EXPECT_NE(r.err.find("nowhere: error: no such spec directory"),
            std::string::npos)
      << r.err;
  EXPECT_FALSE(fs::exists(dir_ / "out"));
}

TEST_F(CliTest, InspectShowsSchemaSignatureAndRegistration) {
  fs::path project = initProject();
  Result r = accgen("inspect add.Tensor", project);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("add.Tensor(Tensor self, Tensor other, *, Scalar "
                       "alpha=1) -> Tensor"),
            std::string::npos);
  EXPECT_NE(r.out.find("const at::Tensor& self, const at::Tensor& other, "
                       "const at::Scalar& alpha"),
            std::string::npos);
  EXPECT_NE(r.out.find("emulate"), std::string::npos) << r.out;
  Result unlisted = accgen("inspect --json lerp.Scalar", project);
  ASSERT_EQ(unlisted.code, 0) << unlisted.err;
  EXPECT_NE(unlisted.out.find("\"global fallback (emulate)\""),
            std::string::npos)
      << unlisted.out;
  Result bad = accgen("inspect ad.Tensor", project);
  EXPECT_EQ(bad.code, 3);
  EXPECT_NE(bad.err.find("did you mean 'add.Tensor'"), std::string::npos);
}

TEST_F(CliTest, InspectShowsTheSignatureOptionsOfTheEntry) {
  // cat is structured: ATen takes its tensors as ITensorListRef, and so
  // does the kernel the backend would register.
  Result r = accgen("inspect cat --specs nowhere", dir_);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("at::Tensor kernel(const at::ITensorListRef& "
                       "tensors, int64_t dim)"),
            std::string::npos)
      << r.out;
  // resize_as_ uses const references for the tensors it writes.
  Result resize = accgen("inspect --json resize_as_ --specs nowhere", dir_);
  ASSERT_EQ(resize.code, 0) << resize.err;
  auto j = nlohmann::json::parse(resize.out);
  EXPECT_EQ(j["signature"].get<std::string>().rfind(
                "const at::Tensor& kernel(const at::Tensor& self", 0),
            0u)
      << resize.out;
}

/// The spec error cases of tests/errors, through the binary: the same
/// diagnostics as the in-process test, then the summary line, exit code 3.
TEST_F(CliTest, ErrorCasesThroughTheBinary) {
  const fs::path cases = fs::path(ACCGEN_SOURCE_DIR) / "tests" / "errors";
  int ran = 0;
  for (const auto& entry : fs::directory_iterator(cases)) {
    if (!entry.is_directory() || entry.path().filename() == "base") continue;
    const fs::path work = dir_ / entry.path().filename();
    fs::create_directories(work / "specs");
    for (const auto& f : fs::directory_iterator(cases / "base")) {
      fs::copy_file(f.path(), work / "specs" / f.path().filename());
    }
    for (const auto& f : fs::directory_iterator(entry.path())) {
      if (f.path().extension() == ".yaml") {
        fs::copy_file(f.path(), work / "specs" / f.path().filename(),
                      fs::copy_options::overwrite_existing);
      }
    }
    if (fs::exists(entry.path() / "absent")) {
      std::istringstream absent(slurp(entry.path() / "absent"));
      for (std::string name; std::getline(absent, name);) {
        if (!name.empty()) fs::remove(work / "specs" / name);
      }
    }
    const int expected_code = std::stoi(slurp(entry.path() / "exit_code"));
    const std::string expected = slurp(entry.path() / "expected.txt");
    Result r = accgen("validate --specs specs", work);
    EXPECT_EQ(r.code, expected_code) << entry.path().filename();
    EXPECT_EQ(r.err.substr(0, expected.size()), expected)
        << entry.path().filename();
    if (expected_code == 3) {
      EXPECT_NE(r.err.find("in specs; nothing was written"), std::string::npos)
          << entry.path().filename();
      // Every check is the model's: generate refuses exactly what validate
      // refuses, with the same located messages, before writing anything.
      Result gen = accgen("generate --specs specs --out out", work);
      EXPECT_EQ(gen.code, r.code) << entry.path().filename();
      EXPECT_EQ(gen.err, r.err) << entry.path().filename();
      EXPECT_FALSE(fs::exists(work / "out")) << entry.path().filename();
    }
    ++ran;
  }
  EXPECT_GT(ran, 20);
}

// Hostile inputs and trees (docs/reliability.md): spec files that are
// FIFOs, devices, link loops or directories, a lock that cannot be read,
// manifest entries outside the output tree, links in the tree that lead
// outside it, and generates killed at many moments (Note [Interrupted runs]
// in generator/write/writer.cpp). Each case checks the located message, the
// documented exit code and what was written.
class CliHardening : public CliTest {
 protected:
  void SetUp() override {
    CliTest::SetUp();
    fs::copy(fs::path(ACCGEN_SOURCE_DIR) / "specs", dir_ / "specs",
             fs::copy_options::recursive);
  }

  /// accgen in dir_ under a time limit: a hang fails (exit 124).
  Result run(const std::string& args) {
    return accgen(args, dir_, "timeout 60");
  }

  /// Every regular file under `dir` with its bytes.
  static std::map<std::string, std::string> contents(const fs::path& dir) {
    std::map<std::string, std::string> files;
    if (!fs::exists(dir)) return files;
    for (const auto& [path, file] : snapshot(dir))
      files[path] = file.first;
    return files;
  }

  /// Replaces spec file `name` with a FIFO, a link, ...
  fs::path spec(const std::string& name) {
    fs::remove(dir_ / "specs" / name);
    return dir_ / "specs" / name;
  }
};

TEST_F(CliHardening, FifoSpecIsAnErrorNotAHang) {
  ASSERT_EQ(::mkfifo(spec("autocast.yaml").c_str(), 0644), 0);
  Result r = run("validate --specs specs");
  EXPECT_EQ(r.code, 3);
  EXPECT_NE(r.err.find("specs/autocast.yaml: error: expected a file, found "
                       "a FIFO"),
            std::string::npos)
      << r.err;
}

// A generated file that became a non-empty directory cannot be replaced:
// the message gives the rename's reason, not the clean-up's "Success".
TEST_F(CliHardening, UnreplaceableOutputNamesTheReason) {
  ASSERT_EQ(run("generate --specs specs --out out").code, 0);
  const fs::path header = dir_ / "out" / "csrc" / "Backend.h";
  fs::remove(header);
  fs::create_directories(header / "x");
  Result r = run("generate --specs specs --out out --force");
  EXPECT_EQ(r.code, 6);
  EXPECT_NE(r.err.find("out/csrc/Backend.h: error: cannot replace it: Is a "
                       "directory"),
            std::string::npos)
      << r.err;
  EXPECT_TRUE(fs::is_directory(header / "x"));
}

// Stray files beside the specs are fingerprinted, never parsed: a link loop
// is skipped (it made generate exit 6 while validate passed), and a file
// past the input bound counts by its size and time, not its bytes in
// memory (a 1 GiB one took 3.1 GB).
TEST_F(CliHardening, StrayFilesBesideTheSpecsAreBounded) {
  fs::create_symlink("loop", spec("loop"));
  {
    std::ofstream huge(spec("weights.bin"), std::ios::binary);
    huge.seekp((200 << 20) - 1);
    huge.put('\0');
  }
  EXPECT_EQ(run("validate --specs specs").code, 0);
  Result r = run("generate --specs specs --out out");
  EXPECT_EQ(r.code, 0) << r.err;
  struct rusage usage {};
  ASSERT_EQ(::getrusage(RUSAGE_CHILDREN, &usage), 0);
  EXPECT_LT(usage.ru_maxrss, 150 * 1024) << "KiB, the largest child so far";
  EXPECT_EQ(run("generate --specs specs --out out --check").code, 0);
}

// The torch-location cache is a hint: a FIFO there must not hang generate,
// and a directory or a value of another type is a miss, not exit 70.
TEST_F(CliHardening, TorchCacheOfTheWrongKindIsAMiss) {
  const fs::path cache = dir_ / "cache";
  const std::string env = "XDG_CACHE_HOME='" + cache.string() + "' timeout 60";
  ASSERT_EQ(accgen("generate --specs specs --out out", dir_, env).code, 0);
  fs::path file;
  for (const auto& e : fs::directory_iterator(cache / "accgen")) {
    if (e.path().extension() == ".json") file = e.path();
  }
  ASSERT_FALSE(file.empty());
  const auto replace = [&](const auto& make) {
    fs::remove_all(file);
    make();
    Result r = accgen("generate --specs specs --out out", dir_, env);
    EXPECT_EQ(r.code, 0) << r.err;
  };
  replace([&] { ASSERT_EQ(::mkfifo(file.c_str(), 0644), 0); });
  replace([&] { fs::create_directory(file); });
  replace([&] {
    std::ofstream(file) << R"({"torch_dir": 7, "stamps": [], "version": {}})";
  });
}

// A run killed while it replaced the lock leaves the lock's temporary
// behind; it is accgen's own file, not an input, so the tree stays current.
TEST_F(CliHardening, LeftoverLockTemporaryIsNoInput) {
  ASSERT_EQ(run("generate --specs specs --out out").code, 0);
  std::ofstream(spec("accgen.lock.tmp")) << "torch: half-writ";
  Result check = run("generate --specs specs --out out --check");
  EXPECT_EQ(check.code, 0) << check.out << check.err;
  Result again = run("generate --specs specs --out out");
  EXPECT_EQ(again.code, 0) << again.err;
  EXPECT_EQ(again.out.rfind("0 written, ", 0), 0u) << again.out;
}

// A huge file at a generated path is not read: it counts as edited by
// hand (kept without --force, replaced with it), and memory stays bounded.
TEST_F(CliHardening, HugeFileInTheOutputTreeIsNotRead) {
  ASSERT_EQ(run("generate --specs specs --out out").code, 0);
  const fs::path header = dir_ / "out" / "csrc" / "Backend.h";
  fs::resize_file(header, std::uintmax_t{300} << 20);
  Result r = run("generate --specs specs --out out");
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.err.find("csrc/Backend.h"), std::string::npos) << r.err;
  EXPECT_EQ(fs::file_size(header), std::uintmax_t{300} << 20);
  struct rusage usage {};
  ASSERT_EQ(::getrusage(RUSAGE_CHILDREN, &usage), 0);
  EXPECT_LT(usage.ru_maxrss, 150 * 1024) << "KiB, the largest child so far";
  EXPECT_EQ(run("generate --specs specs --out out --force").code, 0);
  EXPECT_LT(fs::file_size(header), std::uintmax_t{1} << 20);
}

// --schemas is read as an input: a FIFO is refused, not waited on, and a
// file past the bound is refused unread; both exit 3 with the reason.
TEST_F(CliHardening, SchemasFileIsReadAsAnInput) {
  ASSERT_EQ(::mkfifo((dir_ / "nf.yaml").c_str(), 0644), 0);
  Result fifo = run("validate --specs specs --schemas nf.yaml");
  EXPECT_EQ(fifo.code, 3);
  EXPECT_EQ(fifo.err.rfind("nf.yaml: error: ", 0), 0u) << fifo.err;
  fs::remove(dir_ / "nf.yaml");
  std::ofstream(dir_ / "nf.yaml").close();
  fs::resize_file(dir_ / "nf.yaml", std::uintmax_t{100} << 20);
  Result huge = run("generate --specs specs --out out --schemas nf.yaml");
  EXPECT_EQ(huge.code, 3);
  EXPECT_NE(huge.err.find("file too large"), std::string::npos) << huge.err;
  EXPECT_FALSE(fs::exists(dir_ / "out"));
}

TEST_F(CliHardening, DeviceSpecIsNotRead) {
  fs::create_symlink("/dev/zero", spec("operators.yaml"));
  Result r = run("generate --specs specs --out out");
  EXPECT_EQ(r.code, 3);
  EXPECT_NE(r.err.find("specs/operators.yaml: error: expected a file, found "
                       "a device"),
            std::string::npos)
      << r.err;
  EXPECT_FALSE(fs::exists(dir_ / "out"));
}

TEST_F(CliHardening, SymlinkLoopAndDirectory) {
  fs::create_symlink("backend.yaml", spec("backend.yaml"));
  fs::create_directory(spec("autocast.yaml"));
  Result r = run("validate --specs specs");
  EXPECT_EQ(r.code, 3);
  EXPECT_NE(r.err.find("specs/backend.yaml: error: cannot read file: Too "
                       "many levels of symbolic links"),
            std::string::npos)
      << r.err;
  // A read error on autocast.yaml is an error, never an empty file.
  EXPECT_NE(r.err.find("specs/autocast.yaml: error: expected a file, found "
                       "a directory"),
            std::string::npos)
      << r.err;
}

// A spec or lock the user may not read is a located error (exit 3), never
// an empty file. Root reads everything, so as root accgen runs as the user
// nobody (setpriv), against a copy of torch's native_functions.yaml it can
// read.
TEST_F(CliHardening, UnreadableSpecsAndLock) {
  std::string prefix = "timeout 60";
  if (::geteuid() == 0) {
    if (std::system("command -v setpriv >/dev/null 2>&1") != 0) {
      GTEST_SKIP() << "running as root without setpriv to drop privileges";
    }
    prefix += " setpriv --reuid=65534 --regid=65534 --clear-groups";
  }
  const std::string schemas = installedSchemas();
  if (schemas.empty()) {
    GTEST_SKIP() << "torchgen's native_functions.yaml not found";
  }
  fs::copy_file(schemas, dir_ / "nf.yaml");
  for (const char* name :
       {"backend.yaml", "operators.yaml", "autocast.yaml", "accgen.lock"}) {
    const fs::path file = dir_ / "specs" / name;
    fs::permissions(file, fs::perms::none);
    Result r = accgen("validate --specs specs --schemas nf.yaml", dir_, prefix);
    fs::permissions(file, fs::perms::owner_read | fs::perms::owner_write |
                              fs::perms::group_read | fs::perms::others_read);
    EXPECT_EQ(r.code, 3) << name << ": " << r.err;
    EXPECT_NE(r.err.find(std::string("specs/") + name +
                         ": error: cannot read file: Permission denied"),
              std::string::npos)
        << name << ": " << r.err;
  }
}

TEST_F(CliHardening, LockThatIsAFifoOrADirectory) {
  ASSERT_EQ(::mkfifo(spec("accgen.lock").c_str(), 0644), 0);
  Result v = run("validate --specs specs");
  EXPECT_EQ(v.code, 3);
  EXPECT_NE(v.err.find("specs/accgen.lock: error: expected a file, found a "
                       "FIFO"),
            std::string::npos)
      << v.err;
  fs::remove(dir_ / "specs" / "accgen.lock");
  fs::create_directory(dir_ / "specs" / "accgen.lock");
  Result g = run("generate --specs specs --out out");
  EXPECT_EQ(g.code, 3);
  EXPECT_NE(g.err.find("specs/accgen.lock: error: expected a file, found a "
                       "directory"),
            std::string::npos)
      << g.err;
  EXPECT_FALSE(fs::exists(dir_ / "out"));
}

TEST_F(CliHardening, ValidateReportsACorruptLockAsGenerateDoes) {
  std::ofstream(dir_ / "specs" / "accgen.lock") << "torch: [\n";
  Result v = run("validate --specs specs");
  Result g = run("generate --specs specs --out out");
  EXPECT_EQ(v.code, 3);
  EXPECT_EQ(g.code, 3);
  EXPECT_NE(v.err.find("specs/accgen.lock:"), std::string::npos) << v.err;
  EXPECT_EQ(v.err, g.err);
}

TEST_F(CliHardening, ManifestEntryOutsideTheTreeDeletesNothing) {
  ASSERT_EQ(run("generate --specs specs --out out").code, 0);
  std::ofstream(dir_ / "victim") << "keep me\n";
  const fs::path manifest = dir_ / "out" / "accgen-manifest.json";
  std::string text = slurp(manifest);
  const std::string files = "\"files\": {";
  for (const std::string& entry :
       std::vector<std::string>{"../victim", (dir_ / "victim").string()}) {
    std::string tampered = text;
    tampered.insert(tampered.find(files) + files.size(),
                    "\n    \"" + entry + "\": {\"hash\": \"0\"},");
    std::ofstream(manifest, std::ios::trunc) << tampered;
    const auto before = contents(dir_ / "out");
    Result r = run("generate --specs specs --out out --force");
    EXPECT_EQ(r.code, 3) << r.err;
    EXPECT_NE(r.err.find("out/accgen-manifest.json: error: entry '" + entry +
                         "' is not a path inside the output directory"),
              std::string::npos)
        << r.err;
    EXPECT_EQ(slurp(dir_ / "victim"), "keep me\n");
    EXPECT_EQ(contents(dir_ / "out"), before);
  }
}

// Note [Paths that are never accgen's]: in a project laid out as `accgen
// init` makes it (output directory `.`, specs in `specs/`), a manifest or
// journal entry naming a spec, a user kernel, a user file or a file in
// .git is refused even with --force, and nothing is removed.
TEST_F(CliHardening, RecordsNamingFilesOfTheUserRemoveNothing) {
  ASSERT_EQ(run("generate --specs specs --out .").code, 0);
  fs::create_directories(dir_ / ".git");
  std::ofstream(dir_ / ".git" / "config") << "[core]\n";
  const fs::path manifest = dir_ / "accgen-manifest.json";
  const std::string text = slurp(manifest);
  const std::string files = "\"files\": {";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"specs/autocast.yaml", "is a spec file"},
      {".git/config", "is inside a .git directory"},
      {"kernels/mine.cpp", "is a user kernel"},
  };
  std::ofstream(dir_ / "kernels" / "mine.cpp") << "// mine\n";
  for (const auto& [entry, why] : cases) {
    ASSERT_TRUE(fs::exists(dir_ / entry)) << entry;
    std::string tampered = text;
    tampered.insert(tampered.find(files) + files.size(),
                    "\n    \"" + entry + "\": {\"hash\": \"0\"},");
    std::ofstream(manifest, std::ios::trunc) << tampered;
    const auto before = contents(dir_);
    Result r = run("generate --specs specs --out . --force");
    EXPECT_EQ(r.code, 3) << r.err;
    EXPECT_NE(r.err.find("accgen-manifest.json: error: entry '" + entry + "' " +
                         why + ", which accgen never removes"),
              std::string::npos)
        << r.err;
    EXPECT_EQ(contents(dir_), before) << entry;
  }
  // A user file this run makes is kept, whatever the manifest says of it.
  std::ofstream(dir_ / "tuning.cpp", std::ios::app) << "// mine\n";
  const std::string tuning = slurp(dir_ / "tuning.cpp");
  std::string tampered = text;
  tampered.insert(tampered.find(files) + files.size(),
                  "\n    \"tuning.cpp\": {\"hash\": \"0\"},");
  std::ofstream(manifest, std::ios::trunc) << tampered;
  EXPECT_EQ(run("generate --specs specs --out . --force").code, 0);
  EXPECT_EQ(slurp(dir_ / "tuning.cpp"), tuning);
  std::ofstream(manifest, std::ios::trunc) << text;
  // The same entry in a journal.
  const fs::path journal = dir_ / "accgen-manifest.json.pending";
  std::ofstream(journal)
      << R"({"files": {"specs/autocast.yaml": ["0"]}, "created": []})";
  const auto before = contents(dir_);
  Result r = run("generate --specs specs --out . --force");
  EXPECT_EQ(r.code, 3) << r.err;
  EXPECT_NE(r.err.find("accgen-manifest.json.pending: error: entry "
                       "'specs/autocast.yaml' is a spec file"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(contents(dir_), before);
  fs::remove(journal);
}

// A journal's word that a killed run was creating a file takes only bytes
// that begin what the run writes there: a forged `created` entry does not
// override the hand-edit refusal.
TEST_F(CliHardening, ForgedJournalDoesNotTakeHandEdits) {
  ASSERT_EQ(run("generate --specs specs --out out").code, 0);
  const fs::path edited = dir_ / "out" / "CMakeLists.txt";
  std::ofstream(edited, std::ios::app) << "# mine\n";
  const std::string mine = slurp(edited);
  std::ofstream(dir_ / "out" / "accgen-manifest.json.pending")
      << R"({"files": {}, "created": ["CMakeLists.txt"]})";
  Result r = run("generate --specs specs --out out");
  EXPECT_EQ(r.code, 4) << r.err;
  EXPECT_NE(r.err.find("out/CMakeLists.txt: error: generated file was "
                       "edited by hand"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(slurp(edited), mine);
  // Every file is put in place whole, so no beginning of a file is a killed
  // run's: a generated file cut short by hand is kept too, and so is an
  // empty one, whatever the journal says.
  for (const std::string& bytes : {mine.substr(0, 40), std::string()}) {
    std::ofstream(edited, std::ios::trunc) << bytes;
    r = run("generate --specs specs --out out");
    EXPECT_EQ(r.code, 4) << r.err;
    EXPECT_EQ(slurp(edited), bytes);
  }
  // Nor does the hash of other bytes at that path.
  std::ofstream(edited, std::ios::trunc) << mine;
  std::ofstream(dir_ / "out" / "accgen-manifest.json.pending", std::ios::trunc)
      << R"({"files": {"CMakeLists.txt": ["0123456789abcdef"]}, "created": []})";
  r = run("generate --specs specs --out out");
  EXPECT_EQ(r.code, 4) << r.err;
  EXPECT_EQ(slurp(edited), mine);
}

// Every file of the output tree is read within the bound of the inputs: a
// huge manifest, journal or user kernel is a located error (exit 3) that
// leaves the tree as it was, in bounded memory, for validate as for
// generate. A huge file at a generated path counts as edited by hand.
TEST_F(CliHardening, HugeFilesInTheOutputTreeAreLocatedErrors) {
  ASSERT_EQ(run("generate --specs specs --out out").code, 0);
  constexpr std::uintmax_t kHuge = std::uintmax_t{3} << 30;  // sparse
  for (const std::string name :
       {"accgen-manifest.json", "accgen-manifest.json.pending",
        "kernels/relu.cpp"}) {
    SCOPED_TRACE(name);
    fs::remove_all(dir_ / "copy");
    fs::copy(dir_ / "out", dir_ / "copy", fs::copy_options::recursive);
    const fs::path file = dir_ / "copy" / name;
    { std::ofstream(file, std::ios::app).flush(); }
    fs::resize_file(file, kHuge);
    // Bytes of small files, sizes of huge ones.
    auto state = [](const fs::path& dir) {
      std::map<std::string, std::string> files;
      for (const auto& e : fs::recursive_directory_iterator(dir)) {
        if (!e.is_regular_file()) continue;
        files[fs::relative(e.path(), dir).string()] =
            e.file_size() > (std::uintmax_t{64} << 20)
                ? "size " + std::to_string(e.file_size())
                : slurp(e.path());
      }
      return files;
    };
    const auto before = state(dir_ / "copy");
    for (const std::string command : {"generate --specs specs --out copy",
                                      "validate --specs specs --out copy"}) {
      Result r = accgen(command, dir_, "ulimit -v 2097152; timeout 60");
      if (command.starts_with("validate") && name.ends_with(".pending")) {
        continue;  // validate reads no journal
      }
      EXPECT_EQ(r.code, 3) << command << ": " << r.err;
      EXPECT_NE(r.err.find("copy/" + name + ": error: file too large: " +
                           std::to_string(kHuge) + " bytes"),
                std::string::npos)
          << command << ": " << r.err;
      EXPECT_EQ(r.err.find("internal error"), std::string::npos) << r.err;
    }
    EXPECT_EQ(state(dir_ / "copy"), before);
  }
}

// A run that fails leaves the output tree byte for byte as it found it
// (Note [A run's writes are one transaction] in generator/write/writer.cpp):
// a directory, a FIFO or a directory in the way of a temporary file where
// the run writes, a journal that is not a file, and a write the system
// refuses halfway through the run (a file size limit: EFBIG), for a first
// generate and for one that changes many files. Nothing is left behind.
TEST_F(CliHardening, FailingRunsLeaveTheTreeAsItWas) {
  // Every entry under `dir`: regular files by their bytes, everything else
  // by its kind.
  auto tree = [](const fs::path& dir) {
    std::map<std::string, std::string> entries;
    if (!fs::exists(fs::symlink_status(dir))) return entries;
    for (const auto& e : fs::recursive_directory_iterator(dir)) {
      const std::string rel = fs::relative(e.path(), dir).string();
      const auto status = fs::symlink_status(e.path());
      entries[rel] = fs::is_regular_file(status) ? slurp(e.path())
                     : fs::is_directory(status)  ? "<directory>"
                     : fs::is_fifo(status)       ? "<fifo>"
                                                 : "<other>";
    }
    return entries;
  };
  ASSERT_EQ(run("generate --specs specs --out ref").code, 0);
  // Specs that change many generated files.
  fs::copy(dir_ / "specs", dir_ / "changed", fs::copy_options::recursive);
  {
    std::string text = slurp(dir_ / "changed" / "backend.yaml");
    const std::size_t at = text.find("memory: 1GiB");
    ASSERT_NE(at, std::string::npos);
    text.replace(at, 12, "memory: 2GiB");
    text.replace(text.find("devices: 2"), 10, "devices: 3");
    std::ofstream(dir_ / "changed" / "backend.yaml", std::ios::trunc) << text;
  }
  struct Case {
    std::string name;
    std::function<void(const fs::path&)> obstacle;
    int code;
  };
  const std::vector<Case> cases = {
      {"a directory at a generated path",
       [](const fs::path& out) {
         fs::remove(out / "csrc" / "Backend.h");
         fs::create_directories(out / "csrc" / "Backend.h" / "x");
       },
       6},
      {"a FIFO at a user kernel's path",
       [](const fs::path& out) {
         fs::remove(out / "kernels" / "relu.cpp");
         ASSERT_EQ(::mkfifo((out / "kernels" / "relu.cpp").c_str(), 0644), 0);
       },
       3},
      {"a FIFO as the journal",
       [](const fs::path& out) {
         ASSERT_EQ(
             ::mkfifo((out / "accgen-manifest.json.pending").c_str(), 0644), 0);
       },
       3},
      {"a directory as the journal",
       [](const fs::path& out) {
         fs::create_directories(out / "accgen-manifest.json.pending" / "x");
       },
       6},
      {"a directory in the way of a temporary file",
       [](const fs::path& out) {
         fs::create_directories(out / "csrc" / "accgen_config.h.accgen-tmp" /
                                "x");
       },
       6},
      {"a write refused halfway", [](const fs::path&) {}, 6},
  };
  for (const bool first : {false, true}) {
    for (const Case& c : cases) {
      SCOPED_TRACE(c.name + (first ? ", first generate" : ", regenerate"));
      const fs::path out = dir_ / "out";
      fs::remove_all(out);
      if (!first || c.name == "a write refused halfway") {
        if (!first) fs::copy(dir_ / "ref", out, fs::copy_options::recursive);
      } else {
        // A first generate into a directory holding only the obstacle.
        fs::create_directories(out / "csrc");
        fs::create_directories(out / "kernels");
      }
      c.obstacle(out);
      const auto before = tree(out);
      // A file size limit of 8 KiB (dash counts 512-byte blocks), with
      // SIGXFSZ ignored: the writes past it fail with EFBIG.
      const std::string limit = c.name == "a write refused halfway"
                                    ? "trap '' XFSZ; ulimit -f 16; "
                                    : "";
      Result r = accgen("generate --specs changed --out out", dir_,
                        limit + "timeout 60");
      EXPECT_EQ(r.code, c.code) << r.err;
      EXPECT_NE(r.err.find("out/"), std::string::npos) << r.err;
      EXPECT_EQ(tree(out), before);
      for (const auto& [path, bytes] : tree(out)) {
        EXPECT_FALSE(path.ends_with(".accgen-tmp") &&
                     c.name != "a directory in the way of a temporary file")
            << path;
      }
    }
  }
}

// Every message that quotes user text escapes the C0 and C1 controls, the
// line and paragraph separators and the bidirectional controls.
TEST_F(CliHardening, QuotedTextEscapesEveryControl) {
  const std::vector<std::pair<std::string, std::string>> controls = {
      {"\x1b[2J", "\\x1b[2J"},     {"\xc2\x85", "\\u0085"},
      {"\xc2\x9b", "\\u009b"},     {"\xe2\x80\xa8", "\\u2028"},
      {"\xe2\x80\xa9", "\\u2029"}, {"\xe2\x80\xae", "\\u202e"},
      {"\xe2\x80\xaa", "\\u202a"}, {"\xe2\x81\xa6", "\\u2066"},
      {"\xe2\x81\xa9", "\\u2069"}, {"\xe2\x80\x8f", "\\u200f"},
      {"\xd8\x9c", "\\u061c"},     {"\x7f", "\\x7f"}};
  for (const auto& [raw, shown] : controls) {
    SCOPED_TRACE(shown);
    std::ofstream(dir_ / "specs" / "operators.yaml", std::ios::trunc)
        << "operators:\n  - {op: relu, kind: \"a" << raw << "b\"}\n";
    Result r = run("validate --specs specs");
    EXPECT_EQ(r.code, 3) << r.err;
    EXPECT_NE(r.err.find("'a" + shown + "b'"), std::string::npos) << r.err;
    EXPECT_EQ(r.err.find(raw), std::string::npos) << r.err;
  }
  // Text that is not a control passes as it is.
  std::ofstream(dir_ / "specs" / "operators.yaml", std::ios::trunc)
      << "operators:\n  - {op: relu, kind: \"\xc3\xa9t\xc3\xa9\"}\n";
  Result r = run("validate --specs specs");
  EXPECT_NE(r.err.find("'\xc3\xa9t\xc3\xa9'"), std::string::npos) << r.err;
}

// The temporary files of the journal's paths are cleaned only inside the
// tree: a directory link on the way that leads outside is refused first.
TEST_F(CliHardening, JournalCleanUpStaysInsideTheTree) {
  ASSERT_EQ(run("generate --specs specs --out out").code, 0);
  fs::create_directories(dir_ / "elsewhere");
  std::ofstream(dir_ / "elsewhere" / "x.accgen-tmp") << "keep me\n";
  fs::create_directory_symlink(dir_ / "elsewhere", dir_ / "out" / "link");
  std::ofstream(dir_ / "out" / "accgen-manifest.json.pending")
      << R"({"files": {"link/x": ["0"]}, "created": []})";
  Result r = run("generate --specs specs --out out");
  EXPECT_EQ(r.code, 4) << r.err;
  EXPECT_NE(r.err.find("out/link: error: is a symbolic link that leads "
                       "outside the output directory"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(slurp(dir_ / "elsewhere" / "x.accgen-tmp"), "keep me\n");
}

TEST_F(CliHardening, DanglingLinkInTheTreeWritesNothingOutside) {
  fs::create_directories(dir_ / "out");
  fs::create_directory_symlink(dir_ / "elsewhere", dir_ / "out" / "csrc");
  Result r = run("generate --specs specs --out out");
  EXPECT_EQ(r.code, 4) << r.err;
  EXPECT_NE(r.err.find("out/csrc: error: is a symbolic link to nothing; not "
                       "followed"),
            std::string::npos)
      << r.err;
  EXPECT_FALSE(fs::exists(dir_ / "elsewhere"));
  // A link to a directory outside: refused as well.
  fs::create_directories(dir_ / "elsewhere");
  r = run("generate --specs specs --out out");
  EXPECT_EQ(r.code, 4) << r.err;
  EXPECT_TRUE(fs::is_empty(dir_ / "elsewhere"));
}

TEST_F(CliHardening, DanglingLinkAtAGeneratedPathIsReplacedNotFollowed) {
  ASSERT_EQ(run("generate --specs specs --out ref").code, 0);
  fs::create_directories(dir_ / "out");
  fs::create_symlink(dir_ / "outside.txt", dir_ / "out" / "CMakeLists.txt");
  Result r = run("generate --specs specs --out out");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_FALSE(fs::exists(dir_ / "outside.txt"));
  EXPECT_EQ(contents(dir_ / "out"), contents(dir_ / "ref"));
}

// Tampered trees: each round starts from a good tree and applies one to
// three of the mutations the hardening rounds found harmful (a huge stray
// file beside the specs or at a generated path, an invalid UTF-8 byte in a
// spec, a forged or truncated manifest or journal, links inside the tree, a
// hand edit), then runs generate under a 2 GiB address-space limit. Nothing
// outside the output tree, no spec, no user kernel, no user file and
// nothing in .git may change; the exit code is a documented one; a run that
// succeeds leaves exactly the reference tree and `--check` agrees; where
// only the specs were touched, validate says what generate says.
TEST_F(CliHardening, TamperedTreesLoseNothing) {
  ASSERT_EQ(run("generate --specs specs --out ref").code, 0);
  const auto reference = contents(dir_ / "ref");
  fs::copy(dir_ / "specs", dir_ / "specs0", fs::copy_options::recursive);
  constexpr std::uintmax_t kHuge = std::uintmax_t{3} << 30;  // sparse
  // Bytes of small files, sizes of huge ones.
  auto state = [](const fs::path& dir) {
    std::map<std::string, std::string> files;
    if (!fs::exists(dir)) return files;
    for (const auto& e : fs::recursive_directory_iterator(dir)) {
      if (!e.is_regular_file()) continue;
      const std::string rel = fs::relative(e.path(), dir).string();
      files[rel] = e.file_size() > (std::uintmax_t{64} << 20)
                       ? "size " + std::to_string(e.file_size())
                       : slurp(e.path());
    }
    return files;
  };
  const std::vector<std::string> pool = {"../victim/a",
                                         (dir_ / "victim" / "a").string(),
                                         "link/a",
                                         "link/x",
                                         "specs-link/autocast.yaml",
                                         "kernels/relu.cpp",
                                         ".git/config",
                                         "CMakeLists.txt",
                                         "tuning.cpp",
                                         "csrc/Backend.h"};
  std::vector<std::string> generated;
  for (const auto& [path, bytes] : reference) {
    if (path.rfind("kernels/", 0) != 0 && path != "tuning.cpp" &&
        path != "accgen-manifest.json") {
      generated.push_back(path);
    }
  }
  const fs::path out = dir_ / "out";
  std::mt19937 rng(20261127);
  auto pick = [&rng](std::size_t n) { return std::size_t(rng() % n); };
  // Mutations that write a file of the tree leave alone what an earlier
  // mutation made a directory, a FIFO or huge.
  auto plain = [](const fs::path& f) {
    const auto status = fs::symlink_status(f);
    return !fs::exists(status) ||
           (fs::is_regular_file(status) &&
            fs::file_size(f) < (std::uintmax_t{64} << 20));
  };
  std::map<int, int> codes;
  for (int round = 0; round < 128; ++round) {
    for (const char* d : {"out", "specs", "victim"})
      fs::remove_all(dir_ / d);
    fs::copy(dir_ / "specs0", dir_ / "specs", fs::copy_options::recursive);
    fs::copy(dir_ / "ref", out, fs::copy_options::recursive);
    fs::create_directories(dir_ / "victim");
    std::ofstream(dir_ / "victim" / "a") << "keep me\n";
    std::ofstream(dir_ / "victim" / "x.accgen-tmp") << "keep me too\n";
    fs::create_directories(out / ".git");
    std::ofstream(out / ".git" / "config") << "[core]\n";
    bool tree_touched = false;
    std::string what;
    const std::size_t n = 1 + pick(3);
    for (std::size_t m = 0; m < n; ++m) {
      const std::size_t kind = pick(13);
      const std::string entry = pool[pick(pool.size())];
      what += " " + std::to_string(kind) + ":" + entry;
      tree_touched |= kind != 0 && kind != 2;
      switch (kind) {
        case 0: {  // a huge stray file beside the specs
          std::ofstream(dir_ / "specs" / "stray.bin") << "x";
          fs::resize_file(dir_ / "specs" / "stray.bin", kHuge);
          break;
        }
        case 1: {  // a huge file at a generated path
          const fs::path f = out / generated[pick(generated.size())];
          if (plain(f)) fs::resize_file(f, kHuge);
          break;
        }
        case 2: {  // an invalid UTF-8 byte in a spec
          const fs::path f =
              dir_ / "specs" / (pick(2) ? "autocast.yaml" : "operators.yaml");
          std::string text = slurp(f);
          text.insert(pick(text.size()), pick(2) ? "\xff" : "\xc0\x80");
          std::ofstream(f, std::ios::trunc | std::ios::binary) << text;
          break;
        }
        case 3: {  // a forged journal entry
          if (!plain(out / "accgen-manifest.json.pending")) break;
          nlohmann::json j = {
              {"files", {{entry, {"0"}}}},
              {"created", pick(2) ? nlohmann::json::array({entry})
                                  : nlohmann::json::array()}};
          std::ofstream(out / "accgen-manifest.json.pending", std::ios::trunc)
              << j.dump();
          break;
        }
        case 4: {  // a forged manifest entry
          if (!plain(out / "accgen-manifest.json")) break;
          auto j = nlohmann::json::parse(slurp(out / "accgen-manifest.json"),
                                         nullptr, false);
          if (j.is_object() && j.contains("files")) {
            j["files"][entry] = {{"hash", "0"}};
            std::ofstream(out / "accgen-manifest.json", std::ios::trunc)
                << j.dump(2);
          }
          break;
        }
        case 5:  // a link in the tree to a directory outside it
          if (!fs::exists(fs::symlink_status(out / "link"))) {
            fs::create_directory_symlink(dir_ / "victim", out / "link");
          }
          break;
        case 6:  // a link in the tree to the specs
          if (!fs::exists(fs::symlink_status(out / "specs-link"))) {
            fs::create_directory_symlink(dir_ / "specs", out / "specs-link");
          }
          break;
        case 7: {  // a manifest cut short
          const fs::path f = out / "accgen-manifest.json";
          if (plain(f)) {
            std::string text = slurp(f);
            std::ofstream(f, std::ios::trunc)
                << text.substr(0, pick(text.size()));
          }
          break;
        }
        case 9: {  // a huge manifest or user kernel
          const fs::path f =
              out / (pick(2) ? "accgen-manifest.json" : "kernels/relu.cpp");
          if (plain(f)) fs::resize_file(f, kHuge);
          break;
        }
        case 10: {  // a directory where a generated file goes
          const fs::path f = out / generated[pick(generated.size())];
          if (!plain(f)) break;
          fs::remove(f);
          fs::create_directories(f / "x");
          break;
        }
        case 11: {  // a FIFO as a user file or as the journal
          const fs::path f =
              out / (pick(2) ? "tuning.cpp" : "accgen-manifest.json.pending");
          if (!plain(f)) break;
          fs::remove(f);
          ::mkfifo(f.c_str(), 0644);
          break;
        }
        case 12: {  // a journal of garbage
          if (!plain(out / "accgen-manifest.json.pending")) break;
          std::string bytes;
          for (std::size_t k = 1 + pick(64); k > 0; --k)
            bytes += static_cast<char>(rng());
          std::ofstream(out / "accgen-manifest.json.pending",
                        std::ios::trunc | std::ios::binary)
              << bytes;
          break;
        }
        default: {  // a hand edit
          const fs::path f = out / generated[pick(generated.size())];
          if (plain(f)) {
            std::ofstream(f, std::ios::app) << "// mine\n";
          }
          break;
        }
      }
    }
    const bool force = pick(2) != 0;
    const auto specs_before = state(dir_ / "specs");
    const auto out_before = state(out);
    const std::string limit = "ulimit -v 2097152;";
    Result r = accgen(std::string("generate --specs specs --out out") +
                          (force ? " --force" : ""),
                      dir_, limit + " timeout 60");
    ++codes[r.code];
    SCOPED_TRACE("round " + std::to_string(round) + ", mutations" + what +
                 (force ? ", --force" : "") + ": " + r.err);
    EXPECT_TRUE(r.code == 0 || r.code == 3 || r.code == 4 || r.code == 6)
        << r.code;
    // A run that fails leaves the tree as it found it, and no run leaves a
    // temporary file.
    if (r.code != 0) EXPECT_EQ(state(out), out_before);
    for (const auto& e : fs::recursive_directory_iterator(out)) {
      EXPECT_FALSE(e.path().string().ends_with(".accgen-tmp")) << e.path();
    }
    EXPECT_EQ(slurp(dir_ / "victim" / "a"), "keep me\n");
    EXPECT_EQ(slurp(dir_ / "victim" / "x.accgen-tmp"), "keep me too\n");
    EXPECT_EQ(state(dir_ / "specs"), specs_before);
    EXPECT_EQ(slurp(out / ".git" / "config"), "[core]\n");
    // The user's files are as they were: their bytes (sizes when huge),
    // and a FIFO is still a FIFO.
    const auto out_after = state(out);
    for (const auto& [path, bytes] : reference) {
      if (path.rfind("kernels/", 0) == 0 || path == "tuning.cpp") {
        const auto was = out_before.find(path), is = out_after.find(path);
        ASSERT_EQ(was == out_before.end(), is == out_after.end()) << path;
        if (was != out_before.end()) {
          EXPECT_EQ(is->second, was->second) << path;
        } else {
          EXPECT_TRUE(fs::is_fifo(fs::symlink_status(out / path))) << path;
        }
      }
    }
    if (r.code == 0) {
      // The manifest's files as the reference's (its inputs record a stray
      // file beside the specs).
      auto files = [](const std::string& text) {
        auto j = nlohmann::json::parse(text, nullptr, false);
        return j.is_object()
                   ? j.value("files", nlohmann::json()).dump() +
                         j.value("user_files", nlohmann::json()).dump()
                   : std::string();
      };
      const auto after = state(out);
      for (const auto& [path, bytes] : reference) {
        const auto it = after.find(path);
        ASSERT_TRUE(it != after.end()) << path;
        if (path == "accgen-manifest.json") {
          EXPECT_EQ(files(it->second), files(bytes));
        } else {
          EXPECT_EQ(it->second, bytes) << path;
        }
      }
      EXPECT_FALSE(fs::exists(out / "accgen-manifest.json.pending"));
      EXPECT_EQ(accgen("generate --specs specs --out out --check", dir_,
                       limit + " timeout 60")
                    .code,
                0);
    }
    if (!tree_touched) {
      EXPECT_EQ(
          accgen("validate --specs specs", dir_, limit + " timeout 60").code,
          r.code);
    }
  }
  std::printf("tampered trees: %d exit 0, %d exit 3, %d exit 4, %d exit 6\n",
              codes[0], codes[3], codes[4], codes[6]);
  // The mix reached every outcome.
  EXPECT_GT(codes[0], 0);
  EXPECT_GT(codes[3], 0);
  EXPECT_GT(codes[4], 0);
}

// Kills generate (SIGKILL) at many moments of a run, then checks that the
// next run needs no --force and leaves exactly the tree of an uninterrupted
// run, without temporary, journal or empty files.
TEST_F(CliHardening, InterruptedGeneratesRecover) {
  ASSERT_EQ(run("generate --specs specs --out ref").code, 0);
  const auto reference = contents(dir_ / "ref");
  const std::string lock = slurp(dir_ / "specs" / "accgen.lock");
  for (int i = 0; i < 24; ++i) {
    fs::remove_all(dir_ / "out");
    if (i % 2) fs::remove(dir_ / "specs" / "accgen.lock");
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      ::chdir(dir_.c_str());
      const int null = ::open("/dev/null", O_WRONLY);
      ::dup2(null, 1);
      ::dup2(null, 2);
      ::execl(ACCGEN_BINARY, ACCGEN_BINARY, "generate", "--specs", "specs",
              "--out", "out", static_cast<char*>(nullptr));
      ::_exit(127);
    }
    std::this_thread::sleep_for(std::chrono::microseconds(1500 * i));
    ::kill(pid, SIGKILL);
    int status = 0;
    ::waitpid(pid, &status, 0);
    Result r = run("generate --specs specs --out out");
    ASSERT_EQ(r.code, 0) << "killed after " << 1.5 * i << " ms: " << r.err;
    EXPECT_EQ(contents(dir_ / "out"), reference) << "killed after " << 1.5 * i;
    EXPECT_EQ(slurp(dir_ / "specs" / "accgen.lock"), lock);
    EXPECT_FALSE(fs::exists(dir_ / "specs" / "accgen.lock.tmp"));
    Result again = run("generate --specs specs --out out");
    EXPECT_EQ(again.code, 0);
    EXPECT_EQ(contents(dir_ / "out"), reference);
  }
}

}  // namespace
