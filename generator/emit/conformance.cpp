// The conformance suite emitter: tests/conformance/ of the backend. The
// checks themselves are the runtime's (runtime/python/_conformance/,
// installed into the package as _conformance); what is generated is what
// the specs decide: the backend's facts and every function it registers, in
// backend_spec.py, and the thin pytest files that parametrize the checks
// over them.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "generator/emit/emitter.h"
#include "generator/emit/emitters.h"
#include "generator/model/backend.h"

namespace accgen::emit {
namespace {

/// `text` as a Python string literal: JSON's escapes are Python's.
std::string pyString(const std::string& text) {
  return nlohmann::json(text).dump();
}

nlohmann::json specData(const model::Backend& backend) {
  nlohmann::json operators = nlohmann::json::array();
  for (const model::Operator& op : backend.operators()) {
    for (const model::Registration& reg : op.members) {
      std::string dtypes;
      for (const std::string& dtype : op.dtypes) {
        dtypes += pyString(dtype) + ", ";
      }
      operators.push_back(
          {{"name", pyString(reg.fullName())},
           {"kind", pyString(std::string(spec::kindName(op.kind)))},
           {"form", pyString(std::string(schema::kindName(reg.role)))},
           {"listed", pyString(op.full_name)},
           {"dtypes", op.dtypes == backend.spec().dtypes
                          ? std::string("DTYPES")
                          : "(" + dtypes + ")"}});
    }
  }
  // The hook operators the runtime registers for every backend, where the
  // spec registers them no other way.
  // They compute in floating point only.
  std::string floating;
  for (const std::string& dtype : backend.spec().dtypes) {
    if (dtype.find("float") != std::string::npos) {
      floating += pyString(dtype) + ", ";
    }
  }
  for (const model::HookOperator& hook : model::hookOperators()) {
    if (floating.empty()) break;
    if (backend.findRegistration(hook.name) != nullptr) continue;
    operators.push_back({{"name", pyString(hook.name)},
                         {"kind", pyString("hook")},
                         {"form", pyString("functional")},
                         {"listed", pyString(hook.name)},
                         {"dtypes", "(" + floating + ")"}});
  }
  nlohmann::json custom = nlohmann::json::array();
  for (const model::CustomOperator& op : backend.customOperators()) {
    custom.push_back(
        {{"name", pyString(op.qualified_name)},
         {"meta", op.meta ? "True" : "False"},
         {"autograd", op.autograd ? "True" : "False"},
         {"reference", op.reference.empty() ? std::string("None")
                                            : pyString(op.reference)}});
  }
  nlohmann::json autocast = nlohmann::json::array();
  for (const model::AutocastRule& rule : backend.autocastRules()) {
    autocast.push_back(
        {{"name", pyString(rule.full_name)},
         {"policy", pyString(std::string(spec::policyName(rule.policy)))},
         {"message", pyString(rule.message)}});
  }
  nlohmann::json dtypes = nlohmann::json::array();
  for (const std::string& dtype : backend.spec().dtypes) {
    dtypes.push_back({{"name", pyString(dtype)}});
  }
  return {
      {"spec_operators", operators},
      {"spec_custom", custom},
      {"spec_autocast", autocast},
      {"spec_dtypes", dtypes},
      {"autocast_dtype",
       pyString(std::string(spec::dtypeName(backend.autocastDtype())))},
      {"fallback_policy",
       pyString(spec::fallbackPolicyName(backend.fallback()))},
      {"fallback_policy_word", spec::fallbackPolicyName(backend.fallback())},
      {"has_custom", !backend.customOperators().empty()},
      {"has_autocast", !backend.autocastRules().empty()}};
}

}  // namespace

std::vector<OutputFile> emitConformance(const model::Backend& backend) {
  std::vector<OutputFile> files;
  auto add = [&](const char* name, const char* source) {
    OutputFile file;
    file.path = std::string("tests/conformance/") + name;
    file.template_name = std::string("backend/tests/") + name + ".mustache";
    file.source = source;
    files.push_back(std::move(file));
  };
  add("backend_spec.py", "specs/*.yaml");
  add("conftest.py", "specs/backend.yaml");
  add("test_operators.py", "specs/operators.yaml");
  add("test_runtime.py", "specs/backend.yaml");
  // Note [Upstream test runner] in runtime/python/_upstream.py.
  OutputFile runner;
  runner.path = "tests/upstream/run.py";
  runner.template_name = "backend/tests/upstream_run.py.mustache";
  runner.source = "specs/backend.yaml";
  files.push_back(std::move(runner));
  const nlohmann::json data = specData(backend);
  for (OutputFile& file : files)
    file.data = data;
  return files;
}

}  // namespace accgen::emit
