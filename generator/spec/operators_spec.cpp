// operators.yaml: the aten operators the backend registers (with their
// registration kinds) and the backend's own custom operators.
#include <map>

#include "generator/spec/names.h"
#include "generator/spec/spec.h"
#include "generator/spec/yaml_reader.h"

namespace accgen::spec {
namespace {

const std::vector<std::string> kTopKeys = {"operators", "custom"};
const std::vector<std::string> kEntryKeys = {"op", "kind", "group", "stub"};
const std::vector<std::string> kCustomKeys = {"schema", "meta", "autograd"};
const std::vector<std::string> kKindNames = {"builtin", "kernel", "stub",
                                             "emulate", "fallback"};

std::optional<OpKind> parseKind(std::string_view s) {
  if (s == "builtin") return OpKind::kBuiltin;
  if (s == "kernel") return OpKind::kKernel;
  if (s == "stub") return OpKind::kStub;
  if (s == "emulate") return OpKind::kEmulate;
  if (s == "fallback") return OpKind::kFallback;
  return std::nullopt;
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
      std::size_t dot = name->find('.');
      entry.name = name->substr(0, dot);
      if (dot != std::string::npos) entry.overload = name->substr(dot + 1);
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
      std::string near = nearestName(*text, kKindNames);
      if (!near.empty()) message += "; did you mean '" + near + "'?";
      std::vector<std::string> notes = {"kinds: " + joinNames(kKindNames)};
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
            {"'group' applies to the kinds kernel, emulate and fallback"});
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
      if (kind && *kind != OpKind::kStub) {
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
  if (!ok) return std::nullopt;
  return entry;
}

}  // namespace

std::string_view kindName(OpKind kind) {
  switch (kind) {
    case OpKind::kBuiltin:
      return "builtin";
    case OpKind::kKernel:
      return "kernel";
    case OpKind::kStub:
      return "stub";
    case OpKind::kEmulate:
      return "emulate";
    case OpKind::kFallback:
      return "fallback";
  }
  return "?";
}

bool kindAllowsGroup(OpKind kind) {
  return kind == OpKind::kKernel || kind == OpKind::kEmulate ||
         kind == OpKind::kFallback;
}

std::optional<OperatorsSpec> parseOperatorsSpec(std::string_view text,
                                                const std::string& path,
                                                DiagnosticEngine& diags) {
  YamlReader r(path, text, diags);
  if (!r.ok()) return std::nullopt;

  OperatorsSpec spec;
  spec.loc = SourceLoc{path, 0, 0};
  auto map = r.readMap(r.root(), "operators.yaml", kTopKeys, spec.loc);
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
