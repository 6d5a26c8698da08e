// operators.yaml: the aten operators the backend registers (with their
// registration kinds) and the backend's own custom operators.
#include <algorithm>
#include <cctype>
#include <map>
#include <set>

#include "generator/spec/names.h"
#include "generator/spec/spec.h"
#include "generator/spec/yaml_reader.h"

namespace accgen::spec {
namespace {

const std::vector<std::string> kOperatorsTopKeys = {"operators", "custom"};
const std::vector<std::string> kEntryKeys = {"op", "kind", "group", "stub",
                                             "dtypes"};
const std::vector<std::string> kCustomKeys = {"schema", "meta", "autograd",
                                              "reference"};

/// A Python callable named by its module and attribute path: "torch.add",
/// "my_refs.scaled_add". Every part is an identifier; there are two at least.
bool isDottedPythonName(std::string_view text) {
  int parts = 0;
  std::size_t start = 0;
  while (start <= text.size()) {
    std::size_t end = text.find('.', start);
    if (end == std::string_view::npos) end = text.size();
    std::string_view part = text.substr(start, end - start);
    if (part.empty()) return false;
    auto head = static_cast<unsigned char>(part[0]);
    if (!(std::isalpha(head) || head == '_')) return false;
    for (char c : part) {
      auto u = static_cast<unsigned char>(c);
      if (!(std::isalnum(u) || u == '_')) return false;
    }
    ++parts;
    start = end + 1;
  }
  return parts >= 2;
}
// The names a `kind:` may have, in table order.
const std::vector<std::string>& listedKindNames() {
  static const std::vector<std::string> kNames = [] {
    std::vector<std::string> names;
    for (const KindTraits& t : kindTraitsTable()) {
      if (t.listed) names.emplace_back(t.name);
    }
    return names;
  }();
  return kNames;
}

// The names of the kinds with `trait`, for messages: "kernel, emulate and
// fallback".
std::string kindsWith(bool KindTraits::*trait) {
  std::vector<std::string_view> names;
  for (const KindTraits& t : kindTraitsTable()) {
    if (t.*trait) names.push_back(t.name);
  }
  std::string out;
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (i > 0) out += i + 1 == names.size() ? " and " : ", ";
    out += names[i];
  }
  return out;
}

std::optional<OpKind> parseKind(std::string_view s) {
  for (const KindTraits& t : kindTraitsTable()) {
    if (t.listed && t.name == s) return t.kind;
  }
  return std::nullopt;
}

// entry.op ("add.Tensor", valid) into its name and overload.
void splitOperatorName(OperatorEntry& entry) {
  std::size_t dot = entry.op.find('.');
  entry.name = entry.op.substr(0, dot);
  if (dot != std::string::npos) entry.overload = entry.op.substr(dot + 1);
}

// A sequence, or an empty value read as an empty sequence.
bool expectSequence(YamlReader& r, const YamlField& f, std::string_view hint) {
  if (f.value.IsNull() || f.value.IsSequence()) return true;
  r.error(r.loc(f.value),
          "expected a sequence for '" + f.key + "', got " +
              YamlReader::describe(f.value),
          {std::string(hint)});
  return false;
}

std::optional<OperatorEntry> readEntry(YamlReader& r, const YAML::Node& item) {
  SourceLoc at = r.loc(item);
  if (!item.IsMap()) {
    r.error(at,
            "expected a map for an operator entry, got " +
                YamlReader::describe(item),
            {"write an entry as {op: add.Tensor, kind: kernel}"});
    return std::nullopt;
  }
  auto map = r.readMap(item, "an operator entry", kEntryKeys, at);
  if (!map) return std::nullopt;

  OperatorEntry entry;
  entry.loc = at;
  entry.stub_loc = at;
  entry.dtypes_loc = at;
  bool ok = true;

  const YamlField* op = map->find("op");
  if (!op) {
    r.missingKey("op", "an operator entry", at);
    ok = false;
  } else if (auto name = r.fieldString(*op)) {
    entry.op = *name;
    entry.op_loc = r.loc(op->value);
    if (!isOperatorName(*name)) {
      std::vector<std::string> notes = {
          "an operator is named 'name.overload', or 'name' for the overload "
          "without a name: add.Tensor, mm"};
      if (name->starts_with("aten::")) {
        notes.push_back("leave out the namespace: '" + name->substr(6) + "'");
      }
      r.error(entry.op_loc, "invalid operator name '" + *name + "'",
              std::move(notes));
      ok = false;
    } else {
      splitOperatorName(entry);
    }
  } else {
    ok = false;
  }

  std::optional<OpKind> kind;
  const YamlField* kind_field = map->find("kind");
  if (!kind_field) {
    r.missingKey("kind", "an operator entry", at);
    ok = false;
  } else if (auto text = r.fieldString(*kind_field)) {
    entry.kind_loc = r.loc(kind_field->value);
    kind = parseKind(*text);
    if (!kind) {
      std::string message = "unknown operator kind '" + *text + "'";
      std::string near = nearestName(*text, listedKindNames());
      if (!near.empty()) message += "; did you mean '" + near + "'?";
      std::vector<std::string> notes = {"kinds: " +
                                        joinNames(listedKindNames())};
      if (*text == "custom") {
        notes.push_back(
            "custom operators are listed under 'custom:' with "
            "their schema");
      }
      r.error(entry.kind_loc, message, std::move(notes));
      ok = false;
    } else {
      entry.kind = *kind;
      entry.group = kindAllowsGroup(*kind);
    }
  } else {
    ok = false;
  }

  if (const YamlField* group = map->find("group")) {
    if (auto value = r.fieldBool(*group)) {
      if (kind && !kindAllowsGroup(*kind)) {
        r.error(
            r.loc(group->key_node),
            "'group' is not allowed for kind " + std::string(kindName(*kind)),
            {"'group' applies to the kinds " + kindsWith(&KindTraits::groups)});
        ok = false;
      } else {
        entry.group = *value;
      }
    } else {
      ok = false;
    }
  }

  if (const YamlField* stub = map->find("stub")) {
    if (auto value = r.fieldString(*stub)) {
      entry.stub_loc = r.loc(stub->value);
      if (kind && !kindTraits(*kind).takes_stub) {
        r.error(r.loc(stub->key_node),
                "'stub' is only allowed for kind stub, not " +
                    std::string(kindName(*kind)));
        ok = false;
      } else if (!isIdentifier(*value)) {
        r.error(entry.stub_loc,
                "invalid stub name '" + *value + "': not a C++ identifier");
        ok = false;
      } else {
        entry.stub = *value;
      }
    } else {
      ok = false;
    }
  }

  if (const YamlField* dtypes = map->find("dtypes")) {
    entry.dtypes_loc = r.loc(dtypes->key_node);
    ok = readDtypeNames(r, *dtypes, entry.dtypes) && ok;
  }

  if (!ok) return std::nullopt;
  return entry;
}

std::optional<CustomOpEntry> readCustom(YamlReader& r, const YAML::Node& item) {
  SourceLoc at = r.loc(item);
  if (!item.IsMap()) {
    r.error(at,
            "expected a map for a custom operator entry, got " +
                YamlReader::describe(item),
            {"write an entry as {schema: \"my_op(Tensor self) -> Tensor\"}"});
    return std::nullopt;
  }
  auto map = r.readMap(item, "a custom operator entry", kCustomKeys, at);
  if (!map) return std::nullopt;

  CustomOpEntry entry;
  entry.loc = at;
  bool ok = true;
  const YamlField* schema = map->find("schema");
  if (!schema) {
    r.missingKey("schema", "a custom operator entry", at);
    ok = false;
  } else if (auto text = r.fieldString(*schema)) {
    entry.schema = *text;
    entry.schema_loc = r.contentLoc(schema->value);
  } else {
    ok = false;
  }
  if (const YamlField* meta = map->find("meta")) {
    if (auto value = r.fieldBool(*meta)) {
      entry.meta = *value;
    } else {
      ok = false;
    }
  }
  if (const YamlField* autograd = map->find("autograd")) {
    if (auto value = r.fieldBool(*autograd)) {
      entry.autograd = *value;
    } else {
      ok = false;
    }
  }
  if (const YamlField* reference = map->find("reference")) {
    if (auto value = r.fieldString(*reference)) {
      if (isDottedPythonName(*value)) {
        entry.reference = *value;
      } else {
        r.error(r.contentLoc(reference->value),
                "invalid reference '" + *value +
                    "': expected a Python callable as module.name",
                {"e.g. reference: torch.add, or my_refs.scaled_add for a "
                 "function scaled_add in the backend's tests/my_refs.py"});
        ok = false;
      }
    } else {
      ok = false;
    }
  }
  if (!ok) return std::nullopt;
  return entry;
}

// Note [Quick operators.yaml]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~
// A backend that registers every operator lists thousands of entries in
// operators.yaml, one a line: `- {op: add.Tensor, kind: kernel, group:
// false}`. yaml-cpp and the checks above take 25 to 35 ms over the 1841
// entries of every operator of torch 2.13, a large part of a whole run; the
// quick reader takes about 1 ms. It reads the layout specs are written in,
// line by line:
//   - `operators:` and `custom:` at the start of a line, once each, with
//     nothing after the colon;
//   - under `operators:`, items `- {key: value, ...}` on one line each, the
//     values plain names (letters, digits, `_`, `.`);
//   - under `custom:`, items of `key: value` lines, the schema quoted
//     ("..." without `\` or `"`, or '...' without `'`), meta and autograd
//     true or false;
//   - blank lines and comments anywhere.
// Anything else, and anything the full reader would report (an unknown or
// repeated key, a value of the wrong type, a bad name or kind, a repeated
// operator), makes it give up: parseOperatorsSpec then reads the file with
// yaml-cpp, so every diagnostic still comes from one reader. For the files
// it accepts, the result, locations included, is the full reader's (a test
// holds the two readers to that over every spec in the repository).
class QuickReader {
 public:
  QuickReader(std::string_view text, const std::string& path)
      : text_(text), path_(path) {}

  std::optional<OperatorsSpec> read() {
    // Tabs, carriage returns and other control bytes are left to yaml-cpp.
    for (char c : text_) {
      if ((static_cast<unsigned char>(c) < ' ' && c != '\n') || c == 0x7f) {
        return std::nullopt;
      }
    }
    spec_.loc = SourceLoc{path_, 0, 0};
    bool seen_operators = false, seen_custom = false;
    Section section = Section::kNone;
    int item_indent = -1;
    for (std::size_t start = 0; start < text_.size(); ++line_) {
      std::size_t end = text_.find('\n', start);
      if (end == std::string_view::npos) end = text_.size();
      line_text_ = text_.substr(start, end - start);
      start = end + 1;
      const std::size_t indent = line_text_.find_first_not_of(' ');
      if (indent == std::string_view::npos || line_text_[indent] == '#') {
        continue;
      }
      if (indent == 0 && line_text_[0] != '-') {
        // A top-level key; it closes the open custom item.
        if (!closeCustom()) return std::nullopt;
        std::size_t at = 0;
        std::string_view key = name(at);
        if (key.empty() || !take(at, ':') || !restIsEmpty(at)) {
          return std::nullopt;
        }
        bool& seen = key == "operators" ? seen_operators : seen_custom;
        if ((key != "operators" && key != "custom") || seen) {
          return std::nullopt;
        }
        seen = true;
        section = key == "operators" ? Section::kOperators : Section::kCustom;
        if (section == Section::kOperators) {
          spec_.operators_loc = SourceLoc{path_, line_, 1};
        }
        item_indent = -1;
        continue;
      }
      const bool item = line_text_.substr(indent).starts_with("- ");
      if (item) {
        if (item_indent == -1) item_indent = static_cast<int>(indent);
        if (static_cast<int>(indent) != item_indent) return std::nullopt;
      }
      std::size_t at = indent;
      if (section == Section::kOperators && item) {
        at += 2;
        skipSpaces(at);
        if (!operatorEntry(at)) return std::nullopt;
      } else if (section == Section::kCustom && item) {
        if (!closeCustom()) return std::nullopt;
        at += 2;
        skipSpaces(at);
        custom_indent_ = at;
        custom_.emplace();
        custom_->loc = SourceLoc{path_, line_, static_cast<int>(at) + 1};
        if (!customField(at)) return std::nullopt;
      } else if (section == Section::kCustom && custom_ &&
                 indent == custom_indent_) {
        if (!customField(at)) return std::nullopt;
      } else {
        return std::nullopt;
      }
    }
    if (!seen_operators || !closeCustom()) return std::nullopt;
    return std::move(spec_);
  }

 private:
  enum class Section { kNone, kOperators, kCustom };

  SourceLoc locAt(std::size_t column) const {
    return SourceLoc{path_, line_, static_cast<int>(column) + 1};
  }

  void skipSpaces(std::size_t& at) const {
    while (at < line_text_.size() && line_text_[at] == ' ')
      ++at;
  }

  bool take(std::size_t& at, char c) const {
    if (at >= line_text_.size() || line_text_[at] != c) return false;
    ++at;
    return true;
  }

  /// Letters, digits, `_` and `.`: keys and plain values alike.
  std::string_view name(std::size_t& at) const {
    const std::size_t from = at;
    while (at < line_text_.size()) {
      const char c = line_text_[at];
      if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' &&
          c != '.') {
        break;
      }
      ++at;
    }
    return line_text_.substr(from, at - from);
  }

  /// After a value: nothing, or a comment after a space.
  bool restIsEmpty(std::size_t at) const {
    const std::size_t from = at;
    skipSpaces(at);
    return at == line_text_.size() || (line_text_[at] == '#' && at > from);
  }

  /// `key: ` and its key; empty when the line does not continue so.
  std::string_view key(std::size_t& at) const {
    std::string_view k = name(at);
    if (k.empty() || !take(at, ':') || !take(at, ' ')) return {};
    skipSpaces(at);
    return k;
  }

  /// Plain scalars YAML reads as something other than a string.
  static bool isStringLike(std::string_view value) {
    static const std::vector<std::string_view> kOther = {
        "true",  "True", "TRUE", "false", "False",
        "FALSE", "null", "Null", "NULL"};
    return std::find(kOther.begin(), kOther.end(), value) == kOther.end();
  }

  static std::optional<bool> boolean(std::string_view value) {
    if (value == "true" || value == "True" || value == "TRUE") return true;
    if (value == "false" || value == "False" || value == "FALSE") {
      return false;
    }
    return std::nullopt;
  }

  /// `[NAME, NAME, ...]` of known, distinct dtype names at `at`.
  bool dtypeList(std::size_t& at, std::vector<std::string>& out) const {
    if (!take(at, '[')) return false;
    const std::vector<std::string>& known = knownDtypeNames();
    do {
      skipSpaces(at);
      const std::string value(name(at));
      if (std::find(known.begin(), known.end(), value) == known.end() ||
          std::find(out.begin(), out.end(), value) != out.end()) {
        return false;
      }
      out.push_back(value);
      skipSpaces(at);
    } while (take(at, ','));
    return take(at, ']');
  }

  /// `{op: NAME, kind: KIND[, group: BOOL][, stub: NAME][, dtypes: [...]]}`
  /// at `at`.
  bool operatorEntry(std::size_t at) {
    struct Field {
      std::optional<std::string_view> value;
      std::size_t at = 0;
    };
    Field op, kind, group, stub;
    OperatorEntry entry;
    entry.loc = locAt(at);
    entry.dtypes_loc = entry.loc;
    if (!take(at, '{')) return false;
    do {
      skipSpaces(at);
      const std::size_t key_at = at;
      const std::string_view k = key(at);
      if (k == "dtypes") {
        if (!entry.dtypes.empty() || !dtypeList(at, entry.dtypes)) return false;
        entry.dtypes_loc = locAt(key_at);
        skipSpaces(at);
        continue;
      }
      Field* field = k == "op"      ? &op
                     : k == "kind"  ? &kind
                     : k == "group" ? &group
                     : k == "stub"  ? &stub
                                    : nullptr;
      if (field == nullptr || field->value) return false;
      field->at = at;
      field->value = name(at);
      if (field->value->empty()) return false;
      if (field != &group && !isStringLike(*field->value)) return false;
      skipSpaces(at);
    } while (take(at, ','));
    if (!take(at, '}') || !restIsEmpty(at) || !op.value || !kind.value) {
      return false;
    }

    const std::optional<OpKind> parsed = parseKind(*kind.value);
    if (!isOperatorName(*op.value) || !parsed) return false;
    entry.op = std::string(*op.value);
    splitOperatorName(entry);
    entry.op_loc = locAt(op.at);
    entry.kind = *parsed;
    entry.kind_loc = locAt(kind.at);
    entry.group = kindAllowsGroup(*parsed);
    entry.stub_loc = entry.loc;
    if (group.value) {
      const std::optional<bool> value = boolean(*group.value);
      if (!value || !kindAllowsGroup(*parsed)) return false;
      entry.group = *value;
    }
    if (stub.value) {
      if (!kindTraits(*parsed).takes_stub || !isIdentifier(*stub.value)) {
        return false;
      }
      entry.stub = std::string(*stub.value);
      entry.stub_loc = locAt(stub.at);
    }
    if (!seen_.insert(entry.op).second) return false;
    spec_.operators.push_back(std::move(entry));
    return true;
  }

  /// One `key: value` line of a custom item, at `at`.
  bool customField(std::size_t at) {
    std::string_view k = key(at);
    if (!seen_keys_.insert(std::string(k)).second) return false;
    if (k == "schema") {
      const char quote = at < line_text_.size() ? line_text_[at] : '\0';
      if (quote != '"' && quote != '\'') return false;
      const std::size_t close = line_text_.find(quote, at + 1);
      if (close == std::string_view::npos || !restIsEmpty(close + 1)) {
        return false;
      }
      std::string_view text = line_text_.substr(at + 1, close - at - 1);
      if (quote == '"' && text.find('\\') != std::string_view::npos) {
        return false;
      }
      custom_->schema = std::string(text);
      custom_->schema_loc = locAt(at + 1);
      return true;
    }
    if (k == "reference") {
      const std::string_view value = name(at);
      if (!isDottedPythonName(value) || !restIsEmpty(at)) return false;
      custom_->reference = std::string(value);
      return true;
    }
    const std::optional<bool> value = boolean(name(at));
    if (!value || !restIsEmpty(at)) return false;
    if (k == "meta") {
      custom_->meta = *value;
    } else if (k == "autograd") {
      custom_->autograd = *value;
    } else {
      return false;
    }
    return true;
  }

  /// Ends the open custom item: it needs a schema.
  bool closeCustom() {
    if (!custom_) return true;
    const bool ok = seen_keys_.count("schema") > 0;
    if (ok) spec_.custom.push_back(std::move(*custom_));
    custom_.reset();
    seen_keys_.clear();
    return ok;
  }

  std::string_view text_;
  const std::string& path_;
  OperatorsSpec spec_;
  int line_ = 1;
  std::string_view line_text_;
  std::set<std::string, std::less<>> seen_;
  std::optional<CustomOpEntry> custom_;
  std::size_t custom_indent_ = 0;
  std::set<std::string> seen_keys_;
};

}  // namespace

const std::vector<KindTraits>& kindTraitsTable() {
  static const std::vector<KindTraits> kTable = {
      {.kind = OpKind::kBuiltin,
       .name = "builtin",
       .builtin_set = true,
       .emitter = "runtime"},
      {.kind = OpKind::kKernel,
       .name = "kernel",
       .groups = true,
       .user_kernel = true,
       .emitter = "operators"},
      {.kind = OpKind::kStub,
       .name = "stub",
       .takes_stub = true,
       .host_code = true,
       .emitter = "operators"},
      {.kind = OpKind::kEmulate,
       .name = "emulate",
       .groups = true,
       .needs_cpu_kernel = true,
       .cpu_runs = "on device memory",
       .host_code = true,
       .host_copies = true,
       .emitter = "operators"},
      {.kind = OpKind::kFallback,
       .name = "fallback",
       .groups = true,
       .needs_cpu_kernel = true,
       .cpu_runs = "on copies",
       .emitter = "operators"},
      {.kind = OpKind::kCustom,
       .name = "custom",
       .listed = false,
       .user_kernel = true,
       .emitter = "operators"},
  };
  return kTable;
}

const KindTraits& kindTraits(OpKind kind) {
  const auto& table = kindTraitsTable();
  const auto i = static_cast<std::size_t>(kind);
  if (i >= table.size() || table[i].kind != kind) {
    throw AccgenError(ExitCode::kInternal,
                      "registration kind " + std::to_string(i) +
                          " has no row in kindTraitsTable()");
  }
  return table[i];
}

std::string_view kindName(OpKind kind) {
  return kindTraits(kind).name;
}

bool kindAllowsGroup(OpKind kind) {
  return kindTraits(kind).groups;
}

std::optional<OperatorsSpec> parseOperatorsSpec(std::string_view text,
                                                const std::string& path,
                                                DiagnosticEngine& diags) {
  if (auto spec = readOperatorsSpecQuickly(text, path)) return spec;
  return readOperatorsSpecWithYamlCpp(text, path, diags);
}

std::optional<OperatorsSpec> readOperatorsSpecQuickly(std::string_view text,
                                                      const std::string& path) {
  return QuickReader(text, path).read();
}

std::optional<OperatorsSpec> readOperatorsSpecWithYamlCpp(
    std::string_view text, const std::string& path, DiagnosticEngine& diags) {
  YamlReader r(path, text, diags);
  if (!r.ok()) return std::nullopt;

  OperatorsSpec spec;
  spec.loc = SourceLoc{path, 0, 0};
  auto map = r.readMap(r.root(), "operators.yaml", kOperatorsTopKeys, spec.loc);
  if (!map) return std::nullopt;

  if (const YamlField* ops = map->find("operators")) {
    spec.operators_loc = r.loc(ops->key_node);
    if (expectSequence(r, *ops,
                       "write one entry per line: - {op: mm, kind: kernel}")) {
      // Later entries for the same operator are reported against the first.
      std::map<std::string, SourceLoc, std::less<>> seen;
      for (const auto& item : ops->value) {
        auto entry = readEntry(r, item);
        if (!entry) continue;
        auto [it, inserted] = seen.emplace(entry->op, entry->op_loc);
        if (!inserted) {
          r.error(entry->op_loc, "duplicate operator '" + entry->op + "'",
                  {"first listed at " + it->second.str()});
          continue;
        }
        spec.operators.push_back(std::move(*entry));
      }
    }
  } else {
    r.missingKey("operators", "operators.yaml", r.loc(r.root()));
  }

  if (const YamlField* custom = map->find("custom")) {
    if (expectSequence(r, *custom,
                       "write one entry per line: - {schema: \"...\"}")) {
      for (const auto& item : custom->value) {
        if (auto entry = readCustom(r, item)) {
          spec.custom.push_back(std::move(*entry));
        }
      }
    }
  }

  if (r.errorCount() > 0) return std::nullopt;
  return spec;
}

}  // namespace accgen::spec
