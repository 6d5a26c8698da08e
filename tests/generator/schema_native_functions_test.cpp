// Tests of the SchemaRegistry: the native_functions.yaml scanner on small
// inputs (every YAML form the file uses, and malformed files with their
// line:column errors), the derived kernel facts, variant groups, and the
// installed torch's own file: every entry parses and maps, the count equals
// the `- func:` lines, and the scanner agrees with yaml-cpp on every entry.
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "generator/schema/schema.h"

namespace accgen::schema {
namespace {

namespace fs = std::filesystem;

constexpr const char* kSample = R"yaml(# A comment line
- func: add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor
  device_check: NoCheck   # TensorIterator
  structured_delegate: add.out
  variants: function, method
  dispatch:
    SparseCPU, SparseCUDA: add_sparse
    MkldnnCPU: mkldnn_add
  tags: [core, pointwise]

- func: add_.Tensor(Tensor(a!) self, Tensor other, *, Scalar alpha=1) -> Tensor(a!)
  structured_delegate: add.out
  variants: method
  tags: pointwise

- func: add.out(Tensor self, Tensor other, *, Scalar alpha=1, Tensor(a!) out) -> Tensor(a!)
  structured: True
  structured_inherits: TensorIteratorBase
  ufunc_inner_loop:
    Generic: add (AllAndComplex, BFloat16, Half)
  dispatch:
    SparseCPU: add_out_sparse_cpu
  tags:
    - pointwise
    - core

- func: relu(Tensor self) -> Tensor
  dispatch:
    CPU, CUDA: relu
  tags: [core,
    pointwise]

- func: "linear(Tensor input, Tensor weight, Tensor? bias=None) -> Tensor"
  python_module: nn

- func: flatten.using_ints(Tensor(a) self, int start_dim=0, int end_dim=-1) -> Tensor(a)
  dispatch:
    CompositeImplicitAutograd: flatten
    CompositeImplicitAutogradNestedTensor: flatten_nested

- func: _nested_view(Tensor(a) self) -> Tensor(a)
  dispatch: {}

- func: zeros_like(Tensor self, *, ScalarType? dtype=None) -> Tensor
  dispatch:
    CompositeExplicitAutograd: zeros_like
  autogen: zeros_like.out

- func: backward_hook(Tensor self) -> ()
  manual_kernel_registration: True
  cpp_no_default_args: ['dim']
  precomputed:
  - dim -> int dim
)yaml";

SchemaRegistry sample() {
  return SchemaRegistry::loadFromString(kSample, "sample.yaml");
}

TEST(SchemaRegistry, LoadsEveryEntryInFileOrder) {
  SchemaRegistry reg = sample();
  ASSERT_EQ(reg.functions().size(), 9u);
  EXPECT_EQ(reg.functions()[0].schema.fullName(), "add.Tensor");
  EXPECT_EQ(reg.functions()[8].schema.fullName(), "backward_hook");
  EXPECT_EQ(reg.path(), "sample.yaml");
  EXPECT_EQ(reg.torchVersion(), "");
  // 1-based line of each `- func:` item.
  EXPECT_EQ(reg.functions()[0].loc.line, 2);
  EXPECT_EQ(reg.functions()[1].loc.line, 11);
  EXPECT_EQ(reg.functions()[0].loc.file, "sample.yaml");
}

TEST(SchemaRegistry, SharedEntriesOutliveTheRegistry) {
  std::shared_ptr<const NativeFunction> add;
  {
    SchemaRegistry reg = sample();
    add = reg.shared(*reg.find("add.Tensor"));
    EXPECT_EQ(add.get(), reg.find("add.Tensor"));
  }
  EXPECT_EQ(add->schema.fullName(), "add.Tensor");
  // An entry of no registry is copied.
  SchemaRegistry reg = sample();
  EXPECT_NE(reg.shared(*add).get(), add.get());
  EXPECT_EQ(reg.shared(*add)->schema.fullName(), "add.Tensor");
}

TEST(SchemaRegistry, ReadsTheEntryFields) {
  SchemaRegistry reg = sample();
  const NativeFunction* add = reg.find("add.Tensor");
  ASSERT_NE(add, nullptr);
  // Comma-joined dispatch keys are split.
  EXPECT_EQ(add->dispatch.size(), 3u);
  EXPECT_EQ(*add->kernelFor("SparseCPU"), "add_sparse");
  EXPECT_EQ(*add->kernelFor("SparseCUDA"), "add_sparse");
  EXPECT_EQ(*add->kernelFor("MkldnnCPU"), "mkldnn_add");
  EXPECT_EQ(add->kernelFor("CPU"), nullptr);
  EXPECT_EQ(add->structured_delegate, "add.out");
  EXPECT_EQ(add->device_check, "NoCheck");  // the comment is not part of it
  EXPECT_EQ(add->variants, (std::vector<std::string>{"function", "method"}));
  EXPECT_EQ(add->tags, (std::vector<std::string>{"core", "pointwise"}));

  EXPECT_EQ(reg.find("add_.Tensor")->tags,
            std::vector<std::string>{"pointwise"});  // a single string
  const NativeFunction* out = reg.find("add.out");
  EXPECT_TRUE(out->structured);
  EXPECT_EQ(out->structured_inherits, "TensorIteratorBase");
  EXPECT_TRUE(out->has_ufunc_inner_loop);
  EXPECT_EQ(out->tags, (std::vector<std::string>{"pointwise", "core"}));
  // A flow list over two lines.
  EXPECT_EQ(reg.find("relu")->tags,
            (std::vector<std::string>{"core", "pointwise"}));
  EXPECT_EQ(*reg.find("relu")->kernelFor("CUDA"), "relu");
  // A quoted func string.
  EXPECT_EQ(reg.find("linear")->python_module, "nn");
  EXPECT_EQ(reg.find("linear")->schema.arguments.size(), 3u);
  EXPECT_TRUE(reg.find("_nested_view")->has_dispatch);
  EXPECT_TRUE(reg.find("_nested_view")->dispatch.empty());
  EXPECT_EQ(reg.find("zeros_like")->autogen,
            std::vector<std::string>{"zeros_like.out"});
  EXPECT_TRUE(reg.find("backward_hook")->manual_kernel_registration);
}

TEST(SchemaRegistry, KernelFacts) {
  SchemaRegistry reg = sample();
  auto fn = [&](const char* name) { return *reg.find(name); };
  // No dispatch and no delegate: implicit composite.
  EXPECT_TRUE(fn("linear").hasCompositeImplicitAutograd());
  // Only the CompositeImplicitAutograd keys.
  EXPECT_TRUE(fn("flatten.using_ints").hasCompositeImplicitAutograd());
  // A delegate, a dispatch map, or an empty dispatch map are not.
  EXPECT_FALSE(fn("add.Tensor").hasCompositeImplicitAutograd());
  EXPECT_FALSE(fn("add_.Tensor").hasCompositeImplicitAutograd());
  EXPECT_FALSE(fn("relu").hasCompositeImplicitAutograd());
  EXPECT_FALSE(fn("_nested_view").hasCompositeImplicitAutograd());
  EXPECT_FALSE(fn("zeros_like").hasCompositeImplicitAutograd());

  EXPECT_TRUE(reg.hasCpuKernel(fn("relu")));
  EXPECT_TRUE(reg.hasCpuKernel(fn("zeros_like")));  // CompositeExplicit
  EXPECT_TRUE(reg.hasCpuKernel(fn("add.out")));     // ufunc_inner_loop
  EXPECT_TRUE(reg.hasCpuKernel(fn("add.Tensor")));  // via its delegate
  EXPECT_FALSE(fn("add.Tensor").hasCpuKernelDirect());
  EXPECT_FALSE(reg.hasCpuKernel(fn("_nested_view")));
  EXPECT_FALSE(reg.hasCpuKernel(fn("flatten.using_ints")));

  EXPECT_TRUE(fn("add.Tensor").canHaveBackendKernel());
  EXPECT_TRUE(fn("_nested_view").canHaveBackendKernel());
  EXPECT_FALSE(fn("linear").canHaveBackendKernel());
  EXPECT_FALSE(fn("flatten.using_ints").canHaveBackendKernel());
  EXPECT_FALSE(fn("backward_hook").canHaveBackendKernel());
  EXPECT_TRUE(fn("add.out").partOfStructuredGroup());
  EXPECT_TRUE(fn("add.Tensor").partOfStructuredGroup());
  EXPECT_FALSE(fn("relu").partOfStructuredGroup());
}

TEST(SchemaRegistry, GroupsVariantsBySignature) {
  SchemaRegistry reg = sample();
  for (const char* member : {"add.Tensor", "add_.Tensor", "add.out"}) {
    SchemaRegistry::Group g = reg.group(*reg.find(member));
    EXPECT_EQ(g.functional, reg.find("add.Tensor")) << member;
    EXPECT_EQ(g.inplace, reg.find("add_.Tensor")) << member;
    EXPECT_EQ(g.out, reg.find("add.out")) << member;
    EXPECT_EQ(g.mutable_fn, nullptr) << member;
  }
  SchemaRegistry::Group relu = reg.group(*reg.find("relu"));
  EXPECT_EQ(relu.functional, reg.find("relu"));
  EXPECT_EQ(relu.inplace, nullptr);
  EXPECT_EQ(relu.out, nullptr);
}

TEST(SchemaRegistry, LookupNamesAndSuggestions) {
  SchemaRegistry reg = sample();
  EXPECT_EQ(reg.find("add"), nullptr);
  EXPECT_EQ(reg.find("nope"), nullptr);
  std::vector<std::string> names = reg.allNames();
  ASSERT_EQ(names.size(), 9u);
  EXPECT_TRUE(std::is_sorted(names.begin(), names.end()));
  EXPECT_EQ(names.front(), "_nested_view");
  EXPECT_EQ(reg.nearest("ad.Tensor"), "add.Tensor");
  EXPECT_EQ(reg.nearest("rleu"), "relu");
  EXPECT_EQ(reg.nearest("completely_unrelated_name"), "");
}

struct BadFile {
  const char* name;
  const char* text;
  const char* location;  // "file:line:col"
  const char* message;   // substring
};

class MalformedFileTest : public ::testing::TestWithParam<BadFile> {};

TEST_P(MalformedFileTest, ReportsLineColumnAndWhat) {
  const BadFile& c = GetParam();
  try {
    SchemaRegistry::loadFromString(c.text, "nf.yaml");
    FAIL() << "loaded " << c.name;
  } catch (const AccgenError& e) {
    EXPECT_EQ(e.code(), ExitCode::kInvalidInput);
    std::string what = e.what();
    EXPECT_EQ(what.rfind(std::string(c.location) + ": error: ", 0), 0u) << what;
    EXPECT_NE(what.find(c.message), std::string::npos) << what;
  }
}

INSTANTIATE_TEST_SUITE_P(
    NativeFunctionsErrors, MalformedFileTest,
    ::testing::Values(
        // Column of the bad character inside the schema on its line.
        BadFile{"schema", "- func: add(Tenser self) -> Tensor\n",
                "nf.yaml:1:13", "invalid schema: unknown type 'Tenser'"},
        BadFile{"schema_line3",
                "# c\n\n- func: relu(Tensor self) -> Tensor junk extra\n",
                "nf.yaml:3:42", "unexpected text after the returns"},
        BadFile{"no_func", "- variants: function\n", "nf.yaml:1:3",
                "entry has no 'func:' key"},
        BadFile{"duplicate_op",
                "- func: relu(Tensor self) -> Tensor\n"
                "- func: relu(Tensor self) -> Tensor\n",
                "nf.yaml:2:3",
                "duplicate operator 'relu' (first defined at line 1)"},
        BadFile{"bad_bool",
                "- func: relu(Tensor self) -> Tensor\n  structured: Yes\n",
                "nf.yaml:2:15", "expected True or False for 'structured'"},
        BadFile{"duplicate_key",
                "- func: relu(Tensor self) -> Tensor\n  tags: a\n  tags: b\n",
                "nf.yaml:3:3", "duplicate key 'tags'"},
        BadFile{"bad_indent",
                "- func: relu(Tensor self) -> Tensor\n  tags: a\n     "
                "variants: function\n",
                "nf.yaml:3:6", "unexpected indentation"},
        BadFile{
            "unknown_delegate",
            "- func: relu.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)\n"
            "- func: relu(Tensor self) -> Tensor\n"
            "  structured_delegate: relu.ot\n",
            "nf.yaml:2:3", "did you mean 'relu.out'?"},
        BadFile{"unterminated_quote", "- func: \"relu(Tensor self) -> Tensor\n",
                "nf.yaml:1:9", "unterminated quoted scalar"},
        BadFile{"unclosed_flow",
                "- func: relu(Tensor self) -> Tensor\n  tags: [a, b\n",
                "nf.yaml:2:9", "expected ']'"},
        BadFile{"tab", "- func: relu(Tensor self) -> Tensor\n\ttags: a\n",
                "nf.yaml:2:1", "tabs are not allowed"},
        BadFile{"dispatch_not_map",
                "- func: relu(Tensor self) -> Tensor\n  dispatch: CPU\n",
                "nf.yaml:2:13", "expected a mapping of dispatch keys"},
        BadFile{"top_level_map", "func: relu(Tensor self) -> Tensor\n",
                "nf.yaml:1:1", "expected a list of '- func:' entries"}),
    [](const auto& info) { return std::string(info.param.name); });

TEST(SchemaRegistry, MissingFileIsAnInputError) {
  try {
    SchemaRegistry::load("/nonexistent/native_functions.yaml");
    FAIL();
  } catch (const AccgenError& e) {
    EXPECT_EQ(e.code(), ExitCode::kInvalidInput);
    EXPECT_NE(std::string(e.what()).find(
                  "/nonexistent/native_functions.yaml: error:"),
              std::string::npos);
  }
}

// ---------------------------------------------------------------------------
// The installed torch
// ---------------------------------------------------------------------------

const TorchInstall& torch() {
  static const TorchInstall t = findTorch();
  return t;
}

std::string readAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream buf;
  buf << in.rdbuf();
  return buf.str();
}

TEST(InstalledTorch, FindTorchLocatesEverything) {
  const TorchInstall& t = torch();
  EXPECT_TRUE(fs::is_directory(t.torch_dir)) << t.torch_dir;
  EXPECT_TRUE(fs::exists(fs::path(t.torch_dir) / "__init__.py"));
  EXPECT_EQ(fs::path(t.torch_dir).parent_path(), fs::path(t.site_packages));
  EXPECT_TRUE(
      fs::exists(fs::path(t.include_dir) / "ATen" / "core" / "Tensor.h"));
  EXPECT_TRUE(fs::exists(t.native_functions_yaml));
  // The version agrees with the wheel's installed metadata, which the
  // locator does not read.
  bool found_dist_info = false;
  for (const auto& e : fs::directory_iterator(t.site_packages)) {
    std::string name = e.path().filename().string();
    if (name.starts_with("torch-") && name.ends_with(".dist-info")) {
      found_dist_info = true;
      EXPECT_EQ(name, "torch-" + t.version + ".dist-info");
    }
  }
  EXPECT_TRUE(found_dist_info);
}

class ScopedEnv {
 public:
  ScopedEnv(const char* name, const std::string& value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    ::setenv(name, value.c_str(), 1);
  }
  ~ScopedEnv() {
    if (old_) {
      ::setenv(name_, old_->c_str(), 1);
    } else {
      ::unsetenv(name_);
    }
  }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

TEST(InstalledTorch, FindTorchErrorsAreClear) {
  {
    ScopedEnv env("ACCGEN_PYTHON", "/nonexistent/python3");
    try {
      findTorch();
      FAIL();
    } catch (const AccgenError& e) {
      EXPECT_EQ(e.code(), ExitCode::kInvalidInput);
      EXPECT_NE(std::string(e.what()).find("cannot run Python"),
                std::string::npos)
          << e.what();
    }
  }
  // An interpreter that runs but finds no torch.
  fs::path dir = fs::temp_directory_path() / "accgen_schema_fake_python";
  fs::create_directories(dir);
  fs::path fake = dir / "python3";
  {
    std::ofstream out(fake);
    out << "#!/bin/sh\necho\necho\n";
  }
  fs::permissions(fake, fs::perms::owner_all);
  {
    ScopedEnv env("ACCGEN_PYTHON", fake.string());
    try {
      findTorch();
      FAIL();
    } catch (const AccgenError& e) {
      EXPECT_NE(std::string(e.what()).find("torch is not installed"),
                std::string::npos)
          << e.what();
    }
  }
  fs::remove_all(dir);
}

TEST(InstalledTorch, EveryEntryParsesAndMaps) {
  const std::string& path = torch().native_functions_yaml;
  auto start = std::chrono::steady_clock::now();
  SchemaRegistry reg = SchemaRegistry::load(path);
  double ms = std::chrono::duration<double, std::milli>(
                  std::chrono::steady_clock::now() - start)
                  .count();
  RecordProperty("load_ms", std::to_string(ms));
  std::cout << "[ info ] loaded " << reg.functions().size() << " entries in "
            << ms << " ms\n";

  // The count equals the number of lines starting with "- func:".
  std::istringstream lines(readAll(path));
  std::size_t expected = 0;
  for (std::string line; std::getline(lines, line);) {
    if (line.starts_with("- func:")) ++expected;
  }
  EXPECT_GT(expected, 2000u);
  EXPECT_EQ(reg.functions().size(), expected);

  std::size_t backend = 0;
  for (const auto& fn : reg.functions()) {
    EXPECT_NO_THROW(dispatcherSignature(fn)) << fn.schema.text;
    // Parsing is lossless: the re-spelled schema is the text.
    EXPECT_EQ(fn.schema.str(), fn.schema.text);
    backend += fn.canHaveBackendKernel();
  }
  EXPECT_GT(backend, reg.functions().size() / 2);

  const NativeFunction* add = reg.find("add.Tensor");
  ASSERT_NE(add, nullptr);
  SchemaRegistry::Group g = reg.group(*add);
  EXPECT_EQ(g.inplace, reg.find("add_.Tensor"));
  EXPECT_EQ(g.out, reg.find("add.out"));
  EXPECT_EQ(dispatcherSignature(*reg.find("cat")).paramTypes(),
            "const at::ITensorListRef&, int64_t");
  // A generous bound: the budget is ~20 ms; this only catches a regression
  // by an order of magnitude on a loaded machine.
  EXPECT_LT(ms, 200.0);
}

// Cross-check of the dedicated scanner against yaml-cpp on the real file:
// same func strings, dispatch maps, tags and structured_delegate everywhere.
TEST(InstalledTorch, ScannerAgreesWithYamlCpp) {
  const std::string& path = torch().native_functions_yaml;
  SchemaRegistry reg = SchemaRegistry::load(path);
  YAML::Node doc = YAML::LoadFile(path);
  ASSERT_TRUE(doc.IsSequence());
  ASSERT_EQ(doc.size(), reg.functions().size());
  for (std::size_t i = 0; i < doc.size(); ++i) {
    const YAML::Node& e = doc[i];
    const NativeFunction& fn = reg.functions()[i];
    ASSERT_EQ(e["func"].as<std::string>(), fn.schema.text) << i;
    EXPECT_EQ(fn.loc.line, e.Mark().line + 1) << fn.schema.text;

    std::map<std::string, std::string> dispatch;
    if (e["dispatch"]) {
      for (const auto& kv : e["dispatch"]) {
        std::string keys = kv.first.as<std::string>();
        std::stringstream ss(keys);
        for (std::string k; std::getline(ss, k, ',');) {
          k.erase(0, k.find_first_not_of(' '));
          k.erase(k.find_last_not_of(' ') + 1);
          dispatch[k] = kv.second.as<std::string>();
        }
      }
    }
    EXPECT_EQ(fn.dispatch, dispatch) << fn.schema.text;
    EXPECT_EQ(fn.has_dispatch, static_cast<bool>(e["dispatch"]))
        << fn.schema.text;

    std::vector<std::string> tags;
    if (e["tags"]) {
      if (e["tags"].IsSequence()) {
        for (const auto& t : e["tags"])
          tags.push_back(t.as<std::string>());
      } else {
        tags.push_back(e["tags"].as<std::string>());
      }
    }
    EXPECT_EQ(fn.tags, tags) << fn.schema.text;
    EXPECT_EQ(fn.structured_delegate,
              e["structured_delegate"]
                  ? e["structured_delegate"].as<std::string>()
                  : "")
        << fn.schema.text;
    EXPECT_EQ(fn.structured, e["structured"] && e["structured"].as<bool>())
        << fn.schema.text;
    EXPECT_EQ(fn.python_module,
              e["python_module"] ? e["python_module"].as<std::string>() : "")
        << fn.schema.text;
  }
}

// ---------------------------------------------------------------------------
// DispatchStubs
// ---------------------------------------------------------------------------

TEST(DispatchStubs, FindsStubsOfTheInstalledTorch) {
  auto start = std::chrono::steady_clock::now();
  DispatchStubs stubs = findDispatchStubs(torch().include_dir);
  double ms = std::chrono::duration<double, std::milli>(
                  std::chrono::steady_clock::now() - start)
                  .count();
  std::cout << "[ info ] " << stubs.size() << " stubs in " << ms << " ms\n";
  EXPECT_TRUE(stubs.contains("abs_stub"));
  EXPECT_TRUE(stubs.contains("add_stub"));
  // Split over lines in AffineQuantizer.h.
  EXPECT_TRUE(stubs.contains("quantize_tensor_per_tensor_affine_stub"));
  // The macro's own parameter names are not stubs.
  EXPECT_FALSE(stubs.contains("name"));
  EXPECT_FALSE(stubs.contains("stub"));
  EXPECT_GT(stubs.size(), 300u);
  // Each with the header that declares it, as an include names it.
  EXPECT_EQ(stubs["abs_stub"], "ATen/native/UnaryOps.h");
  EXPECT_EQ(stubs["softmax_lastdim_kernel"], "ATen/native/cpu/SoftmaxKernel.h");
}

TEST(DispatchStubs, ParsesTheMacroLikeThePreprocessor) {
  fs::path root =
      fs::temp_directory_path() / "accgen_stub_scan" / "ATen" / "native";
  fs::create_directories(root / "cpu");
  {
    std::ofstream out(root / "Ops.h");
    out << "#define DECLARE_DISPATCH(fn, name) struct name\n"
           "// DECLARE_DISPATCH(fn_type, commented_stub)\n"
           "/* DECLARE_DISPATCH(fn_type, block_commented_stub) */\n"
           "const char* s = \"DECLARE_DISPATCH(fn, string_stub)\";\n"
           "DECLARE_DISPATCH(void(*)(TensorIterator&, const Scalar&), "
           "paren_stub)\n"
           "DECLARE_DISPATCH(\n    multi_fn,\n    multi_line_stub)\n"
           "MY_DECLARE_DISPATCH(fn, other_macro_stub)\n";
  }
  {
    std::ofstream out(root / "cpu" / "Nested.h");
    out << "DECLARE_DISPATCH(fn, nested_stub);\n";
  }
  {
    std::ofstream out(root / "NotAHeader.cpp");
    out << "DECLARE_DISPATCH(fn, cpp_stub)\n";
  }
  {
    // Declared again in a header that sorts later: the first one counts.
    std::ofstream out(root / "Twice.h");
    out << "DECLARE_DISPATCH(fn, paren_stub)\n";
  }
  DispatchStubs stubs =
      findDispatchStubs((root.parent_path().parent_path()).string());
  EXPECT_EQ(stubs, (DispatchStubs{{"multi_line_stub", "ATen/native/Ops.h"},
                                  {"nested_stub", "ATen/native/cpu/Nested.h"},
                                  {"paren_stub", "ATen/native/Ops.h"}}));
  fs::remove_all(root.parent_path().parent_path());
}

}  // namespace
}  // namespace accgen::schema
