// Unit tests of the spec layer: parsing the three spec files into structs,
// defaults, locations, and the strictness rules (unknown and duplicate keys,
// types, values), each checked through the diagnostics a user would see.
#include "generator/spec/spec.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "generator/spec/names.h"
#include "generator/support/io.h"
#include "tests/generator/test_support.h"

namespace accgen::spec {
namespace {

// ---------------------------------------------------------------------------
// backend.yaml
// ---------------------------------------------------------------------------

// Spec files are UTF-8: the reader finds the first byte that does not begin
// a well-formed sequence (tests/errors/autocast_invalid_utf8 shows the
// located error).
TEST(SpecEncoding, FirstInvalidUtf8Byte) {
  EXPECT_EQ(firstInvalidUtf8("plain ascii"), std::nullopt);
  EXPECT_EQ(firstInvalidUtf8("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80"),
            std::nullopt);
  EXPECT_EQ(firstInvalidUtf8("caf\xe9"), 3u);           // Latin-1
  EXPECT_EQ(firstInvalidUtf8("a\x80"), 1u);             // stray continuation
  EXPECT_EQ(firstInvalidUtf8("ab\xc3"), 2u);            // truncated
  EXPECT_EQ(firstInvalidUtf8("\xc0\xaf"), 0u);          // overlong '/'
  EXPECT_EQ(firstInvalidUtf8("\xe0\x80\xaf"), 0u);      // overlong
  EXPECT_EQ(firstInvalidUtf8("x\xed\xa0\x80"), 1u);     // surrogate U+D800
  EXPECT_EQ(firstInvalidUtf8("\xf4\x90\x80\x80"), 0u);  // past U+10FFFF
  EXPECT_EQ(firstInvalidUtf8("\xe2\x82x"), 0u);         // bad third byte
  EXPECT_EQ(firstInvalidUtf8(std::string_view("\0ok", 3)), std::nullopt);
}

// A spec value cannot forge a diagnostic line or flood the terminal:
// control characters and malformed bytes are escaped, lines are cut, and
// print() shows the first 100 diagnostics.
TEST(DiagnosticText, EscapedCutAndCounted) {
  DiagnosticEngine diags;
  diags.error({"specs/operators.yaml", 3, 5},
              "unknown operator 'a\nspecs/x.yaml:1:1: error: forged\x1b[2J"
              "\xe2\x80\xa8\xff\xc3\xa9'");
  diags.error({"specs/operators.yaml", 4, 5}, std::string(100000, 'o'));
  for (int i = 0; i < 148; ++i)
    diags.error({"specs/operators.yaml", 5, 1}, "x");
  std::ostringstream out;
  diags.print(out);
  const std::string text = out.str();
  std::istringstream lines(text);
  std::string first;
  std::getline(lines, first);
  EXPECT_EQ(first,
            "specs/operators.yaml:3:5: error: unknown operator "
            "'a\\nspecs/x.yaml:1:1: error: forged\\x1b[2J\\u2028\\xff"
            "\xc3\xa9'");
  std::string second;
  std::getline(lines, second);
  EXPECT_LT(second.size(), 1100u);
  EXPECT_NE(second.find("... (99000 more bytes)"), std::string::npos)
      << second.substr(second.size() - 40);
  EXPECT_NE(text.find("note: 50 more diagnostics not shown"),
            std::string::npos);
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 101);
}

TEST(BackendSpec, DefaultsComeFromTheDeviceName) {
  DiagnosticEngine diags;
  auto spec = parseBackendSpec("device: npu\n", "b.yaml", diags);
  ASSERT_TRUE(spec) << printed(diags);
  EXPECT_EQ(spec->device, "npu");
  EXPECT_EQ(spec->package, "torch_npu");
  EXPECT_EQ(spec->cpp_namespace, "npu");
  EXPECT_EQ(spec->device_count, 2);
  EXPECT_EQ(spec->memory_bytes, std::uint64_t{4} << 30);
  EXPECT_EQ(spec->fallback, FallbackPolicy::kEmulate);
  EXPECT_TRUE(spec->features.pinned_memory);
  EXPECT_TRUE(spec->features.autocast);
  EXPECT_EQ(spec->device_loc.str(), "b.yaml:1:9");
  EXPECT_TRUE(diags.diagnostics().empty());
}

TEST(BackendSpec, EveryKeyIsRead) {
  DiagnosticEngine diags;
  auto spec = parseBackendSpec(
      "# comment\n"
      "device: my_npu\n"
      "package: mynpu\n"
      "namespace: vendor_npu\n"
      "devices: 8\n"
      "memory: 512MiB\n"
      "fallback: error\n"
      "features:\n"
      "  pinned_memory: false\n"
      "  autocast: False\n",
      "specs/backend.yaml", diags);
  ASSERT_TRUE(spec) << printed(diags);
  EXPECT_EQ(spec->device, "my_npu");
  EXPECT_EQ(spec->package, "mynpu");
  EXPECT_EQ(spec->cpp_namespace, "vendor_npu");
  EXPECT_EQ(spec->device_count, 8);
  EXPECT_EQ(spec->memory_bytes, std::uint64_t{512} << 20);
  EXPECT_EQ(spec->fallback, FallbackPolicy::kError);
  EXPECT_FALSE(spec->features.pinned_memory);
  EXPECT_FALSE(spec->features.autocast);
  EXPECT_EQ(spec->device_loc.str(), "specs/backend.yaml:2:9");
}

TEST(BackendSpec, MemoryAsPlainByteCount) {
  DiagnosticEngine diags;
  auto spec = parseBackendSpec("device: npu\nmemory: 65536\n", "b", diags);
  ASSERT_TRUE(spec) << printed(diags);
  EXPECT_EQ(spec->memory_bytes, 65536u);
}

TEST(BackendSpec, UnknownKeySuggestsAndListsAllowedKeys) {
  DiagnosticEngine diags;
  EXPECT_FALSE(
      parseBackendSpec("device: npu\nfalback: cpu\n", "b.yaml", diags));
  EXPECT_EQ(printed(diags),
            "b.yaml:2:1: error: unknown key 'falback' in backend.yaml; did "
            "you mean 'fallback'?\n"
            "note: allowed keys: device, package, namespace, devices, "
            "memory, fallback, features, dtypes\n");
}

TEST(BackendSpec, DuplicateKeyIsAnErrorThoughYamlCppKeepsOne) {
  DiagnosticEngine diags;
  EXPECT_FALSE(parseBackendSpec("device: npu\ndevices: 2\ndevices: 4\n",
                                "b.yaml", diags));
  ASSERT_EQ(diags.errorCount(), 1);
  const Diagnostic& d = diags.diagnostics()[0];
  EXPECT_EQ(d.loc.str(), "b.yaml:3:1");
  EXPECT_EQ(d.message, "duplicate key 'devices' in backend.yaml");
  ASSERT_GE(d.notes.size(), 1u);
  EXPECT_EQ(d.notes[0], "first given at b.yaml:2:1");
}

TEST(BackendSpec, DuplicateKeyInsideANestedMap) {
  DiagnosticEngine diags;
  EXPECT_FALSE(parseBackendSpec(
      "device: npu\nfeatures: {autocast: true, autocast: false}\n", "b",
      diags));
  ASSERT_EQ(diags.errorCount(), 1);
  EXPECT_EQ(diags.diagnostics()[0].message,
            "duplicate key 'autocast' in 'features'");
  EXPECT_EQ(diags.diagnostics()[0].loc.str(), "b:2:28");
}

TEST(BackendSpec, WrongTypesNameExpectedAndActual) {
  DiagnosticEngine diags;
  EXPECT_FALSE(parseBackendSpec(
      "device: [a]\ndevices: \"2\"\nfeatures:\n  autocast: yes\n", "b", diags));
  EXPECT_EQ(printed(diags),
            "b:1:9: error: expected a string for 'device', got a sequence\n"
            "b:2:10: error: expected an integer for 'devices', got a string "
            "('2')\n"
            "b:4:13: error: expected a boolean (true or false) for "
            "'autocast', got a string ('yes')\n");
}

TEST(BackendSpec, EmptyValueIsReportedAtItsKey) {
  DiagnosticEngine diags;
  EXPECT_FALSE(parseBackendSpec("device:\ndevices: 2\n", "b", diags));
  EXPECT_EQ(printed(diags),
            "b:1:1: error: expected a string for 'device', got an empty "
            "value\n");
}

TEST(BackendSpec, MissingDevice) {
  DiagnosticEngine diags;
  EXPECT_FALSE(parseBackendSpec("devices: 2\n", "b", diags));
  EXPECT_EQ(printed(diags),
            "b:1:1: error: missing required key 'device' in backend.yaml\n");
}

TEST(BackendSpec, NotAMap) {
  DiagnosticEngine diags;
  EXPECT_FALSE(parseBackendSpec("- device: npu\n", "b", diags));
  ASSERT_EQ(diags.errorCount(), 1);
  EXPECT_EQ(diags.diagnostics()[0].message,
            "expected a map for backend.yaml, got a sequence");
}

TEST(BackendSpec, EveryErrorIsReportedInFileOrder) {
  DiagnosticEngine diags;
  EXPECT_FALSE(
      parseBackendSpec("device: cuda\n"
                       "devices: 0\n"
                       "colour: red\n"
                       "memory: lots\n"
                       "fallback: cpuu\n",
                       "b", diags));
  ASSERT_EQ(diags.errorCount(), 5);
  std::vector<int> lines;
  for (const auto& d : diags.diagnostics())
    lines.push_back(d.loc.line);
  EXPECT_EQ(lines, (std::vector<int>{1, 2, 3, 4, 5}));
}

TEST(BackendSpec, YamlSyntaxErrorIsOneBasedAndPointsAtTheOpenBracket) {
  DiagnosticEngine diags;
  EXPECT_FALSE(parseBackendSpec(
      "device: npu\nfeatures: {autocast: true\npackage: x\n", "b", diags));
  ASSERT_EQ(diags.errorCount(), 1);
  const Diagnostic& d = diags.diagnostics()[0];
  EXPECT_TRUE(d.message.starts_with("invalid YAML: ")) << d.message;
  EXPECT_GE(d.loc.line, 2);
  EXPECT_GE(d.loc.column, 1);
  ASSERT_EQ(d.notes.size(), 1u);
  EXPECT_EQ(d.notes[0], "the '{' at b:2:11 is not closed");
}

TEST(BackendSpec, DeviceNameRules) {
  for (const char* bad : {"class", "cuda", "privateuseone", "my-npu", "npu2",
                          "Npu", "nn", "fft", "float16"}) {
    DiagnosticEngine diags;
    EXPECT_FALSE(
        parseBackendSpec(std::string("device: ") + bad + "\n", "b", diags))
        << bad;
    ASSERT_EQ(diags.errorCount(), 1) << bad;
    EXPECT_TRUE(diags.diagnostics()[0].message.starts_with(
        std::string("invalid device name '") + bad + "'"))
        << diags.diagnostics()[0].message;
  }
}

TEST(BackendSpec, DeviceThatIsACppKeywordNeedsANamespace) {
  DiagnosticEngine diags;
  EXPECT_FALSE(parseBackendSpec("device: union\n", "b", diags));
  EXPECT_EQ(diags.errorCount(), 1);
  DiagnosticEngine ok;
  auto spec =
      parseBackendSpec("device: union\nnamespace: union_npu\n", "b", ok);
  ASSERT_TRUE(spec) << printed(ok);
  EXPECT_EQ(spec->cpp_namespace, "union_npu");
  EXPECT_EQ(spec->package, "torch_union");
}

TEST(BackendSpec, NamespaceAndPackageRules) {
  for (const char* bad : {"at", "std", "aten", "new", "a__b", "_Npu", "9x"}) {
    DiagnosticEngine diags;
    EXPECT_FALSE(parseBackendSpec(
        std::string("device: npu\nnamespace: ") + bad + "\n", "b", diags))
        << bad;
  }
  for (const char* bad : {"torch", "torch-npu", "import"}) {
    DiagnosticEngine diags;
    EXPECT_FALSE(parseBackendSpec(
        std::string("device: npu\npackage: ") + bad + "\n", "b", diags))
        << bad;
  }
}

TEST(BackendSpec, DeviceCountRange) {
  for (const char* count : {"0", "65", "-1"}) {
    DiagnosticEngine diags;
    EXPECT_FALSE(parseBackendSpec(
        std::string("device: npu\ndevices: ") + count + "\n", "b", diags));
  }
  DiagnosticEngine diags;
  auto spec = parseBackendSpec("device: npu\ndevices: 64\n", "b", diags);
  ASSERT_TRUE(spec);
  EXPECT_EQ(spec->device_count, 64);
}

TEST(BackendSpec, DecimalSuffixGetsABinarySuggestion) {
  DiagnosticEngine diags;
  EXPECT_FALSE(parseBackendSpec("device: npu\nmemory: 16G\n", "b", diags));
  ASSERT_EQ(diags.errorCount(), 1);
  EXPECT_EQ(diags.diagnostics()[0].notes.back(), "did you mean '16GiB'?");
}

TEST(MemorySize, Parses) {
  EXPECT_EQ(parseMemorySize("1"), 1u);
  EXPECT_EQ(parseMemorySize("4096"), 4096u);
  EXPECT_EQ(parseMemorySize("64KiB"), 64u << 10);
  EXPECT_EQ(parseMemorySize("3MiB"), 3u << 20);
  EXPECT_EQ(parseMemorySize("4GiB"), std::uint64_t{4} << 30);
  EXPECT_EQ(parseMemorySize("2TiB"), std::uint64_t{2} << 40);
}

TEST(MemorySize, Rejects) {
  for (const char* bad :
       {"", "0", "0GiB", "-1", "4GB", "4 GiB", "GiB", "4gib", "1.5GiB",
        "9223372036854775808", "8388608TiB", "99999999999999999999999"}) {
    EXPECT_FALSE(parseMemorySize(bad)) << bad;
  }
  EXPECT_EQ(parseMemorySize("9223372036854775807"),
            std::uint64_t{9223372036854775807u});
}

// ---------------------------------------------------------------------------
// operators.yaml
// ---------------------------------------------------------------------------

TEST(OperatorsSpec, EntriesWithDefaults) {
  DiagnosticEngine diags;
  auto spec = parseOperatorsSpec(
      "operators:\n"
      "  - {op: empty.memory_format, kind: builtin}\n"
      "  - {op: add.Tensor, kind: emulate}\n"
      "  - {op: mm, kind: kernel, group: false}\n"
      "  - {op: abs.out, kind: stub, stub: abs_stub}\n"
      "  - op: cumsum\n"
      "    kind: fallback\n",
      "specs/operators.yaml", diags);
  ASSERT_TRUE(spec) << printed(diags);
  ASSERT_EQ(spec->operators.size(), 5u);
  const auto& ops = spec->operators;
  EXPECT_EQ(ops[0].kind, OpKind::kBuiltin);
  EXPECT_FALSE(ops[0].group);
  EXPECT_EQ(ops[0].name, "empty");
  EXPECT_EQ(ops[0].overload, "memory_format");
  EXPECT_EQ(ops[1].kind, OpKind::kEmulate);
  EXPECT_TRUE(ops[1].group);
  EXPECT_EQ(ops[2].op, "mm");
  EXPECT_EQ(ops[2].overload, "");
  EXPECT_FALSE(ops[2].group);
  EXPECT_EQ(ops[3].stub, "abs_stub");
  EXPECT_FALSE(ops[3].group);
  EXPECT_EQ(ops[3].stub_loc.str(), "specs/operators.yaml:5:37");
  EXPECT_EQ(ops[4].kind, OpKind::kFallback);
  EXPECT_EQ(ops[4].loc.str(), "specs/operators.yaml:6:5");
  EXPECT_EQ(ops[4].op_loc.str(), "specs/operators.yaml:6:9");
  EXPECT_EQ(ops[4].kind_loc.str(), "specs/operators.yaml:7:11");
  EXPECT_EQ(spec->operators_loc.str(), "specs/operators.yaml:1:1");
}

TEST(OperatorsSpec, QuotedNamesAreStrings) {
  DiagnosticEngine diags;
  auto spec = parseOperatorsSpec(
      "operators:\n  - {op: \"mm\", kind: 'kernel'}\n", "o", diags);
  ASSERT_TRUE(spec) << printed(diags);
  EXPECT_EQ(spec->operators[0].op, "mm");
}

TEST(OperatorsSpec, CustomEntries) {
  DiagnosticEngine diags;
  auto spec = parseOperatorsSpec(
      "operators: []\n"
      "custom:\n"
      "  - schema: \"scaled_add(Tensor self, Tensor other) -> Tensor\"\n"
      "    autograd: true\n"
      "  - schema: 'fused(Tensor x) -> Tensor'\n"
      "    meta: false\n"
      "  - schema: plain(Tensor x) -> Tensor\n",
      "o", diags);
  ASSERT_TRUE(spec) << printed(diags);
  ASSERT_EQ(spec->custom.size(), 3u);
  EXPECT_EQ(spec->custom[0].schema,
            "scaled_add(Tensor self, Tensor other) -> Tensor");
  EXPECT_TRUE(spec->custom[0].meta);
  EXPECT_TRUE(spec->custom[0].autograd);
  EXPECT_FALSE(spec->custom[1].meta);
  EXPECT_FALSE(spec->custom[1].autograd);
  // The schema location is its first character, past any quote.
  EXPECT_EQ(spec->custom[0].schema_loc.str(), "o:3:14");
  EXPECT_EQ(spec->custom[1].schema_loc.str(), "o:5:14");
  EXPECT_EQ(spec->custom[2].schema_loc.str(), "o:7:13");
  EXPECT_EQ(spec->custom[0].loc.str(), "o:3:5");
}

TEST(OperatorsSpec, BlockScalarSchemaLocation) {
  DiagnosticEngine diags;
  auto spec = parseOperatorsSpec(
      "operators: []\ncustom:\n  - schema: |\n      f(Tensor x) -> Tensor\n",
      "o", diags);
  ASSERT_TRUE(spec) << printed(diags);
  EXPECT_EQ(spec->custom[0].schema_loc.str(), "o:4:7");
}

TEST(OperatorsSpec, DuplicateOperatorNamesTheFirst) {
  DiagnosticEngine diags;
  EXPECT_FALSE(parseOperatorsSpec(
      "operators:\n  - {op: mm, kind: kernel}\n  - {op: mm, kind: emulate}\n",
      "o", diags));
  EXPECT_EQ(printed(diags),
            "o:3:10: error: duplicate operator 'mm'\n"
            "note: first listed at o:2:10\n");
}

TEST(OperatorsSpec, EntryRules) {
  struct Case {
    const char* entry;
    const char* message;
  };
  const Case cases[] = {
      {"{op: mm}", "missing required key 'kind' in an operator entry"},
      {"{kind: kernel}", "missing required key 'op' in an operator entry"},
      {"{op: mm, kind: kernal}",
       "unknown operator kind 'kernal'; did you mean 'kernel'?"},
      {"{op: mm, kind: builtin, group: true}",
       "'group' is not allowed for kind builtin"},
      {"{op: mm.out, kind: stub, group: false}",
       "'group' is not allowed for kind stub"},
      {"{op: mm, kind: kernel, stub: mm_stub}",
       "'stub' is only allowed for kind stub, not kernel"},
      {"{op: mm.out, kind: stub, stub: 1x}",
       "invalid stub name '1x': not a C++ identifier"},
      {"{op: aten::mm, kind: kernel}", "invalid operator name 'aten::mm'"},
      {"{op: mm.a.b, kind: kernel}", "invalid operator name 'mm.a.b'"},
      {"{op: mm, kind: kernel, group: 1}",
       "expected a boolean (true or false) for 'group', got an integer (1)"},
      {"{op: mm, kind: kernel, grop: true}",
       "unknown key 'grop' in an operator entry; did you mean 'group'?"},
      {"mm", "expected a map for an operator entry, got a string ('mm')"},
  };
  for (const auto& c : cases) {
    DiagnosticEngine diags;
    EXPECT_FALSE(parseOperatorsSpec(
        std::string("operators:\n  - ") + c.entry + "\n", "o", diags))
        << c.entry;
    ASSERT_EQ(diags.errorCount(), 1) << c.entry << "\n" << printed(diags);
    EXPECT_EQ(diags.diagnostics()[0].message, c.message) << c.entry;
  }
}

TEST(OperatorsSpec, EmptyListsAreAllowed) {
  DiagnosticEngine diags;
  auto spec = parseOperatorsSpec("operators:\ncustom:\n", "o", diags);
  ASSERT_TRUE(spec) << printed(diags);
  EXPECT_TRUE(spec->operators.empty());
  EXPECT_TRUE(spec->custom.empty());
}

TEST(OperatorsSpec, OperatorsKeyIsRequired) {
  DiagnosticEngine diags;
  EXPECT_FALSE(parseOperatorsSpec("custom: []\n", "o", diags));
  EXPECT_EQ(printed(diags),
            "o:1:1: error: missing required key 'operators' in "
            "operators.yaml\n");
}

TEST(OperatorsSpec, ABadEntryDoesNotHideTheNext) {
  DiagnosticEngine diags;
  EXPECT_FALSE(parseOperatorsSpec(
      "operators:\n  - {op: mm, kind: x}\n  - {op: add.Tensor, kind: y}\n", "o",
      diags));
  EXPECT_EQ(diags.errorCount(), 2);
}

// Note [Quick operators.yaml]: wherever the quick reader accepts a file, the
// yaml-cpp reader reads it without a word and to the same result.
std::string describeSpec(const OperatorsSpec& spec) {
  std::ostringstream out;
  out << "loc " << spec.loc.str() << " operators " << spec.operators_loc.str()
      << "\n";
  for (const auto& e : spec.operators) {
    out << e.op << " " << e.name << " " << e.overload << " " << kindName(e.kind)
        << " " << e.group << " " << e.stub.value_or("-") << " " << e.loc.str()
        << " " << e.op_loc.str() << " " << e.kind_loc.str() << " "
        << e.stub_loc.str() << "\n";
  }
  for (const auto& c : spec.custom) {
    out << c.schema << " " << c.meta << " " << c.autograd << " " << c.loc.str()
        << " " << c.schema_loc.str() << "\n";
  }
  return out.str();
}

// Whether the quick reader took `text`; fails the test when it disagrees
// with the yaml-cpp reader.
bool quickAgrees(const std::string& text, const std::string& label) {
  auto quick = readOperatorsSpecQuickly(text, "specs/operators.yaml");
  if (!quick) return false;
  DiagnosticEngine diags;
  auto full = readOperatorsSpecWithYamlCpp(text, "specs/operators.yaml", diags);
  EXPECT_EQ(printed(diags), "") << label;
  EXPECT_TRUE(full) << label;
  if (full) EXPECT_EQ(describeSpec(*quick), describeSpec(*full)) << label;
  return true;
}

TEST(OperatorsSpec, QuickReaderAgreesOnEverySpecInTheRepository) {
  namespace fs = std::filesystem;
  const fs::path root(ACCGEN_SOURCE_DIR);
  // The layout specs are written in is the quick one: valid specs are all
  // taken; the error cases are taken or left, but never read differently.
  std::vector<std::pair<fs::path, bool>> files = {
      {root / "specs" / "operators.yaml", true},
      {root / "templates" / "init" / "specs" / "operators.yaml.mustache",
       true}};
  for (const char* dir : {"tests/golden", "tests/errors"}) {
    for (const auto& e : fs::recursive_directory_iterator(root / dir)) {
      if (e.path().filename() != "operators.yaml") continue;
      files.emplace_back(e.path(),
                         std::string(dir) == "tests/golden" ||
                             e.path().parent_path().filename() == "base");
    }
  }
  for (const auto& [file, valid] : files) {
    std::ifstream in(file);
    std::stringstream text;
    text << in.rdbuf();
    const bool taken = quickAgrees(text.str(), file.string());
    if (valid) EXPECT_TRUE(taken) << file;
  }
}

TEST(OperatorsSpec, QuickReaderAgreesOrLeavesTheFileToYamlCpp) {
  const std::vector<std::string> taken = {
      "operators:\n",
      "operators:\ncustom:\n",
      "# head\noperators:   # all\n\n  - {op: mm, kind: kernel}  # mm\n"
      "  # between\n  - { op: add.Tensor ,kind: emulate,group: False }\n",
      "operators:\n- {op: abs.out, kind: stub, stub: abs_stub}\n"
      "- {op: cumsum, kind: fallback, group: TRUE}\n",
      "custom:\n  - schema: \"f(Tensor x) -> Tensor\"\n    meta: false\n"
      "  # a note\n  - autograd: true\n    schema: 'g(Tensor x) -> Tensor'\n"
      "operators:\n    - {kind: builtin, op: view}\n",
      "operators:\n  - {op: true.x, kind: kernel}\n",
  };
  for (const auto& text : taken) {
    EXPECT_TRUE(quickAgrees(text, text)) << text;
  }
  const std::vector<std::string> left = {
      "",
      "# nothing\n",
      "custom:\n",
      "operators: []\n",
      "operators:\n  - {op: mm, kind: kernel}\noperators:\n",
      "operators:\n  - {op: mm, kind: kernel}\n  - {op: mm, kind: emulate}\n",
      "operators:\n  - {op: mm, kind: kernal}\n",
      "operators:\n  - {op: mm}\n",
      "operators:\n  - {op: mm, kind: kernel, kind: kernel}\n",
      "operators:\n  - {op: mm, kind: kernel, grop: true}\n",
      "operators:\n  - {op: mm, kind: kernel, group: yes}\n",
      "operators:\n  - {op: mm, kind: builtin, group: false}\n",
      "operators:\n  - {op: mm, kind: kernel, stub: mm_stub}\n",
      "operators:\n  - {op: mm.out, kind: stub, stub: 1x}\n",
      "operators:\n  - {op: mm.out, kind: stub, stub: true}\n",
      "operators:\n  - {op: true, kind: kernel}\n",
      "operators:\n  - {op: null, kind: kernel}\n",
      "operators:\n  - {op: 12, kind: kernel}\n",
      "operators:\n  - {op: \"mm\", kind: kernel}\n",
      "operators:\n  - {op: mm, kind: kernel,}\n",
      "operators:\n  - {op: mm, kind: kernel}#x\n",
      "operators:\n  - {op: mm,\n     kind: kernel}\n",
      "operators:\n  - {op:mm, kind: kernel}\n",
      "operators:\n  - op: mm\n    kind: kernel\n",
      "operators:\n  - {op: mm, kind: kernel}\n   - {op: mv, kind: kernel}\n",
      "operators:\n\t- {op: mm, kind: kernel}\n",
      "operators:\r\n  - {op: mm, kind: kernel}\r\n",
      "---\noperators:\n",
      "operators:\n  - {op: mm, kind: kernel}\n...\n",
      "operators:\ncustom:\n  - schema: plain(Tensor x) -> Tensor\n",
      "operators:\ncustom:\n  - schema: \"a\\\"b(Tensor x) -> Tensor\"\n",
      "operators:\ncustom:\n  - meta: true\n",
      "operators:\ncustom:\n  - schema: 'f(Tensor x) -> Tensor'\n"
      "    schema: 'g(Tensor x) -> Tensor'\n",
      "operators:\ncustom:\n  - schema: |\n      f(Tensor x) -> Tensor\n",
      "operators: &a\n",
  };
  for (const auto& text : left) {
    EXPECT_FALSE(readOperatorsSpecQuickly(text, "o")) << text;
  }
}

// ---------------------------------------------------------------------------
// autocast.yaml
// ---------------------------------------------------------------------------

TEST(AutocastSpec, PoliciesInFileOrder) {
  DiagnosticEngine diags;
  auto spec = parseAutocastSpec(
      "dtype: bfloat16\n"
      "policies:\n"
      "  fp32: [softmax.int]\n"
      "  lower_precision_fp:\n"
      "    - mm\n"
      "    - addmm\n"
      "  promote:\n",
      "a", diags);
  ASSERT_TRUE(spec) << printed(diags);
  EXPECT_TRUE(spec->present);
  EXPECT_EQ(spec->dtype, AutocastDtype::kBFloat16);
  ASSERT_EQ(spec->entries.size(), 3u);
  EXPECT_EQ(spec->entries[0].op, "softmax.int");
  EXPECT_EQ(spec->entries[0].policy, CastPolicy::kFp32);
  EXPECT_EQ(spec->entries[0].loc.str(), "a:3:10");
  EXPECT_EQ(spec->entries[2].op, "addmm");
  EXPECT_EQ(spec->entries[2].policy, CastPolicy::kLowerPrecisionFp);
  EXPECT_EQ(spec->entries[2].loc.str(), "a:6:7");
}

TEST(AutocastSpec, EmptyFileMeansNoRules) {
  DiagnosticEngine diags;
  auto spec = parseAutocastSpec("# nothing yet\n", "a", diags);
  ASSERT_TRUE(spec);
  EXPECT_TRUE(spec->entries.empty());
  EXPECT_EQ(spec->dtype, AutocastDtype::kFloat16);
}

TEST(AutocastSpec, OnePolicyPerOperator) {
  DiagnosticEngine diags;
  EXPECT_FALSE(parseAutocastSpec(
      "policies:\n  fp32: [mm]\n  promote: [cat, mm]\n", "a", diags));
  EXPECT_EQ(printed(diags),
            "a:3:18: error: operator 'mm' is listed twice in autocast.yaml\n"
            "note: first listed under 'fp32' at a:2:10\n"
            "note: an operator has one cast policy (or is banned)\n");
}

TEST(AutocastSpec, BannedOperatorsCarryTheirMessage) {
  DiagnosticEngine diags;
  auto spec = parseAutocastSpec(
      "policies:\n"
      "  fp32: [exp]\n"
      "  banned:\n"
      "    - op: binary_cross_entropy\n"
      "      message: |-\n"
      "        unsafe to autocast.\n"
      "        Use \"binary_cross_entropy_with_logits\".\n",
      "a", diags);
  ASSERT_TRUE(spec) << printed(diags);
  ASSERT_EQ(spec->entries.size(), 2u);
  const AutocastEntry& banned = spec->entries[1];
  EXPECT_EQ(banned.op, "binary_cross_entropy");
  EXPECT_EQ(banned.policy, CastPolicy::kBanned);
  EXPECT_EQ(banned.message,
            "unsafe to autocast.\nUse \"binary_cross_entropy_with_logits\".");
  EXPECT_EQ(banned.loc.str(), "a:4:11");
}

TEST(AutocastSpec, ABannedOperatorHasNoCastPolicy) {
  DiagnosticEngine diags;
  EXPECT_FALSE(
      parseAutocastSpec("policies:\n  fp32: [exp]\n  banned:\n"
                        "    - {op: exp, message: no}\n",
                        "a", diags));
  EXPECT_EQ(printed(diags),
            "a:4:12: error: operator 'exp' is listed twice in autocast.yaml\n"
            "note: first listed under 'fp32' at a:2:10\n"
            "note: an operator has one cast policy (or is banned)\n");
}

TEST(AutocastSpec, Rules) {
  struct Case {
    const char* text;
    const char* message;
  };
  const Case cases[] = {
      {"dtype: half\n", "unknown autocast dtype 'half'"},
      {"dtype: float61\n",
       "unknown autocast dtype 'float61'; did you mean 'float16'?"},
      {"policies:\n  fp23: [mm]\n",
       "unknown key 'fp23' in 'policies'; did you mean 'fp32'?"},
      {"policies:\n  fp32: mm\n",
       "expected a sequence of operator names for 'fp32', got a string "
       "('mm')"},
      {"policies:\n  fp32: [aten::mm]\n", "invalid operator name 'aten::mm'"},
      {"policies:\n  fp32: [[mm]]\n",
       "expected a string for an operator name in 'fp32', got a sequence"},
      {"policies: [fp32]\n", "expected a map for 'policies', got a sequence"},
      {"policies:\n  banned: [binary_cross_entropy]\n",
       "expected a map for a banned entry, got a string "
       "('binary_cross_entropy')"},
      {"policies:\n  banned: {op: mm}\n",
       "expected a sequence of banned entries for 'banned', got a map"},
      {"policies:\n  banned: [{op: mm}]\n",
       "missing required key 'message' in a banned entry"},
      {"policies:\n  banned: [{message: no}]\n",
       "missing required key 'op' in a banned entry"},
      {"policies:\n  banned: [{op: mm, message: \"\"}]\n",
       "empty 'message' in a banned entry"},
      {"policies:\n  banned: [{op: mm, message: no, why: x}]\n",
       "unknown key 'why' in a banned entry"},
      {"policies:\n  banned: [{op: aten::mm, message: no}]\n",
       "invalid operator name 'aten::mm'"},
  };
  for (const auto& c : cases) {
    DiagnosticEngine diags;
    EXPECT_FALSE(parseAutocastSpec(c.text, "a", diags)) << c.text;
    ASSERT_EQ(diags.errorCount(), 1) << c.text << printed(diags);
    EXPECT_EQ(diags.diagnostics()[0].message, c.message) << c.text;
  }
}

TEST(AutocastSpec, PolicyNamesMatchC10) {
  EXPECT_EQ(policyName(CastPolicy::kLowerPrecisionFp), "lower_precision_fp");
  EXPECT_EQ(policyName(CastPolicy::kFp32), "fp32");
  EXPECT_EQ(policyName(CastPolicy::kFp32SetOptDtype), "fp32_set_opt_dtype");
  EXPECT_EQ(policyName(CastPolicy::kFp32AppendDtype), "fp32_append_dtype");
  EXPECT_EQ(policyName(CastPolicy::kPromote), "promote");
  EXPECT_EQ(policyName(CastPolicy::kBanned), "banned");
}

// ---------------------------------------------------------------------------
// loadSpecs
// ---------------------------------------------------------------------------

class LoadSpecs : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = std::filesystem::temp_directory_path() /
            ("accgen_spec_test_" + std::to_string(::getpid()));
    std::filesystem::remove_all(root_);
    std::filesystem::create_directories(root_ / "specs");
    previous_ = std::filesystem::current_path();
    std::filesystem::current_path(root_);
  }
  void TearDown() override {
    std::filesystem::current_path(previous_);
    std::filesystem::remove_all(root_);
  }
  void write(const std::string& file, const std::string& text) {
    std::ofstream(root_ / "specs" / file) << text;
  }

  std::filesystem::path root_;
  std::filesystem::path previous_;
};

TEST_F(LoadSpecs, LoadsTheDirectoryWithoutAutocast) {
  write("backend.yaml", "device: npu\n");
  write("operators.yaml", "operators:\n  - {op: mm, kind: kernel}\n");
  DiagnosticEngine diags;
  auto specs = loadSpecs("specs", diags);
  ASSERT_TRUE(specs) << printed(diags);
  EXPECT_EQ(specs->dir, "specs");
  EXPECT_EQ(specs->backend.device, "npu");
  EXPECT_EQ(specs->operators.operators.size(), 1u);
  EXPECT_FALSE(specs->autocast.present);
  EXPECT_EQ(specs->operators.operators[0].loc.file, "specs/operators.yaml");
}

TEST_F(LoadSpecs, PathsAreSpeltAsTheDirectoryWasGiven) {
  write("backend.yaml", "device: npu\ncolour: red\n");
  write("operators.yaml", "operators: []\n");
  DiagnosticEngine diags;
  EXPECT_FALSE(loadSpecs("./specs/", diags));
  ASSERT_EQ(diags.errorCount(), 1);
  EXPECT_EQ(diags.diagnostics()[0].loc.str(), "./specs/backend.yaml:2:1");
}

TEST_F(LoadSpecs, ErrorsInEveryFileAreReported) {
  write("backend.yaml", "device: cuda\n");
  write("operators.yaml", "operators: {}\n");
  write("autocast.yaml", "dtype: fp8\n");
  DiagnosticEngine diags;
  EXPECT_FALSE(loadSpecs("specs", diags));
  ASSERT_EQ(diags.errorCount(), 3);
  EXPECT_EQ(diags.diagnostics()[0].loc.file, "specs/backend.yaml");
  EXPECT_EQ(diags.diagnostics()[1].loc.file, "specs/operators.yaml");
  EXPECT_EQ(diags.diagnostics()[2].loc.file, "specs/autocast.yaml");
}

TEST_F(LoadSpecs, MissingFilesAndDirectory) {
  DiagnosticEngine diags;
  EXPECT_FALSE(loadSpecs("specs", diags));
  EXPECT_EQ(diags.errorCount(), 2);
  EXPECT_EQ(diags.diagnostics()[0].format(),
            "specs/backend.yaml: error: missing spec file\n"
            "note: a spec directory holds backend.yaml, operators.yaml and "
            "optionally autocast.yaml\n");

  DiagnosticEngine none;
  EXPECT_FALSE(loadSpecs("nowhere", none));
  ASSERT_EQ(none.errorCount(), 1);
  EXPECT_EQ(none.diagnostics()[0].loc.str(), "nowhere");
}

// ---------------------------------------------------------------------------
// names
// ---------------------------------------------------------------------------

TEST(Names, OperatorNames) {
  EXPECT_TRUE(isOperatorName("mm"));
  EXPECT_TRUE(isOperatorName("add.Tensor"));
  EXPECT_TRUE(isOperatorName("__and__.Tensor"));
  EXPECT_TRUE(isOperatorName("_copy_from"));
  EXPECT_FALSE(isOperatorName(""));
  EXPECT_FALSE(isOperatorName("add."));
  EXPECT_FALSE(isOperatorName(".Tensor"));
  EXPECT_FALSE(isOperatorName("aten::add"));
  EXPECT_FALSE(isOperatorName("1add"));
  EXPECT_FALSE(isOperatorName("add.Tensor.x"));
}

TEST(Names, DeviceNames) {
  EXPECT_EQ(deviceNameProblem("accel"), "");
  EXPECT_EQ(deviceNameProblem("my_npu"), "");
  EXPECT_NE(deviceNameProblem(""), "");
  EXPECT_NE(deviceNameProblem("None"), "");
  EXPECT_NE(deviceNameProblem("import"), "");
  EXPECT_NE(deviceNameProblem("xpu"), "");
  EXPECT_NE(deviceNameProblem("meta"), "");
  EXPECT_NE(deviceNameProblem("autograd"), "");
  EXPECT_NE(deviceNameProblem("npu1"), "");
}

// Long values and malformed first lines end in located errors, fast.
TEST(BackendSpec, LongValuesGiveShortLocatedErrors) {
  DiagnosticEngine diags;
  EXPECT_FALSE(
      parseBackendSpec("device: npu\nmemory: " + std::string(30000, '9') + "\n",
                       "b.yaml", diags));
  EXPECT_EQ(printed(diags),
            "b.yaml:2:9: error: invalid memory size '" + std::string(40, '9') +
                "...'\nnote: a size is a positive byte count or a number with "
                "KiB, MiB, GiB or TiB: 4GiB\n");
  DiagnosticEngine letters;
  auto spec = parseBackendSpec(
      "device: npu\nnamespace: " + std::string(40000, 'a') + "\n", "b.yaml",
      letters);
  if (!spec) {
    EXPECT_NE(printed(letters).find("b.yaml:2:"), std::string::npos)
        << printed(letters);
  }
}

TEST(BackendSpec, LeadingCommaIsALocatedErrorNotAnEndlessLoop) {
  for (std::string text :
       {",device: npu\n", "# c\n--- ,\n", "&a ,\n", "device: npu\n---\n,\n"}) {
    DiagnosticEngine diags;
    EXPECT_FALSE(parseBackendSpec(text, "b.yaml", diags));
    EXPECT_NE(printed(diags).find("error: invalid YAML: unexpected ','"),
              std::string::npos)
        << text << printed(diags);
  }
}

}  // namespace
}  // namespace accgen::spec
