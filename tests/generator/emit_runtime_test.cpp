// The runtime, Python package and build files emitters: which files they
// produce for which backend spec, and that each of their templates renders
// with the global context alone into text that carries the spec's names
// and none of another backend's (the renderer is strict, so a variable the
// context lacks fails here rather than in `accgen generate`).
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "generator/emit/emitter.h"
#include "generator/emit/emitters.h"
#include "generator/model/backend.h"
#include "generator/render/renderer.h"
#include "generator/schema/schema.h"
#include "generator/spec/spec.h"

namespace accgen::emit {
namespace {

namespace fs = std::filesystem;

const char* const kOperators =
    "operators:\n"
    "  - {op: empty.memory_format, kind: builtin}\n"
    "  - {op: empty_strided, kind: builtin}\n"
    "  - {op: as_strided, kind: builtin}\n"
    "  - {op: resize_, kind: builtin}\n"
    "  - {op: _reshape_alias, kind: builtin}\n"
    "  - {op: _copy_from, kind: builtin}\n"
    "  - {op: _copy_from_and_resize, kind: builtin}\n"
    "  - {op: _local_scalar_dense, kind: builtin}\n"
    "  - {op: set_.source_Storage, kind: builtin}\n"
    "  - {op: set_.source_Storage_storage_offset, kind: builtin}\n"
    "  - {op: set_.source_Tensor, kind: builtin}\n"
    "  - {op: set_, kind: builtin}\n"
    "  - {op: view, kind: builtin}\n";

class BackendFiles : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    torch_ = new schema::TorchInstall(schema::findTorch());
    registry_ = new schema::SchemaRegistry(
        schema::SchemaRegistry::load(torch_->native_functions_yaml));
  }
  static void TearDownTestSuite() {
    delete registry_;
    delete torch_;
  }

  static model::Backend backend(const std::string& backend_yaml,
                                const std::string& more_operators = "") {
    DiagnosticEngine diags;
    spec::Specs specs;
    specs.dir = "specs";
    auto b = spec::parseBackendSpec(backend_yaml, "specs/backend.yaml", diags);
    auto o = spec::parseOperatorsSpec(std::string(kOperators) + more_operators,
                                      "specs/operators.yaml", diags);
    std::ostringstream printed;
    diags.print(printed);
    EXPECT_TRUE(b && o) << printed.str();
    specs.backend = *b;
    specs.operators = *o;
    model::BuildOptions options;
    options.dispatch_stubs =
        schema::DispatchStubs{{"abs_stub", "ATen/native/UnaryOps.h"},
                              {"sin_stub", "ATen/native/UnaryOps.h"}};
    auto built = model::buildBackend(specs, *registry_, diags, options);
    diags.print(printed);
    EXPECT_TRUE(built.has_value()) << printed.str();
    return std::move(*built);
  }

  static std::vector<OutputFile> emitted(const model::Backend& b) {
    std::vector<OutputFile> files;
    for (auto fn : {&emitRuntime, &emitPythonPackage, &emitBuildFiles}) {
      for (auto& file : fn(b))
        files.push_back(std::move(file));
    }
    return files;
  }

  // Path -> rendered text, as the pipeline renders: global context,
  // "source", then the file's own data.
  static std::map<std::string, std::string> rendered(const model::Backend& b) {
    render::TemplateSet templates(
        (fs::path(ACCGEN_SOURCE_DIR) / "templates").string());
    const nlohmann::json global = globalContext(b, RunInfo{"2.13.0"});
    std::map<std::string, std::string> out;
    for (const auto& file : emitted(b)) {
      nlohmann::json data = global;
      data["source"] = file.source;
      for (const auto& [key, value] : file.data.items())
        data[key] = value;
      out[file.path] = templates.render(file.template_name, data);
    }
    return out;
  }

  static std::vector<std::string> paths(const model::Backend& b) {
    std::vector<std::string> result;
    for (const auto& file : emitted(b))
      result.push_back(file.path);
    std::sort(result.begin(), result.end());
    return result;
  }

  static schema::TorchInstall* torch_;
  static schema::SchemaRegistry* registry_;
};

schema::TorchInstall* BackendFiles::torch_ = nullptr;
schema::SchemaRegistry* BackendFiles::registry_ = nullptr;

bool contains(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

TEST_F(BackendFiles, TheRuntimeIsALibraryNotGeneratedText) {
  const auto b = backend("device: accel\n");
  const std::vector<std::string> expected = {
      ".gitignore",           "CMakeLists.txt", "csrc/Backend.h",
      "csrc/accgen_config.h", "pyproject.toml", "src/torch_accel/__init__.py",
      "tuning.cpp",
  };
  EXPECT_EQ(paths(b), expected);
  for (const auto& file : emitted(b)) {
    EXPECT_TRUE(fs::exists(fs::path(ACCGEN_SOURCE_DIR) / "templates" /
                           file.template_name))
        << file.template_name;
    // Only the tuning is the vendor's.
    EXPECT_EQ(file.user_owned, file.path == "tuning.cpp") << file.path;
    EXPECT_EQ(file.source, "specs/backend.yaml") << file.path;
  }
  const auto text = rendered(b);
  // The build compiles accgen's runtime in: no runtime source is rendered.
  EXPECT_NE(text.at("CMakeLists.txt").find("accgen_add_backend(accel"),
            std::string::npos);
  EXPECT_NE(
      text.at("src/torch_accel/__init__.py").find("from . import _device"),
      std::string::npos);
}

TEST_F(BackendFiles, FeaturesBecomeConfigurationSwitches) {
  const auto off = rendered(backend(
      "device: accel\nfeatures:\n  pinned_memory: false\n  autocast: false\n"));
  const std::string& config = off.at("csrc/accgen_config.h");
  EXPECT_NE(config.find("#define ACCGEN_PINNED_MEMORY 0\n"), std::string::npos);
  EXPECT_NE(config.find("#define ACCGEN_AUTOCAST 0\n"), std::string::npos);
  const std::string& on =
      rendered(backend("device: accel\n")).at("csrc/accgen_config.h");
  EXPECT_NE(on.find("#define ACCGEN_PINNED_MEMORY 1\n"), std::string::npos);
  EXPECT_NE(on.find("#define ACCGEN_AUTOCAST 1\n"), std::string::npos);
}

// Note [Host access]: the runtime and accgen_add_backend refuse, on a
// device the host cannot address, what the configuration lists.
TEST_F(BackendFiles, HostCodeIsListedForTheRuntime) {
  const std::string more =
      "  - {op: abs.out, kind: stub, stub: abs_stub}\n"
      "  - {op: sin.out, kind: stub, stub: sin_stub}\n"
      "  - {op: cos, kind: emulate}\n"
      "  - {op: add.Tensor, kind: emulate, group: true}\n"
      "  - {op: tan, kind: fallback}\n";
  const std::string config =
      rendered(backend("device: accel\nfallback: emulate\n", more))
          .at("csrc/accgen_config.h");
  EXPECT_NE(config.find("#define ACCGEN_NEEDS_HOST_ACCESS "
                        "\"abs.out sin.out\"\n"),
            std::string::npos)
      << config;
  EXPECT_NE(config.find("#define ACCGEN_NEEDS_HOST_COPIES "
                        "\"add.Tensor cos\"\n"),
            std::string::npos)
      << config;
  EXPECT_NE(config.find("#define ACCGEN_EMULATE_FALLBACK 1\n"),
            std::string::npos);
  const std::string none = rendered(backend("device: accel\nfallback: cpu\n",
                                            "  - {op: tan, kind: fallback}\n"))
                               .at("csrc/accgen_config.h");
  EXPECT_NE(none.find("#define ACCGEN_NEEDS_HOST_ACCESS \"\"\n"),
            std::string::npos);
  EXPECT_NE(none.find("#define ACCGEN_NEEDS_HOST_COPIES \"\"\n"),
            std::string::npos);
  EXPECT_NE(none.find("#define ACCGEN_EMULATE_FALLBACK 0\n"),
            std::string::npos);
}

TEST_F(BackendFiles, TorchIsPinnedToTheReleaseOfTheSchemas) {
  const auto text = rendered(backend("device: accel\n"));
  EXPECT_NE(
      text.at("pyproject.toml").find("dependencies = [\"torch==2.13.0\"]"),
      std::string::npos);
  EXPECT_NE(
      text.at("pyproject.toml").find("wheel.packages = [\"src/torch_accel\"]"),
      std::string::npos);
}

TEST_F(BackendFiles, NamesComeFromTheSpec) {
  const auto b = backend(
      "device: npu\npackage: npu_torch\nnamespace: npu_rt\ndevices: 3\n"
      "memory: 512MiB\n");
  const auto text = rendered(b);
  ASSERT_TRUE(text.count("src/npu_torch/__init__.py"));
  for (const auto& [path, content] : text) {
    // Nothing of the prototype's names survives (torch.accelerator aside).
    std::string scrubbed = content;
    for (std::size_t at = scrubbed.find("accelerator"); at != std::string::npos;
         at = scrubbed.find("accelerator", at)) {
      scrubbed.replace(at, 11, "-");
    }
    EXPECT_EQ(scrubbed.find("accel"), std::string::npos) << path;
    EXPECT_EQ(scrubbed.find("ACCEL"), std::string::npos) << path;
    // C++ names the namespace, never the device: "npu_rt::", not "npu::".
    EXPECT_EQ(content.find("npu::"), std::string::npos) << path;
  }
  const std::string& config = text.at("csrc/accgen_config.h");
  EXPECT_NE(config.find("#define ACCGEN_DEVICE_NAME \"npu\"\n"),
            std::string::npos);
  EXPECT_NE(config.find("#define ACCGEN_PACKAGE_NAME \"npu_torch\"\n"),
            std::string::npos);
  EXPECT_NE(config.find("#define ACCGEN_ENV_PREFIX \"NPU\"\n"),
            std::string::npos);
  EXPECT_NE(config.find("#define ACCGEN_DEVICE_COUNT 3\n"), std::string::npos);
  EXPECT_NE(config.find("#define ACCGEN_MEMORY_BYTES 536870912ULL\n"),
            std::string::npos);
  const std::string& header = text.at("csrc/Backend.h");
  EXPECT_NE(header.find("namespace npu_rt {"), std::string::npos);
  EXPECT_NE(header.find("#define NPU_CHECK(expr) ACCGEN_CHECK(expr)"),
            std::string::npos);
  const std::string& pyproject = text.at("pyproject.toml");
  EXPECT_NE(pyproject.find("name = \"npu_torch\""), std::string::npos);
  EXPECT_NE(pyproject.find("npu = \"npu_torch:_autoload\""), std::string::npos);
  EXPECT_NE(text.at("CMakeLists.txt").find("PACKAGE npu_torch"),
            std::string::npos);
}

TEST_F(BackendFiles, TextIsByteStable) {
  for (const auto& [path, content] : rendered(backend("device: accel\n"))) {
    ASSERT_FALSE(content.empty()) << path;
    EXPECT_EQ(content.back(), '\n') << path;
    EXPECT_EQ(content.find("\r"), std::string::npos) << path;
    EXPECT_EQ(content.find(" \n"), std::string::npos)
        << path << ": trailing space";
    EXPECT_EQ(content.find("\n\n\n\n"), std::string::npos) << path;
    EXPECT_EQ(content.find("{{"), std::string::npos) << path;
    if (path != "tuning.cpp") {
      EXPECT_EQ(content.find("@generated by accgen from specs/"),
                content.find("@generated"))
          << path << ": banner";
    }
  }
}

}  // namespace
}  // namespace accgen::emit
