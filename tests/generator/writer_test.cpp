// Unit tests of the writer: only changed files are written, hand edits are
// refused unless forced, stale files are removed, user files are kept.
#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include <gtest/gtest.h>

#include "generator/support/diagnostics.h"
#include "generator/write/writer.h"
#include "tests/generator/test_support.h"

namespace accgen::write {
namespace {

namespace fs = std::filesystem;

class WriterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    out_ = fs::temp_directory_path() /
           ("accgen_writer_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(out_);
  }
  void TearDown() override { fs::remove_all(out_); }
  fs::path out_;
  std::vector<RenderedFile> files_ = {
      {"a.cpp", "int a;\n", false},
      {"sub/b.h", "#pragma once\n", false},
      {"kernels/k.cpp", "// yours\n", true},
  };
};

TEST_F(WriterTest, FirstRunWritesEverythingSecondRunNothing) {
  auto first = writeTree(out_.string(), files_, {});
  EXPECT_EQ(first.written.size(), 2u);
  EXPECT_EQ(first.created_user.size(), 1u);
  EXPECT_EQ(slurp(out_ / "sub/b.h"), "#pragma once\n");
  EXPECT_TRUE(fs::exists(out_ / kManifestName));

  auto mtime = fs::last_write_time(out_ / "a.cpp");
  auto manifest_mtime = fs::last_write_time(out_ / kManifestName);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  auto second = writeTree(out_.string(), files_, {});
  EXPECT_TRUE(second.written.empty());
  EXPECT_EQ(second.unchanged.size(), 2u);
  EXPECT_EQ(second.kept_user.size(), 1u);
  EXPECT_EQ(fs::last_write_time(out_ / "a.cpp"), mtime);
  EXPECT_EQ(fs::last_write_time(out_ / kManifestName), manifest_mtime);
  EXPECT_EQ(second.summary(), "0 written, 2 unchanged, 0 removed");
}

TEST_F(WriterTest, ChangedGeneratedFileIsRewritten) {
  writeTree(out_.string(), files_, {});
  files_[0].content = "int a = 1;\n";
  auto report = writeTree(out_.string(), files_, {});
  ASSERT_EQ(report.written, std::vector<std::string>{"a.cpp"});
  EXPECT_EQ(slurp(out_ / "a.cpp"), "int a = 1;\n");
}

TEST_F(WriterTest, ChangedFileIsReplacedWithoutTemporaryLeftovers) {
  writeTree(out_.string(), files_, {});
  files_[1].content = "#pragma once\nint b;\n";
  writeTree(out_.string(), files_, {});
  EXPECT_EQ(slurp(out_ / "sub/b.h"), "#pragma once\nint b;\n");
  for (const auto& e : fs::recursive_directory_iterator(out_)) {
    EXPECT_EQ(e.path().string().find(".accgen-tmp"), std::string::npos)
        << e.path();
  }
}

TEST_F(WriterTest, NewFileThatCannotBeWrittenIsAnError) {
  // Note [A run's writes are one transaction]: a directory where a new file
  // goes refuses the run before its first write; the error names it.
  fs::create_directories(out_ / "sub" / "b.h");
  try {
    writeTree(out_.string(), files_, {});
    FAIL() << "expected an error";
  } catch (const AccgenError& e) {
    EXPECT_NE(std::string(e.what()).find("sub/b.h"), std::string::npos)
        << e.what();
  }
  EXPECT_FALSE(fs::exists(out_ / kManifestName));
}

TEST_F(WriterTest, UserFilesAreNeverOverwritten) {
  writeTree(out_.string(), files_, {});
  std::ofstream(out_ / "kernels/k.cpp") << "// my kernel\n";
  files_[2].content = "// new starter\n";
  auto report = writeTree(out_.string(), files_, {.force = true});
  EXPECT_EQ(slurp(out_ / "kernels/k.cpp"), "// my kernel\n");
  EXPECT_EQ(report.kept_user, std::vector<std::string>{"kernels/k.cpp"});
}

TEST_F(WriterTest, HandEditedFileIsRefusedAndNothingIsWritten) {
  writeTree(out_.string(), files_, {});
  std::ofstream(out_ / "a.cpp") << "int a; // edited\n";
  files_[1].content = "#pragma once\n// changed\n";
  auto report = writeTree(out_.string(), files_, {});
  EXPECT_TRUE(report.refused());
  EXPECT_EQ(report.edited, std::vector<std::string>{"a.cpp"});
  EXPECT_EQ(slurp(out_ / "a.cpp"), "int a; // edited\n");
  EXPECT_EQ(slurp(out_ / "sub/b.h"), "#pragma once\n");  // untouched too

  auto forced = writeTree(out_.string(), files_, {.force = true});
  EXPECT_FALSE(forced.refused());
  EXPECT_EQ(slurp(out_ / "a.cpp"), "int a;\n");
  EXPECT_EQ(slurp(out_ / "sub/b.h"), "#pragma once\n// changed\n");
}

TEST_F(WriterTest, ForeignFileInTheWayIsRefused) {
  fs::create_directories(out_);
  std::ofstream(out_ / "a.cpp") << "not ours\n";
  auto report = writeTree(out_.string(), files_, {});
  EXPECT_EQ(report.edited, std::vector<std::string>{"a.cpp"});
  EXPECT_FALSE(fs::exists(out_ / kManifestName));
}

TEST_F(WriterTest, StaleFilesAreRemovedAndEmptyDirsPruned) {
  writeTree(out_.string(), files_, {});
  files_.erase(files_.begin() + 1);  // sub/b.h no longer produced
  auto report = writeTree(out_.string(), files_, {});
  EXPECT_EQ(report.removed, std::vector<std::string>{"sub/b.h"});
  EXPECT_FALSE(fs::exists(out_ / "sub"));
}

TEST_F(WriterTest, EditedStaleFileIsRefused) {
  writeTree(out_.string(), files_, {});
  std::ofstream(out_ / "sub/b.h") << "// kept by hand\n";
  files_.erase(files_.begin() + 1);
  auto report = writeTree(out_.string(), files_, {});
  EXPECT_EQ(report.edited, std::vector<std::string>{"sub/b.h"});
  EXPECT_TRUE(fs::exists(out_ / "sub/b.h"));
}

TEST_F(WriterTest, CheckReportsDiffsWithoutWriting) {
  EXPECT_FALSE(checkTree(out_.string(), files_, {}).empty());
  EXPECT_FALSE(fs::exists(out_));
  writeTree(out_.string(), files_, {});
  EXPECT_TRUE(checkTree(out_.string(), files_, {}).empty());
  std::ofstream(out_ / "a.cpp") << "int b;\n";
  auto diffs = checkTree(out_.string(), files_, {});
  ASSERT_EQ(diffs.size(), 1u);
  EXPECT_NE(diffs[0].find("--- a/a.cpp"), std::string::npos);
  EXPECT_NE(diffs[0].find("-int b;"), std::string::npos);
  EXPECT_NE(diffs[0].find("+int a;"), std::string::npos);
}

TEST_F(WriterTest, ManifestRecordsHashesAndExtras) {
  writeTree(out_.string(), files_, {.manifest_extra = {{"torch", "2.13.0"}}});
  auto j = nlohmann::json::parse(slurp(out_ / kManifestName));
  EXPECT_EQ(j["torch"], "2.13.0");
  EXPECT_EQ(j["files"]["a.cpp"]["hash"], contentHash("int a;\n"));
  EXPECT_EQ(j["user_files"][0], "kernels/k.cpp");
  EXPECT_NE(contentHash("a"), contentHash("b"));
}

TEST(UnifiedDiff, ShowsHunksWithContext) {
  std::string d = unifiedDiff("1\n2\n3\n4\n5\n6\n7\n8\n",
                              "1\n2\n3\n4\nX\n6\n7\n8\n", "a/f", "b/f");
  EXPECT_NE(d.find("--- a/f\n+++ b/f\n@@ -2,7 +2,7 @@"), std::string::npos)
      << d;
  EXPECT_NE(d.find("-5\n+X\n"), std::string::npos) << d;
  EXPECT_EQ(unifiedDiff("same\n", "same\n", "a", "b"), "");
}

}  // namespace
}  // namespace accgen::write
