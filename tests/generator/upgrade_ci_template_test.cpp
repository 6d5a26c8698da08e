// The CI workflow `accgen init` writes (templates/init/ci/): it renders
// with the init variables alone, is valid YAML with GitHub Actions'
// expressions intact, and runs the commands the project needs in order.
#include <filesystem>

#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>
#include <nlohmann/json.hpp>

#include "generator/render/renderer.h"

namespace accgen {
namespace {

namespace fs = std::filesystem;

std::string renderWorkflow() {
  render::TemplateSet templates(
      (fs::path(ACCGEN_SOURCE_DIR) / "templates").string());
  nlohmann::json data = {{"device", "ember"},
                         {"package", "torch_ember"},
                         {"namespace", "ember"},
                         {"torch_version", "2.13.0"},
                         {"accgen_version", "0.1.0"}};
  return templates.render("init/ci/github-workflow.yml.mustache", data);
}

TEST(CiWorkflowTemplate, RendersToValidYamlNamingTheRightCommands) {
  const std::string text = renderWorkflow();
  YAML::Node doc = YAML::Load(text);
  EXPECT_EQ(doc["name"].as<std::string>(), "ember");
  // `on:` is a map with push and pull_request triggers.
  ASSERT_TRUE(doc["on"].IsMap());
  EXPECT_TRUE(doc["on"]["push"]);
  EXPECT_TRUE(doc["on"]["pull_request"]);
  EXPECT_EQ(doc["env"]["TORCH_VERSION"].as<std::string>(), "2.13.0");
  // GitHub's own ${{ }} expressions pass through the mustache renderer.
  EXPECT_EQ(doc["env"]["ACCGEN_INDEX_URL"].as<std::string>(),
            "${{ vars.ACCGEN_INDEX_URL }}");
  EXPECT_EQ(doc["env"]["ACCGEN_VERSION"].as<std::string>(), "0.1.0");

  const YAML::Node steps = doc["jobs"]["backend"]["steps"];
  ASSERT_TRUE(steps.IsSequence());
  std::string runs;  // every `run:` in order
  std::vector<std::string> uses;
  for (const auto& step : steps) {
    ASSERT_TRUE(step["name"]) << "every step is named";
    if (step["run"]) runs += step["run"].as<std::string>() + "\n";
    if (step["uses"]) uses.push_back(step["uses"].as<std::string>());
  }
  EXPECT_EQ(uses, (std::vector<std::string>{"actions/checkout@v4",
                                            "actions/setup-python@v5",
                                            "actions/upload-artifact@v4"}));
  auto at = [&](const std::string& needle) {
    auto pos = runs.find(needle);
    EXPECT_NE(pos, std::string::npos) << needle << " not in:\n" << runs;
    return pos;
  };
  const auto torch = at("pip install \"torch==${TORCH_VERSION}\"");
  const auto build_accgen =
      at("python -m pip install \"accgen==${ACCGEN_VERSION}\"");
  const auto check = at("accgen generate --check");
  const auto build = at("python -m pip install --no-build-isolation");
  const auto tests = at("python -m pytest tests/");
  const auto report =
      at("python -m torch_ember.report --baseline tests/report-baseline.json");
  EXPECT_LT(torch, build_accgen);
  EXPECT_LT(build_accgen, check);
  EXPECT_LT(check, build);
  EXPECT_LT(build, tests);
  EXPECT_LT(tests, report);
  // accgen comes as its wheel: nothing of it is built, no prefix is named.
  EXPECT_EQ(runs.find("cmake --install"), std::string::npos) << runs;
  EXPECT_EQ(runs.find("apt-get"), std::string::npos) << runs;
  EXPECT_EQ(runs.find("CMAKE_PREFIX_PATH"), std::string::npos) << runs;
  at("torch.ones(3, device='ember')");
}

TEST(CiWorkflowTemplate, IsByteStableAndClean) {
  const std::string a = renderWorkflow();
  EXPECT_EQ(a, renderWorkflow());
  EXPECT_EQ(a.back(), '\n');
  EXPECT_EQ(a.find("\t"), std::string::npos);
  EXPECT_EQ(a.find(" \n"), std::string::npos) << "trailing spaces";
  EXPECT_EQ(a.find("<%"), std::string::npos);
  EXPECT_EQ(a.rfind("# Continuous integration for the ember backend "
                    "(torch_ember).\n",
                    0),
            0u)
      << a.substr(0, 200);
}

}  // namespace
}  // namespace accgen
