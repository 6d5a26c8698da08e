// `accgen init NAME`: the project's specs, README, tests and CI workflow
// come from templates/init/ (user-owned from then on), then the backend is
// generated into the same directory exactly as `accgen generate` would.
#include "generator/cli/init.h"

#include <unistd.h>
#include <filesystem>
#include <fstream>

#include "generator/cli/generate.h"
#include "generator/cli/pipeline.h"
#include "generator/spec/names.h"
#include "generator/support/diagnostics.h"
#include "generator/upgrade/schema_source.h"

namespace accgen::cli {
namespace {

namespace fs = std::filesystem;

/// The project files init writes once: template → path in the project.
struct InitFile {
  const char* template_name;
  std::string path;
};

std::vector<InitFile> initFiles(const std::string& device) {
  return {
      {"init/specs/backend.yaml.mustache", "specs/backend.yaml"},
      {"init/specs/operators.yaml.mustache", "specs/operators.yaml"},
      {"init/specs/autocast.yaml.mustache", "specs/autocast.yaml"},
      {"init/README.md.mustache", "README.md"},
      {"init/tests/test_backend.py.mustache", "tests/test_" + device + ".py"},
      {"init/ci/github-workflow.yml.mustache",
       ".github/workflows/" + device + ".yml"},
  };
}

void writeNew(const fs::path& path, const std::string& content) {
  fs::create_directories(path.parent_path());
  std::ofstream out(path, std::ios::binary);
  out << content;
  if (!out) {
    throw AccgenError(ExitCode::kInternal,
                      "cannot write '" + path.string() + "'");
  }
}

/// Whether this accgen runs from the accgen wheel (pyproject.toml): its
/// install prefix is the Python package's directory.
bool installedAsWheel() {
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  return !ec && fs::is_regular_file(
                    exe.parent_path().parent_path() / "__init__.py", ec);
}

std::string initTorchVersion(const SchemaLocation& where) {
  if (where.arg.empty()) return where.torch->install.version;
  return upgrade::loadSchemaSource(where.arg, "").torch_version;
}

}  // namespace

int runInit(const InitOptions& options, std::ostream& out, std::ostream& err) {
  if (std::string problem = spec::deviceNameProblem(options.name);
      !problem.empty()) {
    throw AccgenError(
        ExitCode::kInvalidInput,
        "error: invalid device name '" + options.name + "': " + problem);
  }
  const fs::path dir =
      options.dir.empty() ? fs::path(options.name) : fs::path(options.dir);
  if (fs::exists(dir) && (!fs::is_directory(dir) || !fs::is_empty(dir))) {
    throw AccgenError(ExitCode::kRefusedOverwrite,
                      dir.string() +
                          ": error: directory exists and is not empty; "
                          "`accgen init` only creates new projects (use "
                          "`accgen generate` inside an existing one)");
  }

  const SchemaLocation where = locateSchemas(options.schemas);
  // The project's own files need the torch version before the schemas are
  // loaded (generate loads them): the installed torch's, or the one the
  // --schemas file or version belongs to.
  const std::string torch_version = initTorchVersion(where);
  render::TemplateSet templates(render::defaultTemplateDir());
  const std::string plain_version =
      torch_version.substr(0, torch_version.find('+'));
  const nlohmann::json context = {
      {"device", options.name},           {"package", "torch_" + options.name},
      {"namespace", options.name},        {"torch_version", plain_version},
      {"accgen_version", ACCGEN_VERSION},
  };

  // Build the whole project beside its final place, then rename it in.
  fs::path parent = fs::absolute(dir).parent_path();
  fs::create_directories(parent);
  const fs::path staging =
      parent / ("." + dir.filename().string() + ".accgen-init-" +
                std::to_string(::getpid()));
  fs::remove_all(staging);
  try {
    for (const auto& f : initFiles(options.name)) {
      writeNew(staging / f.path, templates.render(f.template_name, context));
    }
    // Generated exactly as `accgen generate` inside the project would,
    // lock and input fingerprint included: right after init, generate
    // writes nothing and generate --check passes.
    GenerateOptions generate_options;
    generate_options.specs = (staging / "specs").string();
    generate_options.out = staging.string();
    generate_options.schemas = options.schemas;
    GenerateOutcome outcome = generate(generate_options, where, out, err);
    if (!outcome.written) {
      throw AccgenError(static_cast<ExitCode>(outcome.exit_code),
                        "error: the new project could not be generated");
    }
    const write::WriteReport& report = *outcome.written;
    if (fs::exists(dir)) fs::remove(dir);  // empty, checked above
    fs::rename(staging, dir);
    out << "created backend '" << options.name << "' in " << dir.string()
        << ": " << report.written.size() << " generated files, "
        << report.created_user.size()
        << (report.created_user.size() == 1 ? " file" : " files")
        << " of yours (kernels/, tuning.cpp)\n"
        << "next: pip install "
        // Installed as the accgen wheel, pip brings accgen and torch into
        // the build; built from source, CMake finds accgen's package from
        // the bin/ of this accgen on PATH, in the current environment.
        << (installedAsWheel() ? "" : "--no-build-isolation ") << dir.string()
        << "\n";
  } catch (...) {
    std::error_code ec;
    fs::remove_all(staging, ec);
    throw;
  }
  return 0;
}

}  // namespace accgen::cli
