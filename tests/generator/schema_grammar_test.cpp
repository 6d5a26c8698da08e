// Tests of the `func:` schema grammar: every type form, alias annotations,
// defaults, keyword-only arguments, returns, the derived facts (kind,
// in-place, out arguments, grouping signature) and the errors for malformed
// schemas, with their columns.
#include <gtest/gtest.h>

#include "generator/schema/schema.h"

namespace accgen::schema {
namespace {

struct TypeCase {
  const char* text;
  const char* base;
  bool is_list;
  int list_size;  // -1: none
  bool elem_optional;
  bool optional;
  const char* annotation;  // "" when none
};

class TypeFormTest : public ::testing::TestWithParam<TypeCase> {};

TEST_P(TypeFormTest, ParsesAndRespells) {
  const TypeCase& c = GetParam();
  Type t = parseType(c.text);
  EXPECT_EQ(t.base, c.base);
  EXPECT_EQ(t.is_list, c.is_list);
  EXPECT_EQ(t.list_size.value_or(-1), c.list_size);
  EXPECT_EQ(t.elem_optional, c.elem_optional);
  EXPECT_EQ(t.optional, c.optional);
  EXPECT_EQ(t.annotation ? t.annotation->str() : "", c.annotation);
  EXPECT_EQ(t.str(), c.text);
}

INSTANTIATE_TEST_SUITE_P(
    AllForms, TypeFormTest,
    ::testing::Values(
        TypeCase{"Tensor", "Tensor", false, -1, false, false, ""},
        TypeCase{"Tensor?", "Tensor", false, -1, false, true, ""},
        TypeCase{"Tensor(a)", "Tensor", false, -1, false, false, "a"},
        TypeCase{"Tensor(a!)", "Tensor", false, -1, false, false, "a!"},
        TypeCase{"Tensor(b!)?", "Tensor", false, -1, false, true, "b!"},
        TypeCase{"Tensor(a -> *)", "Tensor", false, -1, false, false, "a -> *"},
        TypeCase{"Tensor(a! -> a|b)", "Tensor", false, -1, false, false,
                 "a! -> a|b"},
        TypeCase{"Tensor(a|b)", "Tensor", false, -1, false, false, "a|b"},
        TypeCase{"Tensor[]", "Tensor", true, -1, false, false, ""},
        TypeCase{"Tensor?[]", "Tensor", true, -1, true, false, ""},
        TypeCase{"Tensor(a)[]", "Tensor", true, -1, false, false, "a"},
        TypeCase{"Tensor(a!)[]", "Tensor", true, -1, false, false, "a!"},
        TypeCase{"int", "int", false, -1, false, false, ""},
        TypeCase{"int?", "int", false, -1, false, true, ""},
        TypeCase{"int[]", "int", true, -1, false, false, ""},
        TypeCase{"int[2]", "int", true, 2, false, false, ""},
        TypeCase{"int[1]?", "int", true, 1, false, true, ""},
        TypeCase{"int[]?", "int", true, -1, false, true, ""},
        TypeCase{"SymInt", "SymInt", false, -1, false, false, ""},
        TypeCase{"SymInt?", "SymInt", false, -1, false, true, ""},
        TypeCase{"SymInt[]", "SymInt", true, -1, false, false, ""},
        TypeCase{"SymInt[6]", "SymInt", true, 6, false, false, ""},
        TypeCase{"SymInt[]?", "SymInt", true, -1, false, true, ""},
        TypeCase{"float", "float", false, -1, false, false, ""},
        TypeCase{"float?", "float", false, -1, false, true, ""},
        TypeCase{"float[]", "float", true, -1, false, false, ""},
        TypeCase{"float[]?", "float", true, -1, false, true, ""},
        TypeCase{"bool", "bool", false, -1, false, false, ""},
        TypeCase{"bool?", "bool", false, -1, false, true, ""},
        TypeCase{"bool[3]", "bool", true, 3, false, false, ""},
        TypeCase{"str", "str", false, -1, false, false, ""},
        TypeCase{"str?", "str", false, -1, false, true, ""},
        TypeCase{"str[]", "str", true, -1, false, false, ""},
        TypeCase{"Scalar", "Scalar", false, -1, false, false, ""},
        TypeCase{"Scalar?", "Scalar", false, -1, false, true, ""},
        TypeCase{"Scalar[]", "Scalar", true, -1, false, false, ""},
        TypeCase{"ScalarType", "ScalarType", false, -1, false, false, ""},
        TypeCase{"ScalarType?", "ScalarType", false, -1, false, true, ""},
        TypeCase{"Layout?", "Layout", false, -1, false, true, ""},
        TypeCase{"Device", "Device", false, -1, false, false, ""},
        TypeCase{"DeviceIndex", "DeviceIndex", false, -1, false, false, ""},
        TypeCase{"MemoryFormat?", "MemoryFormat", false, -1, false, true, ""},
        TypeCase{"Generator?", "Generator", false, -1, false, true, ""},
        TypeCase{"Dimname", "Dimname", false, -1, false, false, ""},
        TypeCase{"Dimname[]", "Dimname", true, -1, false, false, ""},
        TypeCase{"Dimname[]?", "Dimname", true, -1, false, true, ""},
        TypeCase{"Storage", "Storage", false, -1, false, false, ""},
        TypeCase{"Stream", "Stream", false, -1, false, false, ""},
        TypeCase{"QScheme", "QScheme", false, -1, false, false, ""},
        TypeCase{"SymBool", "SymBool", false, -1, false, false, ""},
        TypeCase{"Any", "Any", false, -1, false, false, ""}));

TEST(SchemaGrammar, AddOut) {
  FunctionSchema s = parseFunctionSchema(
      "add.out(Tensor self, Tensor other, *, Scalar alpha=1, Tensor(a!) out) "
      "-> Tensor(a!)");
  EXPECT_EQ(s.name, "add");
  EXPECT_EQ(s.overload, "out");
  EXPECT_EQ(s.fullName(), "add.out");
  ASSERT_EQ(s.arguments.size(), 4u);
  EXPECT_EQ(s.arguments[0].name, "self");
  EXPECT_FALSE(s.arguments[0].kwarg_only);
  EXPECT_FALSE(s.arguments[1].kwarg_only);
  EXPECT_TRUE(s.arguments[2].kwarg_only);
  EXPECT_EQ(s.arguments[2].default_value.value_or("<none>"), "1");
  EXPECT_FALSE(s.arguments[2].is_out);
  EXPECT_TRUE(s.arguments[3].is_out);
  EXPECT_TRUE(s.arguments[3].type.isWrite());
  ASSERT_EQ(s.returns.size(), 1u);
  EXPECT_TRUE(s.returns[0].type.isWrite());
  EXPECT_TRUE(s.isOut());
  EXPECT_FALSE(s.isInplace());
  EXPECT_EQ(s.kind(), SchemaKind::kOut);
  ASSERT_EQ(s.outArguments().size(), 1u);
  EXPECT_EQ(s.outArguments()[0]->name, "out");
  EXPECT_EQ(s.str(), s.text);
}

TEST(SchemaGrammar, NoOverloadAndEmptyReturns) {
  FunctionSchema s =
      parseFunctionSchema("_backward(Tensor self, Tensor[] inputs) -> ()");
  EXPECT_EQ(s.fullName(), "_backward");
  EXPECT_EQ(s.overload, "");
  EXPECT_TRUE(s.returns.empty());
  EXPECT_EQ(s.str(), "_backward(Tensor self, Tensor[] inputs) -> ()");

  FunctionSchema none = parseFunctionSchema(
      "_cufft_clear_plan_cache(DeviceIndex device_index) -> ()");
  EXPECT_EQ(none.arguments[0].type.base, "DeviceIndex");
}

TEST(SchemaGrammar, EmptyArguments) {
  FunctionSchema s = parseFunctionSchema("_get_tracing_state() -> bool");
  EXPECT_TRUE(s.arguments.empty());
  ASSERT_EQ(s.returns.size(), 1u);
  EXPECT_EQ(s.returns[0].type.base, "bool");
}

TEST(SchemaGrammar, NamedAndTupleReturns) {
  FunctionSchema s = parseFunctionSchema(
      "max.dim_max(Tensor self, int dim, bool keepdim=False, *, Tensor(a!) "
      "max, Tensor(b!) max_values) -> (Tensor(a!) values, Tensor(b!) "
      "indices)");
  ASSERT_EQ(s.returns.size(), 2u);
  EXPECT_EQ(s.returns[0].name, "values");
  EXPECT_EQ(s.returns[1].name, "indices");
  EXPECT_EQ(s.returns[1].type.annotation->alias_set,
            std::vector<std::string>{"b"});
  EXPECT_EQ(s.outArguments().size(), 2u);

  FunctionSchema unnamed =
      parseFunctionSchema("f(Tensor self) -> (Tensor, Tensor, float, int)");
  ASSERT_EQ(unnamed.returns.size(), 4u);
  EXPECT_EQ(unnamed.returns[2].type.base, "float");
  EXPECT_EQ(unnamed.returns[3].name, "");

  // A single named return without parentheses (cudnn_affine_grid_generator).
  FunctionSchema single =
      parseFunctionSchema("g(Tensor theta, int N) -> Tensor grid");
  ASSERT_EQ(single.returns.size(), 1u);
  EXPECT_EQ(single.returns[0].name, "grid");
  EXPECT_EQ(single.str(), "g(Tensor theta, int N) -> Tensor grid");
}

TEST(SchemaGrammar, Defaults) {
  FunctionSchema s = parseFunctionSchema(
      "f(Tensor self, int[2] dim=[-2,-1], int[] pad=[0, 1, 2], str "
      "mode='linear', "
      "str q=\"\\\"'\\\\\", str e='', float eps=1e-05, int neg=-100, "
      "Tensor? w=None, bool b=True, ScalarType? dtype=None, "
      "MemoryFormat m=contiguous_format, str? sep='a, b') -> Tensor");
  ASSERT_EQ(s.arguments.size(), 13u);
  EXPECT_EQ(*s.arguments[1].default_value, "[-2,-1]");
  EXPECT_EQ(*s.arguments[2].default_value, "[0, 1, 2]");
  EXPECT_EQ(*s.arguments[3].default_value, "'linear'");
  EXPECT_EQ(*s.arguments[4].default_value, "\"\\\"'\\\\\"");
  EXPECT_EQ(*s.arguments[5].default_value, "''");
  EXPECT_EQ(*s.arguments[6].default_value, "1e-05");
  EXPECT_EQ(*s.arguments[7].default_value, "-100");
  EXPECT_EQ(*s.arguments[8].default_value, "None");
  EXPECT_EQ(*s.arguments[9].default_value, "True");
  EXPECT_EQ(*s.arguments[11].default_value, "contiguous_format");
  // A comma inside a quoted default does not end the argument.
  EXPECT_EQ(*s.arguments[12].default_value, "'a, b'");
  EXPECT_FALSE(s.arguments[0].default_value.has_value());
  EXPECT_EQ(s.str(), s.text);
}

TEST(SchemaGrammar, KwargOnlyWithoutOut) {
  FunctionSchema s = parseFunctionSchema(
      "zeros(SymInt[] size, *, ScalarType? dtype=None, Layout? layout=None, "
      "Device? device=None, bool? pin_memory=None) -> Tensor");
  EXPECT_FALSE(s.arguments[0].kwarg_only);
  for (std::size_t i = 1; i < s.arguments.size(); ++i) {
    EXPECT_TRUE(s.arguments[i].kwarg_only) << i;
    EXPECT_FALSE(s.arguments[i].is_out) << i;
  }
  EXPECT_EQ(s.kind(), SchemaKind::kFunctional);
}

TEST(SchemaGrammar, InplaceNames) {
  EXPECT_TRUE(parseFunctionSchema(
                  "add_.Tensor(Tensor(a!) self, Tensor other) -> Tensor(a!)")
                  .isInplace());
  EXPECT_FALSE(
      parseFunctionSchema("__and__.Tensor(Tensor self, Tensor other) -> Tensor")
          .isInplace());
  FunctionSchema iand = parseFunctionSchema(
      "__iand__.Tensor(Tensor(a!) self, Tensor other) -> Tensor(a!)");
  EXPECT_TRUE(iand.isInplace());
  EXPECT_EQ(iand.baseName(), "__and__");
  EXPECT_EQ(
      parseFunctionSchema("relu_(Tensor(a!) self) -> Tensor(a!)").baseName(),
      "relu");
  // A dunder that is not an augmented assignment keeps its name.
  EXPECT_FALSE(parseFunctionSchema("__init__(Tensor self) -> ()").isInplace());
}

TEST(SchemaGrammar, Kinds) {
  EXPECT_EQ(parseFunctionSchema("relu(Tensor self) -> Tensor").kind(),
            SchemaKind::kFunctional);
  EXPECT_EQ(parseFunctionSchema("relu_(Tensor(a!) self) -> Tensor(a!)").kind(),
            SchemaKind::kInplace);
  EXPECT_EQ(parseFunctionSchema(
                "_fused_moving_avg_obs_fq_helper(Tensor self, Tensor "
                "observer_on, Tensor(a!) running_min) -> (Tensor, Tensor)")
                .kind(),
            SchemaKind::kMutable);
  EXPECT_EQ(
      parseFunctionSchema("_f.out(Tensor self, *, Tensor(a!) out, Tensor(b!) "
                          "_scratch_x) -> Tensor(a!)")
          .kind(),
      SchemaKind::kScratch);
  // A written argument before `self` does not make the schema mutable
  // (torchgen looks only after self).
  EXPECT_EQ(
      parseFunctionSchema("h(Tensor(a!) x, Tensor self) -> Tensor").kind(),
      SchemaKind::kFunctional);
  EXPECT_EQ(kindName(SchemaKind::kOut), "out");
}

TEST(SchemaGrammar, SignatureGroupsVariants) {
  std::string functional =
      parseFunctionSchema(
          "add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor")
          .signature();
  std::string inplace = parseFunctionSchema(
                            "add_.Tensor(Tensor(a!) self, Tensor other, *, "
                            "Scalar alpha=1) -> Tensor(a!)")
                            .signature();
  std::string out = parseFunctionSchema(
                        "add.out(Tensor self, Tensor other, *, Scalar alpha=1, "
                        "Tensor(a!) out) -> Tensor(a!)")
                        .signature();
  EXPECT_EQ(functional,
            "add(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor");
  EXPECT_EQ(inplace, functional);
  EXPECT_EQ(out, functional);
  // A different argument list is a different group.
  EXPECT_NE(
      parseFunctionSchema(
          "add.Scalar(Tensor self, Scalar other, Scalar alpha=1) -> Tensor")
          .signature(),
      functional);
  // Return names are dropped; the `_functional` suffix is dropped.
  EXPECT_EQ(parseFunctionSchema(
                "m.dim(Tensor self) -> (Tensor values, Tensor indices)")
                .signature(),
            "m(Tensor self) -> (Tensor, Tensor)");
  EXPECT_EQ(
      parseFunctionSchema("g_functional(Tensor self) -> Tensor").signature(),
      "g(Tensor self) -> Tensor");
}

struct BadSchema {
  const char* text;
  std::size_t column;
  const char* message;  // a substring of the detail
};

class MalformedSchemaTest : public ::testing::TestWithParam<BadSchema> {};

TEST_P(MalformedSchemaTest, ReportsColumnAndExpectation) {
  const BadSchema& c = GetParam();
  try {
    parseFunctionSchema(c.text);
    FAIL() << "parsed: " << c.text;
  } catch (const SchemaParseError& e) {
    EXPECT_EQ(e.column(), c.column) << e.what();
    EXPECT_NE(e.detail().find(c.message), std::string::npos) << e.detail();
    EXPECT_NE(std::string(e.what()).find(std::to_string(c.column)),
              std::string::npos);
  }
}

INSTANTIATE_TEST_SUITE_P(
    SchemaErrors, MalformedSchemaTest,
    ::testing::Values(
        BadSchema{"", 0, "expected an operator name"},
        BadSchema{"add Tensor self) -> Tensor", 4,
                  "expected '(' after the operator name"},
        BadSchema{"add.(Tensor self) -> Tensor", 4,
                  "expected an overload name"},
        BadSchema{"add(Tenser self) -> Tensor", 4, "unknown type 'Tenser'"},
        BadSchema{"add(Tensor) -> Tensor", 10,
                  "expected a space and an argument name"},
        BadSchema{"add(Tensor self -> Tensor", 16,
                  "expected ',' or ')' after an argument"},
        BadSchema{"add(Tensor self)", 16, "expected '->' after the arguments"},
        BadSchema{"add(Tensor self) -> Tensor junk extra", 32,
                  "unexpected text after the returns"},
        BadSchema{"add(Tensor self) -> (Tensor, Tensor", 35,
                  "expected ',' or ')' in the returns"},
        BadSchema{"add(Tensor(a! self) -> Tensor", 14,
                  "expected ')' to close the alias annotation"},
        BadSchema{"add(Tensor() self) -> Tensor", 11, "expected an alias set"},
        BadSchema{"add(int[2 self) -> Tensor", 9,
                  "expected ']' to close the list type"},
        BadSchema{"add(str s='abc) -> Tensor", 10,
                  "unterminated string in default value"},
        BadSchema{"add(int x=, int y) -> Tensor", 10,
                  "expected a default value after '='"},
        BadSchema{"add(Tensor self, *, *, int x) -> Tensor", 20,
                  "duplicate '*'"},
        BadSchema{"add(Tensor self, int self) -> Tensor", 21,
                  "duplicate argument 'self'"},
        BadSchema{"add(Tensor self, *, Tensor(a!) out, int x) -> Tensor", 36,
                  "cannot follow the out arguments"},
        BadSchema{"add(Tensor self) -> ", 20, "expected a type"}));

TEST(SchemaGrammar, ParseTypeRejectsTrailingText) {
  EXPECT_THROW(parseType("Tensor x"), SchemaParseError);
  EXPECT_THROW(parseType("int[2]?!"), SchemaParseError);
}

// A fixed list size of many digits once overflowed `int` (libFuzzer, UBSan).
TEST(SchemaGrammar, HugeListSizeIsAnErrorNotAnOverflow) {
  EXPECT_THROW(parseFunctionSchema("f(bool[99999999999999999999] x) -> ()"),
               SchemaParseError);
  EXPECT_THROW(parseFunctionSchema("f(int[2147483648] x) -> ()"),
               SchemaParseError);
}

}  // namespace
}  // namespace accgen::schema
