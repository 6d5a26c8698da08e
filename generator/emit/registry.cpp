// The emitter registry (one table) and the values shared by every template.
#include <algorithm>
#include <cctype>
#include <functional>
#include <set>

#include "generator/emit/emitter.h"
#include "generator/emit/emitters.h"
#include "generator/model/backend.h"
#include "generator/support/diagnostics.h"

namespace accgen::emit {

const std::vector<Emitter>& registry() {
  static const std::vector<Emitter> kEmitters = {
      {"runtime",
       "the runtime library's configuration, the backend's view of its API "
       "and the user-owned tuning",
       &emitRuntime},
      {"python", "the Python package over the runtime's device module",
       &emitPythonPackage},
      {"build", "CMakeLists.txt, pyproject.toml, .gitignore", &emitBuildFiles},
      {"operators",
       "operator registrations (emulate, kernel, stub, fallback, custom), "
       "autocast and user kernel starters",
       &emitOperators},
      {"conformance",
       "the conformance suite under tests/conformance/, parametrized by the "
       "specs",
       &emitConformance},
  };
  return kEmitters;
}

namespace {

std::string upper(std::string s) {
  for (char& c : s)
    c = static_cast<char>(std::toupper(c));
  return s;
}

/// "2.13.0+cpu" -> {2, 13}; {0, 0} when unknown.
std::pair<int, int> majorMinor(const std::string& version) {
  int major = 0, minor = 0;
  if (std::sscanf(version.c_str(), "%d.%d", &major, &minor) != 2) return {0, 0};
  return {major, minor};
}

}  // namespace

nlohmann::json globalContext(const model::Backend& backend,
                             const RunInfo& run) {
  auto [major, minor] = majorMinor(run.torch_version);
  std::string plain_version =
      run.torch_version.substr(0, run.torch_version.find('+'));
  return {
      {"device", backend.device()},
      {"DEVICE", upper(backend.device())},
      {"package", backend.package()},
      {"namespace", backend.cppNamespace()},
      {"device_count", backend.deviceCount()},
      {"memory_bytes", std::to_string(backend.memoryBytes())},
      {"fallback_emulate",
       backend.fallback() == spec::FallbackPolicy::kEmulate},
      {"fallback_cpu", backend.fallback() == spec::FallbackPolicy::kCpu},
      {"fallback_error", backend.fallback() == spec::FallbackPolicy::kError},
      {"features",
       {{"pinned_memory", backend.features().pinned_memory},
        {"autocast", backend.features().autocast},
        {"host_copies", backend.features().host_copies}}},
      {"torch_version", plain_version},
      // A backend is built against one torch release's C++ ABI.
      {"torch_requirement",
       plain_version.empty() ? "torch" : "torch==" + plain_version},
      {"torch_version_major", major},
      {"torch_version_minor", minor},
      {"accgen_version", ACCGEN_VERSION},
  };
}

void requireHandledKinds(
    const model::Backend& backend, std::string_view who,
    const std::function<bool(const spec::KindTraits&)>& handled) {
  auto check = [&](spec::OpKind kind, const std::string& op) {
    const spec::KindTraits& traits = spec::kindTraits(kind);
    if (handled(traits)) return;
    throw AccgenError(ExitCode::kInternal, std::string(who) +
                                               " has no files for kind " +
                                               std::string(traits.name) +
                                               " (operator '" + op + "')");
  };
  for (const auto& op : backend.operators())
    check(op.kind, op.full_name);
  for (const auto& c : backend.customOperators()) {
    check(spec::OpKind::kCustom, c.qualified_name);
  }
}

std::vector<OutputFile> emitAll(const model::Backend& backend) {
  // A kind whose emitter is not in the registry would vanish from the
  // output without a word.
  requireHandledKinds(
      backend, "the emitter registry", [](const spec::KindTraits& traits) {
        return std::any_of(
            registry().begin(), registry().end(),
            [&](const Emitter& e) { return e.name == traits.emitter; });
      });
  std::vector<OutputFile> all;
  for (const auto& emitter : registry()) {
    auto files = emitter.fn(backend);
    all.insert(all.end(), std::make_move_iterator(files.begin()),
               std::make_move_iterator(files.end()));
  }
  std::sort(all.begin(), all.end(),
            [](const auto& a, const auto& b) { return a.path < b.path; });
  for (std::size_t i = 1; i < all.size(); ++i) {
    if (all[i].path == all[i - 1].path) {
      throw AccgenError(ExitCode::kInternal,
                        "two emitters produce '" + all[i].path + "'");
    }
  }
  return all;
}

}  // namespace accgen::emit
