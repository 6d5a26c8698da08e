// The `func:` schema grammar: a recursive-descent parser over the schema
// string, the re-spelling of parsed schemas, and the derived facts (kind,
// out arguments, the grouping signature).
//
// The parser reports the 0-based column of the first character it could not
// accept, so that callers can point into the YAML line the schema came from.
#include "generator/schema/schema.h"
#include "generator/support/identifiers.h"

#include <algorithm>
#include <array>
#include <cctype>

namespace accgen::schema {

SchemaParseError::SchemaParseError(std::size_t column, std::string detail)
    : std::runtime_error("column " + std::to_string(column) + ": " + detail),
      column_(column),
      detail_(std::move(detail)) {}

namespace {

// Base types the grammar accepts. The set is torchgen's BaseTy plus `Any`;
// an unknown name is a parse error so that misspelt custom schemas are caught
// where they are written, not when the C++ mapping fails.
constexpr std::array<std::string_view, 22> kBaseTypes = {
    "Tensor",       "Scalar",
    "ScalarType",   "Layout",
    "Device",       "DeviceIndex",
    "MemoryFormat", "Generator",
    "Dimname",      "DimVector",
    "Storage",      "Stream",
    "QScheme",      "int",
    "SymInt",       "SymBool",
    "float",        "bool",
    "str",          "Any",
    "GraphModule",  "ConstQuantizerPtr"};

// Python's augmented assignment operators: `__iand__` is the in-place form
// of `__and__` (the same list torchgen uses to read dunder names).
constexpr std::array<std::string_view, 11> kAugmentedAssignment = {
    "add",    "sub",    "mul", "div", "mod", "pow",
    "lshift", "rshift", "and", "xor", "or"};

class Parser {
 public:
  explicit Parser(std::string_view text) : s_(text) {}

  FunctionSchema parseSchema() {
    FunctionSchema schema;
    schema.text = std::string(s_);
    skipSpaces();
    schema.name = identifier("an operator name");
    if (peek() == '.') {
      ++pos_;
      schema.overload = identifier("an overload name after '.'");
    }
    skipSpaces();
    expect('(', "'(' after the operator name");
    parseArguments(schema.arguments);
    skipSpaces();
    if (!consume("->")) fail("expected '->' after the arguments");
    skipSpaces();
    parseReturns(schema.returns);
    skipSpaces();
    if (pos_ != s_.size()) fail("unexpected text after the returns");
    return schema;
  }

  Type parseTypeOnly() {
    skipSpaces();
    Type type = parseType();
    skipSpaces();
    if (pos_ != s_.size()) fail("unexpected text after the type");
    return type;
  }

 private:
  [[noreturn]] void fail(std::string message) const {
    throw SchemaParseError(pos_, std::move(message));
  }
  [[noreturn]] void failAt(std::size_t pos, std::string message) const {
    throw SchemaParseError(pos, std::move(message));
  }

  char peek(std::size_t ahead = 0) const {
    return pos_ + ahead < s_.size() ? s_[pos_ + ahead] : '\0';
  }
  void skipSpaces() {
    while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\t'))
      ++pos_;
  }
  bool consume(std::string_view token) {
    if (s_.substr(pos_, token.size()) != token) return false;
    pos_ += token.size();
    return true;
  }
  void expect(char c, std::string_view what) {
    if (peek() != c) fail("expected " + std::string(what));
    ++pos_;
  }
  std::string identifier(std::string_view what) {
    if (!isIdentStart(peek())) fail("expected " + std::string(what));
    std::size_t start = pos_;
    while (isIdentChar(peek()))
      ++pos_;
    return std::string(s_.substr(start, pos_ - start));
  }

  // (a), (a!), (a|b), (a -> *), (a! -> a|b); the '(' is already consumed.
  Annotation parseAnnotation() {
    Annotation ann;
    std::size_t start = pos_;
    ann.alias_set = aliasSet();
    if (peek() == '!') {
      ++pos_;
      ann.is_write = true;
    }
    skipSpaces();
    if (consume("->")) {
      skipSpaces();
      ann.alias_set_after = aliasSet();
      skipSpaces();
    }
    if (peek() != ')') {
      if (pos_ == start) fail("expected an alias set such as 'a' or 'a!'");
      fail("expected ')' to close the alias annotation");
    }
    ++pos_;
    return ann;
  }

  std::vector<std::string> aliasSet() {
    std::vector<std::string> set;
    while (true) {
      if (peek() == '*') {
        ++pos_;
        set.emplace_back("*");
      } else if (std::islower(static_cast<unsigned char>(peek()))) {
        std::size_t start = pos_;
        while (std::isalnum(static_cast<unsigned char>(peek())))
          ++pos_;
        set.emplace_back(s_.substr(start, pos_ - start));
      } else {
        fail("expected an alias set such as 'a' or 'a!'");
      }
      if (peek() != '|') return set;
      ++pos_;
    }
  }

  Type parseType() {
    Type type;
    std::size_t start = pos_;
    if (!isIdentStart(peek())) fail("expected a type");
    type.base = identifier("a type");
    if (std::find(kBaseTypes.begin(), kBaseTypes.end(), type.base) ==
        kBaseTypes.end()) {
      failAt(start, "unknown type '" + type.base + "'");
    }
    if (peek() == '(') {
      ++pos_;
      type.annotation = parseAnnotation();
    }
    bool question = false;
    if (peek() == '?') {
      ++pos_;
      question = true;
    }
    if (peek() == '[') {
      ++pos_;
      type.is_list = true;
      type.elem_optional = question;
      if (std::isdigit(static_cast<unsigned char>(peek()))) {
        // Bounded: a long run of digits overflowed `int`.
        constexpr int kMaxListSize = 1 << 20;
        const std::size_t digits_start = pos_;
        int n = 0;
        while (std::isdigit(static_cast<unsigned char>(peek()))) {
          if (n > kMaxListSize) failAt(digits_start, "list size is too large");
          n = n * 10 + (s_[pos_] - '0');
          ++pos_;
        }
        if (n > kMaxListSize) failAt(digits_start, "list size is too large");
        type.list_size = n;
      }
      expect(']', "']' to close the list type");
      if (peek() == '?') {
        ++pos_;
        type.optional = true;
      }
    } else {
      type.optional = question;
    }
    return type;
  }

  // A default value runs to the next ',' or ')' outside brackets and
  // quotes: `[0, 1]`, `'linear'`, `"\"'\\"`, `-1`, `None`.
  std::string parseDefault() {
    std::size_t start = pos_;
    int depth = 0;
    while (pos_ < s_.size()) {
      char c = s_[pos_];
      if (c == '\'' || c == '"') {
        std::size_t open = pos_++;
        while (pos_ < s_.size() && s_[pos_] != c) {
          if (s_[pos_] == '\\') ++pos_;
          ++pos_;
        }
        if (pos_ >= s_.size())
          failAt(open, "unterminated string in default value");
        ++pos_;
        continue;
      }
      if (c == '[' || c == '(') ++depth;
      if (c == ']' || c == ')') {
        if (depth == 0) break;
        --depth;
      }
      if (c == ',' && depth == 0) break;
      ++pos_;
    }
    std::size_t end = pos_;
    while (end > start && s_[end - 1] == ' ')
      --end;
    if (end == start) failAt(start, "expected a default value after '='");
    return std::string(s_.substr(start, end - start));
  }

  void parseArguments(std::vector<Argument>& args) {
    skipSpaces();
    if (peek() == ')') {
      ++pos_;
      return;
    }
    bool kwarg_only = false;
    while (true) {
      skipSpaces();
      if (peek() == '*' &&
          (peek(1) == ',' || peek(1) == ')' || peek(1) == ' ')) {
        if (kwarg_only) fail("duplicate '*' in the arguments");
        ++pos_;
        kwarg_only = true;
      } else {
        Argument arg;
        std::size_t arg_start = pos_;
        arg.type = parseType();
        if (peek() != ' ') {
          fail("expected a space and an argument name after type '" +
               arg.type.str() + "'");
        }
        skipSpaces();
        std::size_t name_start = pos_;
        arg.name =
            identifier("an argument name after type '" + arg.type.str() + "'");
        skipSpaces();
        if (peek() == '=') {
          ++pos_;
          skipSpaces();
          arg.default_value = parseDefault();
        }
        arg.kwarg_only = kwarg_only;
        arg.is_out = kwarg_only && arg.type.isWrite();
        if (!arg.is_out && !args.empty() && args.back().is_out) {
          failAt(arg_start, "argument '" + arg.name +
                                "' cannot follow the out arguments: out "
                                "arguments come last");
        }
        for (const auto& other : args) {
          if (other.name == arg.name) {
            failAt(name_start, "duplicate argument '" + arg.name + "'");
          }
        }
        args.push_back(std::move(arg));
      }
      skipSpaces();
      if (peek() == ',') {
        ++pos_;
        continue;
      }
      if (peek() == ')') {
        ++pos_;
        return;
      }
      fail("expected ',' or ')' after an argument");
    }
  }

  Return parseReturn() {
    Return ret;
    ret.type = parseType();
    if (peek() == ' ') {
      skipSpaces();
      if (isIdentStart(peek())) ret.name = identifier("a return name");
    }
    return ret;
  }

  void parseReturns(std::vector<Return>& rets) {
    if (peek() != '(') {
      rets.push_back(parseReturn());
      return;
    }
    ++pos_;
    skipSpaces();
    if (peek() == ')') {
      ++pos_;
      return;
    }
    while (true) {
      skipSpaces();
      rets.push_back(parseReturn());
      skipSpaces();
      if (peek() == ',') {
        ++pos_;
        continue;
      }
      if (peek() == ')') {
        ++pos_;
        return;
      }
      fail("expected ',' or ')' in the returns");
    }
  }

  std::string_view s_;
  std::size_t pos_ = 0;
};

std::string joinAliasSet(const std::vector<std::string>& set) {
  std::string s;
  for (std::size_t i = 0; i < set.size(); ++i) {
    if (i) s += '|';
    s += set[i];
  }
  return s;
}

}  // namespace

std::string Annotation::str() const {
  std::string s = joinAliasSet(alias_set);
  if (is_write) s += '!';
  if (!alias_set_after.empty()) {
    s += " -> ";
    s += joinAliasSet(alias_set_after);
  }
  return s;
}

std::string Type::str() const {
  std::string s = base;
  if (annotation) {
    s += '(';
    s += annotation->str();
    s += ')';
  }
  if (is_list) {
    if (elem_optional) s += '?';
    s += '[';
    if (list_size) s += std::to_string(*list_size);
    s += ']';
  }
  if (optional) s += '?';
  return s;
}

Type Type::withoutAnnotation() const {
  Type t = *this;
  t.annotation.reset();
  return t;
}

std::string Argument::str() const {
  std::string s = type.str() + " " + name;
  if (default_value) {
    s += '=';
    s += *default_value;
  }
  return s;
}

std::string Return::str() const {
  return name.empty() ? type.str() : type.str() + " " + name;
}

std::string_view kindName(SchemaKind kind) {
  switch (kind) {
    case SchemaKind::kFunctional:
      return "functional";
    case SchemaKind::kInplace:
      return "inplace";
    case SchemaKind::kOut:
      return "out";
    case SchemaKind::kMutable:
      return "mutable";
    case SchemaKind::kScratch:
      return "scratch";
  }
  return "functional";
}

std::string FunctionSchema::fullName() const {
  return overload.empty() ? name : name + "." + overload;
}

namespace {
bool isDunder(std::string_view name) {
  return name.size() > 4 && name.starts_with("__") && name.ends_with("__");
}
}  // namespace

bool FunctionSchema::isInplace() const {
  if (isDunder(name)) {
    std::string_view inner = std::string_view(name).substr(2, name.size() - 4);
    return inner.size() > 1 && inner[0] == 'i' &&
           std::find(kAugmentedAssignment.begin(), kAugmentedAssignment.end(),
                     inner.substr(1)) != kAugmentedAssignment.end();
  }
  return !name.empty() && name.back() == '_';
}

std::string FunctionSchema::baseName() const {
  if (!isInplace()) return name;
  if (isDunder(name)) return "__" + name.substr(3);
  return name.substr(0, name.size() - 1);
}

bool FunctionSchema::isOut() const {
  return std::any_of(arguments.begin(), arguments.end(),
                     [](const Argument& a) { return a.is_out; });
}

std::vector<const Argument*> FunctionSchema::outArguments() const {
  std::vector<const Argument*> outs;
  for (const auto& a : arguments) {
    if (a.is_out) outs.push_back(&a);
  }
  return outs;
}

SchemaKind FunctionSchema::kind() const {
  if (isInplace()) return SchemaKind::kInplace;
  bool is_out = false, is_scratch = false, is_mutable = false;
  // Like torchgen, a written positional argument makes the schema mutable
  // only after `self` (all positional arguments count when there is none).
  bool has_self = std::any_of(
      arguments.begin(), arguments.end(),
      [](const Argument& a) { return !a.kwarg_only && a.name == "self"; });
  bool after_self = !has_self;
  for (const auto& a : arguments) {
    if (a.is_out) {
      is_out = true;
      if (a.name.starts_with("_scratch_")) is_scratch = true;
    } else if (!a.kwarg_only) {
      if (after_self && a.type.isWrite()) is_mutable = true;
      if (a.name == "self") after_self = true;
    }
  }
  if (is_scratch) return SchemaKind::kScratch;
  if (is_out) return SchemaKind::kOut;
  if (is_mutable) return SchemaKind::kMutable;
  return SchemaKind::kFunctional;
}

std::string FunctionSchema::str() const {
  std::string s = fullName() + "(";
  bool first = true, star = false;
  for (const auto& a : arguments) {
    if (!first) s += ", ";
    first = false;
    if (a.kwarg_only && !star) {
      s += "*, ";
      star = true;
    }
    s += a.str();
  }
  s += ") -> ";
  // Like torchgen, a single return is spelled without parentheses, even
  // when named ("-> Tensor grid").
  if (returns.size() == 1) {
    s += returns[0].str();
  } else {
    s += "(";
    for (std::size_t i = 0; i < returns.size(); ++i) {
      if (i) s += ", ";
      s += returns[i].str();
    }
    s += ")";
  }
  return s;
}

std::string FunctionSchema::signature() const {
  FunctionSchema sig;
  sig.name = baseName();
  if (sig.name.ends_with("_functional")) {
    sig.name.resize(sig.name.size() - std::string_view("_functional").size());
  }
  for (const auto& a : arguments) {
    if (a.is_out) continue;
    Argument stripped = a;
    stripped.type = a.type.withoutAnnotation();
    sig.arguments.push_back(std::move(stripped));
  }
  for (const auto& r : returns) {
    sig.returns.push_back(Return{"", r.type.withoutAnnotation()});
  }
  return sig.str();
}

FunctionSchema parseFunctionSchema(std::string_view text) {
  return Parser(text).parseSchema();
}

Type parseType(std::string_view text) {
  return Parser(text).parseTypeOnly();
}

}  // namespace accgen::schema
