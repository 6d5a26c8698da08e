// Hardening tests: the real accgen binary on hostile inputs and trees.
// Spec files that are FIFOs, devices, link loops or directories, a lock
// that cannot be read, manifest entries outside the output tree, links in
// the tree that lead outside it, and generates killed at many moments
// (Note [Interrupted runs] in generator/write/writer.cpp). Each case checks
// the located message, the documented exit code and what was written.
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

namespace {

namespace fs = std::filesystem;

struct Result {
  int code = -1;
  std::string err;
};

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

/// Runs accgen in `cwd` under a time limit (a hang fails, exit 124).
Result accgen(const std::string& args, const fs::path& cwd) {
  const fs::path err = cwd / ".hardening_stderr";
  std::string cmd = "cd '" + cwd.string() + "' && timeout 60 '" ACCGEN_BINARY
                    "' " + args + " >/dev/null 2>'" + err.string() + "'";
  int status = std::system(cmd.c_str());
  Result r;
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.err = slurp(err);
  fs::remove(err);
  return r;
}

/// Every regular file under `dir` with its bytes.
std::map<std::string, std::string> tree(const fs::path& dir) {
  std::map<std::string, std::string> files;
  if (!fs::exists(dir)) return files;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    if (e.is_regular_file()) {
      files[fs::relative(e.path(), dir).string()] = slurp(e.path());
    }
  }
  return files;
}

class Hardening : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("accgen_hardening_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    fs::copy(fs::path(ACCGEN_SOURCE_DIR) / "specs", dir_ / "specs",
             fs::copy_options::recursive);
  }
  void TearDown() override { fs::remove_all(dir_); }

  /// Replaces spec file `name` with a FIFO, a link, ...
  fs::path spec(const std::string& name) {
    fs::remove(dir_ / "specs" / name);
    return dir_ / "specs" / name;
  }

  fs::path dir_;
};

TEST_F(Hardening, FifoSpecIsAnErrorNotAHang) {
  ASSERT_EQ(::mkfifo(spec("autocast.yaml").c_str(), 0644), 0);
  Result r = accgen("validate --specs specs", dir_);
  EXPECT_EQ(r.code, 3);
  EXPECT_NE(r.err.find("specs/autocast.yaml: error: expected a file, found "
                       "a FIFO"),
            std::string::npos)
      << r.err;
}

TEST_F(Hardening, DeviceSpecIsNotRead) {
  fs::create_symlink("/dev/zero", spec("operators.yaml"));
  Result r = accgen("generate --specs specs --out out", dir_);
  EXPECT_EQ(r.code, 3);
  EXPECT_NE(r.err.find("specs/operators.yaml: error: expected a file, found "
                       "a device"),
            std::string::npos)
      << r.err;
  EXPECT_FALSE(fs::exists(dir_ / "out"));
}

TEST_F(Hardening, SymlinkLoopAndDirectory) {
  fs::create_symlink("backend.yaml", spec("backend.yaml"));
  fs::create_directory(spec("autocast.yaml"));
  Result r = accgen("validate --specs specs", dir_);
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

TEST_F(Hardening, LockThatIsAFifoOrADirectory) {
  ASSERT_EQ(::mkfifo(spec("accgen.lock").c_str(), 0644), 0);
  Result v = accgen("validate --specs specs", dir_);
  EXPECT_EQ(v.code, 3);
  EXPECT_NE(v.err.find("specs/accgen.lock: error: expected a file, found a "
                       "FIFO"),
            std::string::npos)
      << v.err;
  fs::remove(dir_ / "specs" / "accgen.lock");
  fs::create_directory(dir_ / "specs" / "accgen.lock");
  Result g = accgen("generate --specs specs --out out", dir_);
  EXPECT_EQ(g.code, 3);
  EXPECT_NE(g.err.find("specs/accgen.lock: error: expected a file, found a "
                       "directory"),
            std::string::npos)
      << g.err;
  EXPECT_FALSE(fs::exists(dir_ / "out"));
}

TEST_F(Hardening, ValidateReportsACorruptLockAsGenerateDoes) {
  std::ofstream(dir_ / "specs" / "accgen.lock") << "torch: [\n";
  Result v = accgen("validate --specs specs", dir_);
  Result g = accgen("generate --specs specs --out out", dir_);
  EXPECT_EQ(v.code, 3);
  EXPECT_EQ(g.code, 3);
  EXPECT_NE(v.err.find("specs/accgen.lock:"), std::string::npos) << v.err;
  EXPECT_EQ(v.err, g.err);
}

TEST_F(Hardening, ManifestEntryOutsideTheTreeDeletesNothing) {
  ASSERT_EQ(accgen("generate --specs specs --out out", dir_).code, 0);
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
    const auto before = tree(dir_ / "out");
    Result r = accgen("generate --specs specs --out out --force", dir_);
    EXPECT_EQ(r.code, 3) << r.err;
    EXPECT_NE(r.err.find("out/accgen-manifest.json: error: entry '" + entry +
                         "' is not a path inside the output directory"),
              std::string::npos)
        << r.err;
    EXPECT_EQ(slurp(dir_ / "victim"), "keep me\n");
    EXPECT_EQ(tree(dir_ / "out"), before);
  }
}

TEST_F(Hardening, DanglingLinkInTheTreeWritesNothingOutside) {
  fs::create_directories(dir_ / "out");
  fs::create_directory_symlink(dir_ / "elsewhere", dir_ / "out" / "csrc");
  Result r = accgen("generate --specs specs --out out", dir_);
  EXPECT_EQ(r.code, 4) << r.err;
  EXPECT_NE(r.err.find("out/csrc: error: is a symbolic link to nothing; not "
                       "followed"),
            std::string::npos)
      << r.err;
  EXPECT_FALSE(fs::exists(dir_ / "elsewhere"));
  // A link to a directory outside: refused as well.
  fs::create_directories(dir_ / "elsewhere");
  r = accgen("generate --specs specs --out out", dir_);
  EXPECT_EQ(r.code, 4) << r.err;
  EXPECT_TRUE(fs::is_empty(dir_ / "elsewhere"));
}

TEST_F(Hardening, DanglingLinkAtAGeneratedPathIsReplacedNotFollowed) {
  ASSERT_EQ(accgen("generate --specs specs --out ref", dir_).code, 0);
  fs::create_directories(dir_ / "out");
  fs::create_symlink(dir_ / "outside.txt", dir_ / "out" / "CMakeLists.txt");
  Result r = accgen("generate --specs specs --out out", dir_);
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_FALSE(fs::exists(dir_ / "outside.txt"));
  EXPECT_EQ(tree(dir_ / "out"), tree(dir_ / "ref"));
}

// Kills generate (SIGKILL) at many moments of a run, then checks that the
// next run needs no --force and leaves exactly the tree of an uninterrupted
// run, without temporary, journal or empty files.
TEST_F(Hardening, InterruptedGeneratesRecover) {
  ASSERT_EQ(accgen("generate --specs specs --out ref", dir_).code, 0);
  const auto reference = tree(dir_ / "ref");
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
    Result r = accgen("generate --specs specs --out out", dir_);
    ASSERT_EQ(r.code, 0) << "killed after " << 1.5 * i << " ms: " << r.err;
    EXPECT_EQ(tree(dir_ / "out"), reference) << "killed after " << 1.5 * i;
    EXPECT_EQ(slurp(dir_ / "specs" / "accgen.lock"), lock);
    EXPECT_FALSE(fs::exists(dir_ / "specs" / "accgen.lock.tmp"));
    Result again = accgen("generate --specs specs --out out", dir_);
    EXPECT_EQ(again.code, 0);
    EXPECT_EQ(tree(dir_ / "out"), reference);
  }
}

}  // namespace
