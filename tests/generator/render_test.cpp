// Unit tests of the strict mustache renderer.
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>
#include <kainjow/mustache.hpp>

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

// kainjow's own rendering of `data` converted to its data type: what the
// renderer must produce (Note [Rendering from JSON] in renderer.cpp).
namespace mst = kainjow::mustache;

mst::data kainjowData(const nlohmann::json& j) {
  switch (j.type()) {
    case nlohmann::json::value_t::object: {
      mst::data d{mst::data::type::object};
      for (const auto& [key, value] : j.items())
        d.set(key, kainjowData(value));
      return d;
    }
    case nlohmann::json::value_t::array: {
      mst::data d{mst::data::type::list};
      for (const auto& value : j)
        d.push_back(kainjowData(value));
      return d;
    }
    case nlohmann::json::value_t::string:
      return mst::data{j.get<std::string>()};
    case nlohmann::json::value_t::boolean:
      return mst::data{j.get<bool>()};
    case nlohmann::json::value_t::null:
      return mst::data{false};
    default:
      return mst::data{j.dump()};
  }
}

std::string kainjowRender(const std::string& text, const nlohmann::json& data,
                          const std::string& banner) {
  mst::mustache tmpl(text);
  tmpl.set_custom_escape([](const std::string& s) { return s; });
  mst::data d = kainjowData(data);
  d.set("banner", mst::data{banner});
  return tmpl.render(d);
}

TEST_F(RenderTest, RendersAsKainjowDoes) {
  const nlohmann::json data = {
      {"name", "accel"},
      {"empty", ""},
      {"yes", true},
      {"no", false},
      {"nothing", nullptr},
      {"count", 3},
      {"ratio", 0.5},
      {"none", nlohmann::json::array()},
      {"xs", {"a", "b"}},
      {"ops",
       {{{"op", "add"}, {"inplace", false}},
        {{"op", "mul"}, {"inplace", true}}}},
      {"features", {{"pinned", true}, {"depth", {{"name", "deep"}}}}},
      {"source", "specs/b.yaml"}};
  const std::vector<std::string> cases = {
      "{{name}} {{{name}}} {{& name}} {{count}} {{ratio}}",
      "{{yes}}|{{no}}|{{nothing}}|{{xs}}|{{features}}|{{empty}}",
      "a\n{{#xs}}\n- {{.}}\n{{/xs}}\nb\n",
      "a\n{{#none}}\n- {{.}}\n{{/none}}\nb\n",
      "a\n{{^none}}\nnone\n{{/none}}\n{{^xs}}\nsome\n{{/xs}}\nb\n",
      "  {{#yes}}  \n  x\n  {{/yes}}  \nend",
      "{{#ops}}{{op}}{{#inplace}}_{{/inplace}}{{^inplace}}.{{name}}{{/inplace}}"
      "\n{{/ops}}",
      "{{#features.pinned}}pinned {{features.depth.name}}{{/features.pinned}}",
      "{{#features}}{{pinned}} {{depth.name}} {{name}}{{/features}}",
      "{{#count}}<{{.}}>{{/count}}{{#name}}[{{.}}]{{/name}}",
      "{{^no}}<{{.}}>{{/no}}{{^nothing}}({{.}}){{/nothing}}",
      "{{! a comment }}\n{{#yes}}{{! inside }}\n{{/yes}}\nx\n",
      "{{=<% %>=}}<% name %> {{name}}\n<%#xs%>\n<%.%>\n<%/xs%>\n",
      "{{> banner}}code\n{{#xs}}\n{{> banner}}\n{{/xs}}\n",
      "{{#empty}}\n[{{.}}]\n{{/empty}}\n\r\nx\r\n{{#yes}}\r\n\ty\r\n{{/"
      "yes}}\r\n",
      "{{#xs}}{{#ops}}{{op}}{{.}}{{/ops}}{{/xs}}\n",
      "{{ name }}|{{#  xs  }}{{ . }}{{/xs}}|{{& name }}|{{{ name }}}",
      "a { b } {{name}}{ }{{{name}}}}{{! x }} }}\n{",
      "{{#yes}}\n  {{! only a comment }}\n{{/yes}}\n",
      "{{=<% %>=}}<%={{ }}=%>{{name}}{{={| |}=}}{|name|}{{name}}",
      "{{features.depth.}}|{{features.depth.name.}}",
      "\n\n{{#xs}}{{/xs}}\n  {{^xs}}{{/xs}}  \n\r\r\n",
      "{{name}}",
  };
  const std::string banner = "// from {{source}}{{#yes}}\n{{/yes}}";
  std::ofstream(root_ / "partials" / "banner.mustache") << banner;
  TemplateSet set(root_.string());
  for (const auto& text : cases) {
    EXPECT_EQ(set.renderText(text, data), kainjowRender(text, data, banner))
        << text;
  }
}

TEST_F(RenderTest, SyntaxErrorsAreKainjows) {
  TemplateSet set(root_.string());
  for (const std::string text :
       {"x{{", "{{#a}}", "{{/a}}", "{{#a}}{{/b}}", "{{#a}}{{#b}}{{/a}}",
        "{{= x =}}", "{{=<% %>=}}<%name", "{{{name}}", "a{{#b}}{{/b}}{{^c}}"}) {
    mst::mustache reference(text);
    ASSERT_FALSE(reference.is_valid()) << text;
    try {
      set.renderText(text, {{"name", "n"}, {"a", true}, {"b", true}}, "t");
      ADD_FAILURE() << "expected an error for " << text;
    } catch (const AccgenError& e) {
      EXPECT_EQ(std::string(e.what()),
                "template 't': " + reference.error_message())
          << text;
    }
  }
}

TEST_F(RenderTest, GlobalsLieBeneathTheData) {
  TemplateSet set(root_.string());
  set.setGlobals({{"device", "accel"}, {"name", "global"}});
  EXPECT_EQ(set.renderText("{{device}} {{name}}", {{"name", "local"}}),
            "accel local");
}

TEST_F(RenderTest, MissingNamesAreListedOnceInOrder) {
  TemplateSet set(root_.string());
  try {
    set.renderText("{{b}}{{#a}}{{/a}}{{b}}{{^c.d}}{{/c.d}}", {});
    FAIL() << "expected an error";
  } catch (const AccgenError& e) {
    EXPECT_NE(std::string(e.what()).find("undefined variable 'b', 'a', 'c.d'"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace accgen::render
