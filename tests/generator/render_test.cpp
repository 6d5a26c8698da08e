// Unit tests of the strict mustache renderer.
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "generator/render/renderer.h"
#include "generator/support/diagnostics.h"

namespace accgen::render {
namespace {

namespace fs = std::filesystem;

class RenderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() /
            ("accgen_render_" + std::to_string(::getpid()) + "_" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(root_ / "partials");
    std::ofstream(root_ / "partials" / "banner.mustache")
        << "// from {{source}}\n";
  }
  void TearDown() override { fs::remove_all(root_); }
  fs::path root_;
};

TEST_F(RenderTest, FillsVariablesSectionsAndLists) {
  TemplateSet set(root_.string());
  nlohmann::json data = {{"name", "accel"},
                         {"on", true},
                         {"off", false},
                         {"count", 3},
                         {"ops", {{{"op", "add"}}, {{"op", "mul"}}}}};
  EXPECT_EQ(set.renderText("{{name}}:{{count}}{{#on}}+{{/on}}{{^off}}-{{/off}}"
                           "{{#ops}} {{op}}{{/ops}}",
                           data),
            "accel:3+- add mul");
}

TEST_F(RenderTest, DoesNotEscapeHtml) {
  TemplateSet set(root_.string());
  EXPECT_EQ(set.renderText("{{t}}", {{"t", "const at::Tensor& a<b>"}}),
            "const at::Tensor& a<b>");
}

TEST_F(RenderTest, MissingVariableIsAnErrorNamingIt) {
  TemplateSet set(root_.string());
  try {
    set.renderText("{{device}} {{namespace}}", {{"device", "x"}}, "t.cpp");
    FAIL() << "expected an error";
  } catch (const AccgenError& e) {
    EXPECT_EQ(e.code(), ExitCode::kInternal);
    EXPECT_NE(std::string(e.what()).find("'namespace'"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("t.cpp"), std::string::npos);
  }
}

TEST_F(RenderTest, MissingSectionFlagIsAnError) {
  TemplateSet set(root_.string());
  EXPECT_THROW(set.renderText("{{#feature}}x{{/feature}}", {}), AccgenError);
  EXPECT_THROW(set.renderText("{{^feature}}x{{/feature}}", {}), AccgenError);
}

TEST_F(RenderTest, PartialsSeeTheCallersData) {
  TemplateSet set(root_.string());
  EXPECT_EQ(set.renderText("{{> banner}}code\n", {{"source", "specs/b.yaml"}}),
            "// from specs/b.yaml\ncode\n");
}

TEST_F(RenderTest, TemplatesLoadFromTheRootAndSyntaxErrorsAreReported) {
  std::ofstream(root_ / "good.mustache") << "{{#xs}}[{{.}}]{{/xs}}\n";
  std::ofstream(root_ / "bad.mustache") << "{{#open}} never closed\n";
  TemplateSet set(root_.string());
  EXPECT_EQ(set.render("good.mustache", {{"xs", {1, 2}}}), "[1][2]\n");
  EXPECT_THROW(set.render("bad.mustache", {{"open", true}}), AccgenError);
  EXPECT_THROW(set.render("absent.mustache", {}), AccgenError);
}

TEST_F(RenderTest, StandaloneSectionLinesLeaveNoBlankLines) {
  TemplateSet set(root_.string());
  EXPECT_EQ(
      set.renderText("a\n{{#xs}}\n- {{.}}\n{{/xs}}\nb\n", {{"xs", {"1", "2"}}}),
      "a\n- 1\n- 2\nb\n");
}

}  // namespace
}  // namespace accgen::render
