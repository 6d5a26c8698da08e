// backend.yaml: the device name, package and namespace, emulated device
// count and memory, fallback policy and feature switches.
#include <algorithm>
#include <limits>

#include "generator/spec/names.h"
#include "generator/spec/spec.h"
#include "generator/spec/yaml_reader.h"

namespace accgen::spec {
namespace {

const std::vector<std::string> kBackendKeys = {
    "device", "package",  "namespace", "devices",
    "memory", "fallback", "features",  "dtypes"};
const std::vector<std::string> kFeatureKeys = {"pinned_memory", "autocast",
                                               "host_copies"};
const std::vector<std::string> kFallbackValues = {"emulate", "cpu", "error"};

constexpr int kMaxDevices = 64;

void readDevice(YamlReader& r, const YamlField& f, BackendSpec& spec) {
  auto device = r.fieldString(f);
  if (!device) return;
  spec.device = *device;
  spec.device_loc = r.loc(f.value);
  std::string problem = deviceNameProblem(*device);
  if (!problem.empty()) {
    r.error(spec.device_loc,
            "invalid device name '" + *device + "': " + problem,
            {"a device name is a lower-case Python identifier without "
             "digits, e.g. 'accel' or 'my_npu'"});
  }
}

void readPackage(YamlReader& r, const YamlField& f, BackendSpec& spec) {
  auto package = r.fieldString(f);
  if (!package) return;
  spec.package = *package;
  if (!isIdentifier(*package) || isPythonKeyword(*package)) {
    r.error(r.loc(f.value),
            "invalid package name '" + *package +
                "': it must be a Python identifier that is not a keyword");
  } else if (*package == "torch") {
    r.error(r.loc(f.value), "invalid package name 'torch': it is torch's own");
  }
}

void readNamespace(YamlReader& r, const YamlField& f, BackendSpec& spec) {
  auto ns = r.fieldString(f);
  if (!ns) return;
  spec.cpp_namespace = *ns;
  std::string problem = cppNamespaceProblem(*ns);
  if (!problem.empty()) {
    r.error(r.loc(f.value), "invalid namespace '" + *ns + "': " + problem);
  }
}

void readDevices(YamlReader& r, const YamlField& f, BackendSpec& spec) {
  auto count = r.fieldInt(f);
  if (!count) return;
  if (*count < 1 || *count > kMaxDevices) {
    r.error(r.loc(f.value), "'devices' must be between 1 and " +
                                std::to_string(kMaxDevices) + ", got " +
                                std::to_string(*count));
    return;
  }
  spec.device_count = static_cast<int>(*count);
}

void readMemory(YamlReader& r, const YamlField& f, BackendSpec& spec) {
  SourceLoc at = r.valueLoc(f.key_node, f.value);
  if (!f.value.IsScalar()) {
    r.error(
        at,
        "expected a size for 'memory', got " + YamlReader::describe(f.value),
        {"a size is a byte count or a number with KiB, MiB, GiB or TiB: "
         "4GiB"});
    return;
  }
  const std::string& text = f.value.Scalar();
  auto bytes = parseMemorySize(text);
  if (!bytes) {
    std::vector<std::string> notes = {
        "a size is a positive byte count or a number with KiB, MiB, GiB or "
        "TiB: 4GiB"};
    // "4GB" and "4G" are the usual slips: sizes here are binary.
    // Matched by hand: std::regex recurses once a character.
    const std::size_t digits = text.find_first_not_of("0123456789");
    if (digits != 0 && digits != std::string::npos) {
      std::string_view suffix = std::string_view(text).substr(digits);
      if (suffix.starts_with(' ')) suffix.remove_prefix(1);
      if ((suffix.size() == 1 || (suffix.size() == 2 && suffix[1] == 'B')) &&
          std::string_view("KMGT").find(suffix[0]) != std::string_view::npos) {
        notes.push_back("did you mean '" + text.substr(0, digits) + suffix[0] +
                        "iB'?");
      }
    }
    r.error(at, "invalid memory size '" + shortenedValue(text) + "'",
            std::move(notes));
    return;
  }
  spec.memory_bytes = *bytes;
}

}  // namespace

bool readDtypeNames(YamlReader& r, const YamlField& f,
                    std::vector<std::string>& out) {
  const std::vector<std::string>& known = knownDtypeNames();
  if (!f.value.IsSequence() || f.value.size() == 0) {
    r.error(r.valueLoc(f.key_node, f.value),
            "expected a non-empty list of dtypes for 'dtypes', got " +
                YamlReader::describe(f.value),
            {"e.g. dtypes: [float32, float16, bfloat16, int64, bool]"});
    return false;
  }
  out.clear();
  bool ok = true;
  for (const YAML::Node& item : f.value) {
    auto name = r.readString(item, "a dtype", r.loc(item));
    if (!name) {
      ok = false;
      continue;
    }
    if (std::find(known.begin(), known.end(), *name) == known.end()) {
      std::string message = "unknown dtype '" + *name + "'";
      std::string near = nearestName(*name, known);
      if (!near.empty()) message += "; did you mean '" + near + "'?";
      std::string allowed;
      for (const std::string& k : known) {
        allowed += (allowed.empty() ? "" : ", ") + k;
      }
      r.error(r.loc(item), message, {"allowed values: " + allowed});
      ok = false;
      continue;
    }
    if (std::find(out.begin(), out.end(), *name) != out.end()) {
      r.error(r.loc(item), "dtype '" + *name + "' is listed twice");
      ok = false;
      continue;
    }
    out.push_back(*name);
  }
  return ok;
}

const std::vector<std::string>& knownDtypeNames() {
  static const std::vector<std::string> kNames = {
      "float32", "float64", "float16", "bfloat16", "complex64", "complex128",
      "int64",   "int32",   "int16",   "int8",     "uint8",     "bool"};
  return kNames;
}

const char* fallbackPolicyName(FallbackPolicy policy) {
  switch (policy) {
    case FallbackPolicy::kEmulate:
      return "emulate";
    case FallbackPolicy::kCpu:
      return "cpu";
    case FallbackPolicy::kError:
      return "error";
  }
  return "";
}

namespace {

void readFallback(YamlReader& r, const YamlField& f, BackendSpec& spec) {
  auto value = r.fieldString(f);
  if (!value) return;
  for (FallbackPolicy policy : {FallbackPolicy::kEmulate, FallbackPolicy::kCpu,
                                FallbackPolicy::kError}) {
    if (*value == fallbackPolicyName(policy)) {
      spec.fallback = policy;
      return;
    }
  }
  std::string message = "unknown fallback policy '" + *value + "'";
  std::string near = nearestName(*value, kFallbackValues);
  if (!near.empty()) message += "; did you mean '" + near + "'?";
  r.error(r.loc(f.value), message, {"allowed values: emulate, cpu, error"});
}

void readFeatures(YamlReader& r, const YamlField& f, BackendSpec& spec) {
  auto map = r.readMap(f.value, "'features'", kFeatureKeys,
                       r.valueLoc(f.key_node, f.value));
  if (!map) return;
  for (const auto& feature : map->fields()) {
    auto on = r.fieldBool(feature);
    if (!on) continue;
    if (feature.key == "pinned_memory") spec.features.pinned_memory = *on;
    if (feature.key == "autocast") spec.features.autocast = *on;
    if (feature.key == "host_copies") spec.features.host_copies = *on;
  }
}

}  // namespace

std::optional<std::uint64_t> parseMemorySize(std::string_view text) {
  std::size_t digits = 0;
  while (digits < text.size() && text[digits] >= '0' && text[digits] <= '9') {
    ++digits;
  }
  if (digits == 0) return std::nullopt;
  std::string_view suffix = text.substr(digits);
  int shift = 0;
  if (suffix == "KiB") {
    shift = 10;
  } else if (suffix == "MiB") {
    shift = 20;
  } else if (suffix == "GiB") {
    shift = 30;
  } else if (suffix == "TiB") {
    shift = 40;
  } else if (!suffix.empty()) {
    return std::nullopt;
  }
  // Sizes are int64 in c10; refuse anything that would not fit.
  constexpr std::uint64_t kMax = std::numeric_limits<std::int64_t>::max();
  std::uint64_t value = 0;
  for (std::size_t i = 0; i < digits; ++i) {
    std::uint64_t d = static_cast<std::uint64_t>(text[i] - '0');
    if (value > (kMax - d) / 10) return std::nullopt;
    value = value * 10 + d;
  }
  if (value == 0 || value > (kMax >> shift)) return std::nullopt;
  return value << shift;
}

std::optional<BackendSpec> parseBackendSpec(std::string_view text,
                                            const std::string& path,
                                            DiagnosticEngine& diags) {
  YamlReader r(path, text, diags);
  if (!r.ok()) return std::nullopt;

  BackendSpec spec;
  spec.loc = SourceLoc{path, 0, 0};
  auto map = r.readMap(r.root(), "backend.yaml", kBackendKeys, spec.loc);
  if (!map) return std::nullopt;

  const YamlField* package = nullptr;
  const YamlField* ns = nullptr;
  for (const auto& f : map->fields()) {
    if (f.key == "device") readDevice(r, f, spec);
    if (f.key == "package") package = &f;
    if (f.key == "namespace") ns = &f;
    if (f.key == "devices") readDevices(r, f, spec);
    if (f.key == "memory") readMemory(r, f, spec);
    if (f.key == "fallback") readFallback(r, f, spec);
    if (f.key == "features") readFeatures(r, f, spec);
    if (f.key == "dtypes") readDtypeNames(r, f, spec.dtypes);
  }
  if (!map->find("device")) {
    r.missingKey("device", "backend.yaml", r.loc(r.root()));
  }
  if (package) readPackage(r, *package, spec);
  if (ns) readNamespace(r, *ns, spec);

  // Defaults come from the device name; judge them only when the device name
  // itself was fine, so that one mistake is reported once.
  if (!spec.device.empty() && deviceNameProblem(spec.device).empty()) {
    if (!package) spec.package = "torch_" + spec.device;
    if (!ns) {
      spec.cpp_namespace = spec.device;
      std::string problem = cppNamespaceProblem(spec.device);
      if (!problem.empty()) {
        r.error(spec.device_loc,
                "device name '" + spec.device +
                    "' cannot be the default C++ namespace: " + problem,
                {"give another one with 'namespace:'"});
      }
    }
  }

  if (r.errorCount() > 0) return std::nullopt;
  return spec;
}

}  // namespace accgen::spec
