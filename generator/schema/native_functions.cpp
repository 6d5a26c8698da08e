// Loading native_functions.yaml into a SchemaRegistry.
//
// See Note [A dedicated scanner for native_functions.yaml]: yaml-cpp needs
// ~110 ms for the 15,800-line file, more than the whole no-op `generate` may
// take, so this file reads the YAML subset the file is written in (block
// mappings and sequences, flow sequences, plain and quoted scalars,
// comments) with a small line-based parser, and reports anything outside
// that subset as an error rather than guessing. The gtest
// schema_native_functions_test.cpp cross-checks it against yaml-cpp on the
// installed torch's file.
#include <algorithm>
#include <deque>
#include <exception>
#include <fstream>
#include <optional>
#include <sstream>

#include "generator/schema/schema.h"
#include "generator/support/io.h"
#include "generator/support/parallel.h"

namespace accgen::schema {
namespace {

// Note [A dedicated scanner for native_functions.yaml]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// The node tree below is just rich enough for native_functions.yaml: a
// scalar, a mapping (ordered, keys are scalars) or a sequence, each with the
// 1-based line and column where it starts.
struct Node;

struct MapEntry;

struct Node {
  enum class Kind { kScalar, kMap, kSeq };
  Kind kind = Kind::kScalar;
  int line = 0;
  int column = 0;
  // Views into the file text, or into MiniYaml::owned_ for unescaped
  // quoted scalars and folded lines: nodes never copy plain text.
  std::string_view scalar;
  std::vector<MapEntry> map;
  std::vector<Node> seq;

  const Node* get(std::string_view key) const;
};

struct MapEntry {
  std::string_view key;
  int line = 0;
  int column = 0;
  Node value;
};

const Node* Node::get(std::string_view key) const {
  for (const auto& e : map) {
    if (e.key == key) return &e.value;
  }
  return nullptr;
}

struct Line {
  int number = 0;               // 1-based
  const char* begin = nullptr;  // start of the physical line
  std::string_view content;     // without indentation, comment, trailing ws

  int indent() const { return static_cast<int>(content.data() - begin); }
  int column(const char* p) const { return static_cast<int>(p - begin) + 1; }
};

class YamlError : public std::runtime_error {
 public:
  YamlError(int line, int column, std::string message)
      : std::runtime_error(std::move(message)), line(line), column(column) {}
  int line;
  int column;
};

bool isSpace(char c) {
  return c == ' ' || c == '\t';
}

// Where a comment starts in `s` ('#' at the start or after whitespace,
// outside quoted scalars), or s.size().
std::size_t commentStart(std::string_view s) {
  char quote = 0;
  for (std::size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    if (quote) {
      if (quote == '"' && c == '\\') {
        ++i;
      } else if (c == quote) {
        if (quote == '\'' && i + 1 < s.size() && s[i + 1] == '\'') {
          ++i;
        } else {
          quote = 0;
        }
      }
      continue;
    }
    if (c == '#' && (i == 0 || isSpace(s[i - 1]))) return i;
    if (c == '\'' || c == '"') {
      // A quote opens a quoted scalar only where a scalar may start; inside
      // a plain scalar (`str mode='linear'`) it is an ordinary character.
      std::size_t j = i;
      while (j > 0 && isSpace(s[j - 1]))
        --j;
      if (j == 0 || s[j - 1] == ':' || s[j - 1] == '-' || s[j - 1] == '[' ||
          s[j - 1] == ',') {
        quote = c;
      }
    }
  }
  return s.size();
}

std::vector<Line> splitLines(std::string_view text) {
  std::vector<Line> lines;
  lines.reserve(text.size() / 32);
  int number = 0;
  std::size_t pos = 0;
  while (pos < text.size()) {
    std::size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    ++number;
    std::string_view raw = text.substr(pos, end - pos);
    if (!raw.empty() && raw.back() == '\r') raw.remove_suffix(1);
    std::size_t indent = 0;
    while (indent < raw.size() && raw[indent] == ' ')
      ++indent;
    if (indent < raw.size() && raw[indent] == '\t') {
      throw YamlError(number, static_cast<int>(indent) + 1,
                      "tabs are not allowed in YAML indentation");
    }
    std::string_view content = raw.substr(indent);
    content = content.substr(0, commentStart(content));
    while (!content.empty() && isSpace(content.back()))
      content.remove_suffix(1);
    if (!content.empty() && !(number == 1 && content == "---")) {
      lines.push_back({number, raw.data(), content});
    }
    pos = end + 1;
  }
  return lines;
}

// Position of the ':' that ends a mapping key in `s`, or npos.
std::size_t keyColon(std::string_view s) {
  std::size_t i = 0;
  if (!s.empty() && (s[0] == '\'' || s[0] == '"')) {
    char q = s[0];
    for (i = 1; i < s.size(); ++i) {
      if (q == '"' && s[i] == '\\') {
        ++i;
      } else if (s[i] == q) {
        if (q == '\'' && i + 1 < s.size() && s[i + 1] == '\'') {
          ++i;
          continue;
        }
        break;
      }
    }
    ++i;
    return i < s.size() && s[i] == ':' &&
                   (i + 1 == s.size() || isSpace(s[i + 1]))
               ? i
               : std::string_view::npos;
  }
  if (!s.empty() && (s[0] == '[' || s[0] == '{')) return std::string_view::npos;
  for (; i < s.size(); ++i) {
    if (s[i] == ':' && (i + 1 == s.size() || isSpace(s[i + 1]))) return i;
  }
  return std::string_view::npos;
}

class MiniYaml {
 public:
  explicit MiniYaml(std::vector<Line> lines) : lines_(std::move(lines)) {}

  Node parseDocument() {
    if (lines_.empty()) {
      Node empty;
      empty.kind = Node::Kind::kSeq;
      return empty;
    }
    Node root = parseNode(0);
    if (i_ < lines_.size()) {
      const Line& l = lines_[i_];
      throw YamlError(l.number, l.indent() + 1,
                      "unexpected indentation at the top level");
    }
    return root;
  }

 private:
  bool isSeqItem(const Line& l) const {
    return l.content[0] == '-' &&
           (l.content.size() == 1 || isSpace(l.content[1]));
  }

  Node parseNode(int min_indent) {
    const Line& l = lines_[i_];
    if (l.indent() < min_indent) {
      throw YamlError(l.number, l.indent() + 1, "expected an indented value");
    }
    if (isSeqItem(l)) return parseSeq(l.indent());
    if (keyColon(l.content) != std::string_view::npos) {
      return parseMap(l.indent());
    }
    Node n;
    n.line = l.number;
    n.column = l.indent() + 1;
    ++i_;
    n.scalar = scalarWithContinuation(l, l.content, l.indent() - 1);
    return n;
  }

  Node parseSeq(int indent) {
    Node n;
    n.kind = Node::Kind::kSeq;
    n.line = lines_[i_].number;
    n.column = indent + 1;
    while (i_ < lines_.size() && lines_[i_].indent() == indent &&
           isSeqItem(lines_[i_])) {
      Line& l = lines_[i_];
      std::string_view rest = l.content.substr(1);
      while (!rest.empty() && isSpace(rest.front()))
        rest.remove_prefix(1);
      if (rest.empty()) {
        ++i_;
        if (i_ >= lines_.size() || lines_[i_].indent() <= indent) {
          Node null_item;
          null_item.line = l.number;
          null_item.column = indent + 1;
          n.seq.push_back(std::move(null_item));
        } else {
          n.seq.push_back(parseNode(indent + 1));
        }
        continue;
      }
      // The item's text starts a nested block at its own column: re-read
      // the same line with the "- " turned into indentation.
      l.content = rest;
      n.seq.push_back(parseNode(l.indent()));
    }
    return n;
  }

  Node parseMap(int indent) {
    Node n;
    n.kind = Node::Kind::kMap;
    n.line = lines_[i_].number;
    n.column = indent + 1;
    while (i_ < lines_.size()) {
      const Line& l = lines_[i_];
      if (l.indent() < indent) break;
      if (l.indent() > indent) {
        throw YamlError(l.number, l.indent() + 1,
                        "unexpected indentation inside a mapping");
      }
      if (isSeqItem(l)) break;  // the parent sequence continues
      std::size_t colon = keyColon(l.content);
      if (colon == std::string_view::npos) {
        throw YamlError(l.number, l.indent() + 1,
                        "expected 'key: value' inside a mapping");
      }
      MapEntry e;
      e.line = l.number;
      e.column = l.indent() + 1;
      std::string_view key = l.content.substr(0, colon);
      while (!key.empty() && isSpace(key.back()))
        key.remove_suffix(1);
      e.key = unquote(l, key);
      for (const auto& other : n.map) {
        if (other.key == e.key) {
          throw YamlError(l.number, l.indent() + 1,
                          "duplicate key '" + std::string(e.key) +
                              "' (first at line " + std::to_string(other.line) +
                              ")");
        }
      }
      std::string_view value = l.content.substr(colon + 1);
      while (!value.empty() && isSpace(value.front()))
        value.remove_prefix(1);
      ++i_;
      if (value.empty()) {
        if (i_ < lines_.size() &&
            (lines_[i_].indent() > indent ||
             (lines_[i_].indent() == indent && isSeqItem(lines_[i_])))) {
          e.value = lines_[i_].indent() == indent ? parseSeq(indent)
                                                  : parseNode(indent + 1);
        } else {
          e.value.line = l.number;
          e.value.column = l.column(l.content.data() + colon) + 1;
        }
      } else {
        e.value = inlineValue(l, value, indent);
      }
      n.map.push_back(std::move(e));
    }
    return n;
  }

  // A value on the same line as its key: a flow sequence (possibly running
  // over several lines), a quoted scalar or a plain scalar (possibly folded
  // over more-indented continuation lines).
  Node inlineValue(const Line& l, std::string_view value, int indent) {
    Node n;
    n.line = l.number;
    n.column = l.column(value.data());
    if (value[0] == '|' || value[0] == '>') {
      throw YamlError(n.line, n.column, "block scalars are not supported");
    }
    if (value[0] == '[' || value[0] == '{') {
      const char close = value[0] == '[' ? ']' : '}';
      n.kind = close == ']' ? Node::Kind::kSeq : Node::Kind::kMap;
      std::string text(value);
      while (!flowClosed(text, close)) {
        if (i_ >= lines_.size() || lines_[i_].indent() <= indent) {
          throw YamlError(n.line, n.column,
                          std::string("expected '") + close +
                              "' to close the flow collection");
        }
        text += ' ';
        text += lines_[i_++].content;
      }
      parseFlow(l, own(std::move(text)), close, n);
      return n;
    }
    n.scalar = scalarWithContinuation(l, value, indent);
    return n;
  }

  static bool flowClosed(std::string_view text, char close) {
    char quote = 0;
    for (std::size_t i = 0; i < text.size(); ++i) {
      char c = text[i];
      if (quote) {
        if (c == quote) quote = 0;
        continue;
      }
      if (c == '\'' || c == '"') quote = c;
      if (c == close) return true;
    }
    return false;
  }

  // The items of a one-level flow collection: `[a, 'b']` or `{k: v}`.
  void parseFlow(const Line& l, std::string_view text, char close, Node& n) {
    std::size_t end = text.rfind(close);
    std::string_view tail = text.substr(end + 1);
    while (!tail.empty() && isSpace(tail.front()))
      tail.remove_prefix(1);
    if (!tail.empty()) {
      throw YamlError(n.line, n.column,
                      "unexpected text after the flow collection");
    }
    std::string_view body = text.substr(1, end - 1);
    std::size_t start = 0;
    char quote = 0;
    for (std::size_t i = 0; i <= body.size(); ++i) {
      if (i < body.size()) {
        char c = body[i];
        if (quote) {
          if (c == quote) quote = 0;
          continue;
        }
        if (c == '\'' || c == '"') quote = c;
        if (c == '[' || c == '{') {
          throw YamlError(n.line, n.column,
                          "nested flow collections are not supported");
        }
        if (c != ',') continue;
      }
      std::string_view item = body.substr(start, i - start);
      while (!item.empty() && isSpace(item.front()))
        item.remove_prefix(1);
      while (!item.empty() && isSpace(item.back()))
        item.remove_suffix(1);
      start = i + 1;
      if (item.empty()) {
        if (i < body.size()) {
          throw YamlError(n.line, n.column, "empty item in flow collection");
        }
        continue;
      }
      if (n.kind == Node::Kind::kSeq) {
        Node elem;
        elem.line = n.line;
        elem.column = n.column;
        elem.scalar = unquote(l, item);
        n.seq.push_back(std::move(elem));
        continue;
      }
      std::size_t colon = keyColon(item);
      if (colon == std::string_view::npos) {
        throw YamlError(n.line, n.column,
                        "expected 'key: value' in flow mapping");
      }
      std::string_view key = item.substr(0, colon);
      std::string_view value = item.substr(colon + 1);
      while (!key.empty() && isSpace(key.back()))
        key.remove_suffix(1);
      while (!value.empty() && isSpace(value.front()))
        value.remove_prefix(1);
      MapEntry e;
      e.line = n.line;
      e.column = n.column;
      e.key = unquote(l, key);
      e.value.line = n.line;
      e.value.column = n.column;
      e.value.scalar = unquote(l, value);
      n.map.push_back(std::move(e));
    }
  }

  std::string_view scalarWithContinuation(const Line& l, std::string_view value,
                                          int indent) {
    if (value[0] == '\'' || value[0] == '"') return unquote(l, value);
    if (i_ >= lines_.size() || lines_[i_].indent() <= indent) return value;
    // Plain scalars fold more-indented continuation lines with one space.
    std::string s(value);
    while (i_ < lines_.size() && lines_[i_].indent() > indent) {
      // YAML forbids ": " in a plain scalar; here it means a key indented
      // too far, which is worth saying plainly.
      if (keyColon(lines_[i_].content) != std::string_view::npos) {
        throw YamlError(lines_[i_].number, lines_[i_].indent() + 1,
                        "unexpected indentation: 'key: value' inside a "
                        "multi-line value");
      }
      s += ' ';
      s += lines_[i_].content;
      ++i_;
    }
    return own(std::move(s));
  }

  std::string_view own(std::string s) {
    owned_.push_back(std::move(s));
    return owned_.back();
  }

  // A scalar as written: plain text stays a view; quoted text is unescaped.
  std::string_view unquote(const Line& l, std::string_view s) {
    if (s.empty() || (s[0] != '\'' && s[0] != '"')) return s;
    char q = s[0];
    std::string out;
    std::size_t i = 1;
    for (; i < s.size(); ++i) {
      char c = s[i];
      if (q == '\'' && c == '\'') {
        if (i + 1 < s.size() && s[i + 1] == '\'') {
          out += '\'';
          ++i;
          continue;
        }
        break;
      }
      if (q == '"' && c == '"') break;
      if (q == '"' && c == '\\' && i + 1 < s.size()) {
        char e = s[++i];
        switch (e) {
          case 'n':
            out += '\n';
            break;
          case 't':
            out += '\t';
            break;
          case '0':
            out += '\0';
            break;
          default:
            out += e;
            break;
        }
        continue;
      }
      out += c;
    }
    if (i >= s.size()) {
      throw YamlError(l.number, l.column(s.data()),
                      "unterminated quoted scalar");
    }
    if (i + 1 != s.size()) {
      throw YamlError(l.number, l.column(s.data() + i + 1),
                      "unexpected text after a quoted scalar");
    }
    return own(std::move(out));
  }

  std::vector<Line> lines_;
  std::size_t i_ = 0;
  // A deque keeps the views into its strings valid as it grows.
  std::deque<std::string> owned_;
};

[[noreturn]] void failAt(const std::string& path, int line, int column,
                         const std::string& message) {
  SourceLoc loc{path, line, column};
  throw AccgenError(ExitCode::kInvalidInput, loc.str() + ": error: " + message);
}

std::vector<std::string> splitComma(std::string_view s) {
  std::vector<std::string> out;
  std::size_t start = 0;
  for (std::size_t i = 0; i <= s.size(); ++i) {
    if (i < s.size() && s[i] != ',') continue;
    std::string_view item = s.substr(start, i - start);
    while (!item.empty() && isSpace(item.front()))
      item.remove_prefix(1);
    while (!item.empty() && isSpace(item.back()))
      item.remove_suffix(1);
    if (!item.empty()) out.emplace_back(item);
    start = i + 1;
  }
  return out;
}

class EntryReader {
 public:
  EntryReader(const std::string& path, const Node& item)
      : path_(path), item_(item) {}

  NativeFunction read() {
    NativeFunction fn;
    fn.loc = SourceLoc{path_, item_.line, item_.column};
    const Node* func = item_.get("func");
    if (!func) fail(item_, "entry has no 'func:' key");
    if (func->kind != Node::Kind::kScalar || func->scalar.empty()) {
      fail(*func, "expected a schema string after 'func:'");
    }
    try {
      fn.schema = parseFunctionSchema(func->scalar);
    } catch (const SchemaParseError& e) {
      failAt(path_, func->line, func->column + static_cast<int>(e.column()),
             "invalid schema: " + e.detail());
    }
    for (const auto& e : item_.map) {
      const Node& v = e.value;
      if (e.key == "dispatch") {
        fn.has_dispatch = true;
        if (v.kind != Node::Kind::kMap)
          fail(v, "expected a mapping of dispatch keys to kernels");
        for (const auto& d : v.map) {
          if (d.value.kind != Node::Kind::kScalar || d.value.scalar.empty()) {
            fail(d.value, "expected a kernel name for dispatch key '" +
                              std::string(d.key) + "'");
          }
          for (auto& key : splitComma(d.key)) {
            if (!fn.dispatch.emplace(key, std::string(d.value.scalar)).second) {
              failAt(path_, d.line, d.column,
                     "dispatch key '" + key + "' given twice");
            }
          }
        }
      } else if (e.key == "structured") {
        fn.structured = boolean(v, e.key);
      } else if (e.key == "structured_delegate") {
        fn.structured_delegate = scalar(v, e.key);
      } else if (e.key == "structured_inherits") {
        fn.structured_inherits = scalar(v, e.key);
      } else if (e.key == "ufunc_inner_loop") {
        fn.has_ufunc_inner_loop = true;
      } else if (e.key == "tags") {
        fn.tags = list(v, e.key);
      } else if (e.key == "variants") {
        fn.variants = splitComma(scalar(v, e.key));
      } else if (e.key == "manual_kernel_registration") {
        fn.manual_kernel_registration = boolean(v, e.key);
      } else if (e.key == "manual_cpp_binding") {
        fn.manual_cpp_binding = boolean(v, e.key);
      } else if (e.key == "python_module") {
        fn.python_module = scalar(v, e.key);
      } else if (e.key == "device_check") {
        fn.device_check = scalar(v, e.key);
      } else if (e.key == "use_const_ref_for_mutable_tensors") {
        fn.use_const_ref_for_mutable_tensors = boolean(v, e.key);
      } else if (e.key == "autogen") {
        fn.autogen = splitComma(scalar(v, e.key));
      }
      // Other keys (device_guard, precomputed, cpp_no_default_args, ...)
      // only matter to PyTorch's own codegen; a newer torch may add more, so
      // they are accepted and ignored rather than rejected.
    }
    return fn;
  }

 private:
  [[noreturn]] void fail(const Node& at, const std::string& message) const {
    failAt(path_, at.line, at.column, message);
  }

  std::string scalar(const Node& v, std::string_view key) const {
    if (v.kind != Node::Kind::kScalar) {
      fail(v, "expected a string for '" + std::string(key) + "'");
    }
    return std::string(v.scalar);
  }

  bool boolean(const Node& v, std::string_view key) const {
    std::string_view s = v.scalar;
    if (v.kind != Node::Kind::kScalar) s = "";
    if (s == "True" || s == "true") return true;
    if (s == "False" || s == "false") return false;
    fail(v, "expected True or False for '" + std::string(key) + "', got '" +
                std::string(s) + "'");
  }

  std::vector<std::string> list(const Node& v, std::string_view key) const {
    if (v.kind == Node::Kind::kScalar) return splitComma(v.scalar);
    if (v.kind != Node::Kind::kSeq) {
      fail(v, "expected a string or a list for '" + std::string(key) + "'");
    }
    std::vector<std::string> out;
    for (const auto& item : v.seq)
      out.push_back(scalar(item, key));
    return out;
  }

  const std::string& path_;
  const Node& item_;
};

// The name part of FunctionSchema::signature(): entries of one group share
// it, so it indexes the candidates cheaply.
std::string groupName(const FunctionSchema& schema) {
  std::string name = schema.baseName();
  if (name.ends_with("_functional")) {
    name.resize(name.size() - std::string_view("_functional").size());
  }
  return name;
}

}  // namespace

const std::string* NativeFunction::kernelFor(std::string_view key) const {
  auto it = dispatch.find(std::string(key));
  return it == dispatch.end() ? nullptr : &it->second;
}

bool NativeFunction::hasCompositeImplicitAutograd() const {
  if (!structured_delegate.empty()) return false;
  if (!has_dispatch) return !structured;
  if (dispatch.empty()) return false;
  return std::all_of(dispatch.begin(), dispatch.end(), [](const auto& kv) {
    return kv.first == "CompositeImplicitAutograd" ||
           kv.first == "CompositeImplicitAutogradNestedTensor";
  });
}

bool NativeFunction::hasCpuKernelDirect() const {
  return has_ufunc_inner_loop || dispatch.contains("CPU") ||
         dispatch.contains("CompositeExplicitAutograd") ||
         dispatch.contains("CompositeExplicitAutogradNonFunctional");
}

bool NativeFunction::canHaveBackendKernel() const {
  return !hasCompositeImplicitAutograd() && !manual_kernel_registration;
}

SchemaRegistry SchemaRegistry::load(const std::string& path) {
  // Read as an input (bounded, never blocking): torch's own file is under
  // 1 MiB.
  InputFile file = readInputFile(path);
  if (file.status != InputFile::Status::kRead) {
    throw AccgenError(
        ExitCode::kInvalidInput,
        path + ": error: cannot read native_functions.yaml" +
            (file.status == InputFile::Status::kError ? ": " + file.error
                                                      : std::string()));
  }
  return loadFromString(file.text, path);
}

SchemaRegistry SchemaRegistry::loadFromString(std::string_view text,
                                              const std::string& path) {
  SchemaRegistry reg;
  reg.path_ = path;
  // The nodes view into the text and into the parser's own strings, so the
  // parser lives until every entry is converted.
  std::optional<MiniYaml> yaml;
  Node root;
  try {
    yaml.emplace(splitLines(text));
    root = yaml->parseDocument();
  } catch (const YamlError& e) {
    failAt(path, e.line, e.column, e.what());
  }
  if (root.kind != Node::Kind::kSeq) {
    failAt(path, root.line, root.column,
           "expected a list of '- func:' entries at the top level");
  }
  // The entries are independent: each half is read on a thread of its own
  // (about 2,500 schemas to parse). The error reported is the first in the
  // file, as in one pass: an entry that does not read, unless an earlier
  // entry repeats an operator.
  const std::size_t count = root.seq.size();
  std::vector<NativeFunction> read(count);
  std::size_t failed_at[2] = {count, count};
  std::exception_ptr failure[2];
  inTwoParts([&](int part) {
    auto [begin, end] = half(count, part);
    for (std::size_t i = begin; i < end; ++i) {
      try {
        const Node& item = root.seq[i];
        if (item.kind != Node::Kind::kMap) {
          failAt(path, item.line, item.column,
                 "expected an entry with 'func:' and its keys");
        }
        read[i] = EntryReader(path, item).read();
      } catch (...) {
        failed_at[part] = i;
        failure[part] = std::current_exception();
        return;
      }
    }
  });
  const int first_failure = failure[0] ? 0 : 1;
  reg.functions_->reserve(count);
  reg.by_name_.reserve(count);
  for (std::size_t i = 0; i < failed_at[first_failure]; ++i) {
    NativeFunction& fn = read[i];
    std::string name = fn.schema.fullName();
    auto [it, inserted] = reg.by_name_.emplace(name, reg.functions_->size());
    if (!inserted) {
      failAt(path, fn.loc.line, fn.loc.column,
             "duplicate operator '" + name + "' (first defined at line " +
                 std::to_string((*reg.functions_)[it->second].loc.line) + ")");
    }
    reg.functions_->push_back(std::move(fn));
  }
  if (failure[first_failure]) std::rethrow_exception(failure[first_failure]);
  for (std::size_t i = 0; i < reg.functions_->size(); ++i) {
    const NativeFunction& fn = (*reg.functions_)[i];
    if (!fn.structured_delegate.empty() &&
        !reg.by_name_.contains(fn.structured_delegate)) {
      std::string msg = "structured_delegate names unknown operator '" +
                        fn.structured_delegate + "'";
      std::string near = reg.nearest(fn.structured_delegate);
      if (!near.empty()) msg += "; did you mean '" + near + "'?";
      failAt(path, fn.loc.line, fn.loc.column, msg);
    }
    reg.by_group_name_[groupName(fn.schema)].push_back(i);
  }
  return reg;
}

const NativeFunction* SchemaRegistry::find(std::string_view full_name) const {
  auto it = by_name_.find(std::string(full_name));
  return it == by_name_.end() ? nullptr : &(*functions_)[it->second];
}

std::shared_ptr<const NativeFunction> SchemaRegistry::shared(
    const NativeFunction& fn) const {
  const std::vector<NativeFunction>& all = *functions_;
  if (!all.empty() && &fn >= all.data() && &fn < all.data() + all.size()) {
    // Shares the registry's ownership of the entries: no copy.
    return std::shared_ptr<const NativeFunction>(functions_, &fn);
  }
  return std::make_shared<const NativeFunction>(fn);
}

std::vector<std::string> SchemaRegistry::allNames() const {
  std::vector<std::string> names;
  names.reserve(functions_->size());
  for (const auto& fn : *functions_)
    names.push_back(fn.schema.fullName());
  std::sort(names.begin(), names.end());
  return names;
}

std::string SchemaRegistry::nearest(std::string_view name) const {
  return nearestName(name, allNames());
}

SchemaRegistry::Group SchemaRegistry::group(const NativeFunction& fn) const {
  Group g;
  auto it = by_group_name_.find(groupName(fn.schema));
  if (it == by_group_name_.end()) return g;
  // Signatures are computed here, for the few entries sharing a base name,
  // rather than for all 2,500 entries at load time.
  const std::string sig = fn.schema.signature();
  for (std::size_t i : it->second) {
    const NativeFunction* member = &(*functions_)[i];
    if (member != &fn && member->schema.signature() != sig) continue;
    const NativeFunction** slot = nullptr;
    switch (member->schema.kind()) {
      case SchemaKind::kFunctional:
        slot = &g.functional;
        break;
      case SchemaKind::kInplace:
        slot = &g.inplace;
        break;
      case SchemaKind::kOut:
        slot = &g.out;
        break;
      case SchemaKind::kMutable:
        slot = &g.mutable_fn;
        break;
      case SchemaKind::kScratch:
        slot = &g.out;
        break;
    }
    if (!*slot) *slot = member;
  }
  return g;
}

bool SchemaRegistry::hasCpuKernel(const NativeFunction& fn) const {
  const NativeFunction* cur = &fn;
  // structured_delegate chains are one step in practice; the bound guards
  // against a cycle in a malformed file.
  for (int hops = 0; cur && hops < 8; ++hops) {
    if (cur->hasCpuKernelDirect()) return true;
    if (cur->structured_delegate.empty()) return false;
    cur = find(cur->structured_delegate);
  }
  return false;
}

}  // namespace accgen::schema
