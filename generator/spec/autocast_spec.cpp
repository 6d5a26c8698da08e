// autocast.yaml: the lower-precision dtype, the operators of each c10
// autocast cast policy, and the operators autocast refuses (`banned`, each
// with the message it raises).
#include <map>

#include "generator/spec/names.h"
#include "generator/spec/spec.h"
#include "generator/spec/yaml_reader.h"

namespace accgen::spec {
namespace {

const std::vector<std::string> kAutocastTopKeys = {"dtype", "policies"};
const std::vector<std::string> kDtypes = {"float16", "bfloat16"};
const std::vector<std::string> kPolicyKeys = {
    "lower_precision_fp", "fp32",    "fp32_set_opt_dtype",
    "fp32_append_dtype",  "promote", "banned"};
const std::vector<std::string> kBannedKeys = {"op", "message"};

CastPolicy policyFromKey(std::string_view key) {
  if (key == "lower_precision_fp") return CastPolicy::kLowerPrecisionFp;
  if (key == "fp32") return CastPolicy::kFp32;
  if (key == "fp32_set_opt_dtype") return CastPolicy::kFp32SetOptDtype;
  if (key == "fp32_append_dtype") return CastPolicy::kFp32AppendDtype;
  if (key == "banned") return CastPolicy::kBanned;
  return CastPolicy::kPromote;
}

// An operator name of `policy_key`'s list at `at`; nullopt after an error.
std::optional<std::string> readOperatorName(YamlReader& r,
                                            const YAML::Node& node,
                                            const std::string& policy_key,
                                            const SourceLoc& at) {
  auto op = r.readString(node, "an operator name in '" + policy_key + "'", at);
  if (!op) return std::nullopt;
  if (!isOperatorName(*op)) {
    r.error(at, "invalid operator name '" + *op + "'",
            {"an operator is named 'name.overload', or 'name' for the "
             "overload without a name: softmax.int, mm"});
    return std::nullopt;
  }
  return op;
}

// One item of `banned:`, {op: NAME, message: TEXT}; nullopt after an error.
std::optional<AutocastEntry> readBannedEntry(YamlReader& r,
                                             const YAML::Node& item) {
  const SourceLoc at = r.loc(item);
  const std::string what = "a banned entry";
  if (!item.IsMap()) {
    r.error(
        at,
        "expected a map for " + what + ", got " + YamlReader::describe(item),
        {"write an entry as {op: binary_cross_entropy, message: \"...\"}"});
    return std::nullopt;
  }
  auto map = r.readMap(item, what, kBannedKeys, at);
  if (!map) return std::nullopt;
  AutocastEntry entry{{}, CastPolicy::kBanned, {}, at};
  bool ok = true;
  if (const YamlField* op = map->find("op")) {
    auto name = readOperatorName(r, op->value, "banned",
                                 r.valueLoc(op->key_node, op->value));
    if (name) {
      entry.op = *name;
      entry.loc = r.loc(op->value);
    }
    ok = ok && name.has_value();
  } else {
    r.missingKey("op", what, at);
    ok = false;
  }
  if (const YamlField* message = map->find("message")) {
    auto text = r.fieldString(*message);
    if (!text) {
      ok = false;
    } else if (text->empty()) {
      r.error(r.valueLoc(message->key_node, message->value),
              "empty 'message' in a banned entry",
              {"the message is the error autocast raises: say what to use "
               "instead"});
      ok = false;
    } else {
      entry.message = std::move(*text);
    }
  } else {
    r.missingKey("message", what, at);
    ok = false;
  }
  if (!ok) return std::nullopt;
  return entry;
}

}  // namespace

std::string_view dtypeName(AutocastDtype dtype) {
  return dtype == AutocastDtype::kFloat16 ? "float16" : "bfloat16";
}

std::string_view policyName(CastPolicy policy) {
  switch (policy) {
    case CastPolicy::kLowerPrecisionFp:
      return "lower_precision_fp";
    case CastPolicy::kFp32:
      return "fp32";
    case CastPolicy::kFp32SetOptDtype:
      return "fp32_set_opt_dtype";
    case CastPolicy::kFp32AppendDtype:
      return "fp32_append_dtype";
    case CastPolicy::kPromote:
      return "promote";
    case CastPolicy::kBanned:
      return "banned";
  }
  return "?";
}

std::optional<AutocastSpec> parseAutocastSpec(std::string_view text,
                                              const std::string& path,
                                              DiagnosticEngine& diags) {
  YamlReader r(path, text, diags);
  if (!r.ok()) return std::nullopt;

  AutocastSpec spec;
  spec.present = true;
  spec.loc = SourceLoc{path, 0, 0};
  // An empty autocast.yaml is the same as none.
  if (r.root().IsNull()) return spec;
  auto map = r.readMap(r.root(), "autocast.yaml", kAutocastTopKeys, spec.loc);
  if (!map) return std::nullopt;

  if (const YamlField* dtype = map->find("dtype")) {
    if (auto value = r.fieldString(*dtype)) {
      if (*value == "float16") {
        spec.dtype = AutocastDtype::kFloat16;
      } else if (*value == "bfloat16") {
        spec.dtype = AutocastDtype::kBFloat16;
      } else {
        std::string message = "unknown autocast dtype '" + *value + "'";
        std::string near = nearestName(*value, kDtypes);
        if (!near.empty()) message += "; did you mean '" + near + "'?";
        r.error(r.loc(dtype->value), message,
                {"allowed values: float16, bfloat16"});
      }
    }
  }

  if (const YamlField* policies = map->find("policies")) {
    auto policy_map =
        policies->value.IsNull()
            ? std::optional<YamlMap>(YamlMap())
            : r.readMap(policies->value, "'policies'", kPolicyKeys,
                        r.valueLoc(policies->key_node, policies->value));
    if (policy_map) {
      for (const auto& f : policy_map->fields()) {
        if (f.value.IsNull()) continue;
        if (!f.value.IsSequence()) {
          const bool banned = f.key == "banned";
          r.error(
              r.loc(f.value),
              "expected a sequence of " +
                  std::string(banned ? "banned entries" : "operator names") +
                  " for '" + f.key + "', got " + YamlReader::describe(f.value),
              {banned ? "write banned: [{op: binary_cross_entropy, "
                        "message: \"...\"}]"
                      : "write " + f.key + ": [mm, addmm]"});
          continue;
        }
        CastPolicy policy = policyFromKey(f.key);
        for (const auto& item : f.value) {
          if (policy == CastPolicy::kBanned) {
            if (auto entry = readBannedEntry(r, item))
              spec.entries.push_back(std::move(*entry));
            continue;
          }
          SourceLoc at = r.loc(item);
          if (auto op = readOperatorName(r, item, f.key, at))
            spec.entries.push_back(AutocastEntry{*op, policy, {}, at});
        }
      }
    }
    // An operator gets one cast policy; a second listing is reported against
    // the first wherever it is.
    std::vector<AutocastEntry> unique;
    std::map<std::string, std::size_t, std::less<>> first;
    for (auto& e : spec.entries) {
      auto [it, inserted] = first.emplace(e.op, unique.size());
      if (!inserted) {
        const AutocastEntry& prev = unique[it->second];
        r.error(e.loc,
                "operator '" + e.op + "' is listed twice in autocast.yaml",
                {"first listed under '" + std::string(policyName(prev.policy)) +
                     "' at " + prev.loc.str(),
                 "an operator has one cast policy (or is banned)"});
        continue;
      }
      unique.push_back(std::move(e));
    }
    spec.entries = std::move(unique);
  }

  if (r.errorCount() > 0) return std::nullopt;
  return spec;
}

}  // namespace accgen::spec
