// The shared pipeline of the commands.
#include "generator/cli/pipeline.h"

#include <unistd.h>

#include <algorithm>
#include <filesystem>

#include "generator/cli/torch_cache.h"
#include "generator/spec/spec.h"
#include "generator/support/diagnostics.h"
#include "generator/support/io.h"
#include "generator/support/parallel.h"
#include "generator/support/torch_releases.h"
#include "generator/upgrade/lock.h"
#include "generator/upgrade/schema_source.h"

namespace accgen::cli {

SchemaLocation locateSchemas(const std::string& schemas_arg) {
  SchemaLocation where;
  where.arg = schemas_arg;
  if (schemas_arg.empty()) {
    where.torch = findTorchCached();
    where.fingerprint_file = where.torch->install.native_functions_yaml;
    where.fingerprint_version = where.torch->install.version;
    return where;
  }
  // A native_functions.yaml path, or a torch version (installed, or a
  // wheel in $ACCGEN_WHEEL_DIR): docs/upgrading.md. Only a file is
  // fingerprinted.
  if (std::filesystem::is_regular_file(schemas_arg)) {
    where.fingerprint_file = schemas_arg;
  }
  // The installed torch still provides the ATen headers (DispatchStubs).
  try {
    where.torch = findTorchCached();
  } catch (const AccgenError&) {
    where.torch.reset();
  }
  return where;
}

SchemaSource loadSchemas(const SchemaLocation& where) {
  SchemaSource source;
  if (where.torch) {
    source.torch = where.torch->install;
    source.dispatch_stubs = where.torch->dispatch_stubs;
  }
  if (where.arg.empty()) {
    source.torch_version = source.torch->version;
    source.registry = std::make_unique<schema::SchemaRegistry>(
        schema::SchemaRegistry::load(source.torch->native_functions_yaml));
  } else {
    upgrade::SchemaSource resolved = upgrade::loadSchemaSource(where.arg, "");
    source.torch_version = resolved.torch_version;
    source.registry =
        std::make_unique<schema::SchemaRegistry>(std::move(resolved.registry));
  }
  source.registry->setTorchVersion(source.torch_version);
  return source;
}

void warnIfUnsupportedTorch(const SchemaLocation& where, std::ostream& err) {
  std::string version;
  if (where.arg.empty()) {
    if (where.torch) version = where.torch->install.version;
  } else if (std::filesystem::is_regular_file(where.arg)) {
    version = upgrade::versionBesideYaml(where.arg);
  } else {
    version = where.arg;
  }
  if (auto warning = untestedTorchWarning(version)) err << *warning;
}

SchemaSource loadSchemas(const std::string& schemas_file) {
  return loadSchemas(locateSchemas(schemas_file));
}

model::Backend loadBackend(const std::string& specs_dir,
                           const SchemaSource& schemas, std::ostream& err) {
  if (!std::filesystem::is_directory(specs_dir)) {
    throw AccgenError(ExitCode::kInvalidInput,
                      specs_dir +
                          ": error: no such spec directory (give "
                          "one with --specs, or run inside a project "
                          "made by `accgen init`)");
  }
  DiagnosticEngine diags;
  auto specs = spec::loadSpecs(specs_dir, diags);
  std::optional<model::Backend> backend;
  if (specs) {
    model::BuildOptions options;
    if (schemas.torch) {
      options.torch_include_dir = schemas.torch->include_dir;
      options.dispatch_stubs = schemas.dispatch_stubs;
    }
    backend = model::buildBackend(*specs, *schemas.registry, diags, options);
  }
  diags.print(err);
  if (diags.hasErrors() || !backend) {
    throw AccgenError(ExitCode::kInvalidInput,
                      std::to_string(diags.errorCount()) +
                          (diags.errorCount() == 1 ? " error" : " errors") +
                          " in " + specs_dir + "; nothing was written");
  }
  return std::move(*backend);
}

// Note [Parallel rendering]
// ~~~~~~~~~~~~~~~~~~~~~~~~~
// Filling templates is a large part of a large run (thousands of kernel
// starters and wrappers). Files are independent, so a second thread renders
// every other file (inTwoParts) through the same TemplateSet (each template
// is parsed once, by whichever thread needs it first) and releases each
// file's data once rendered; results keep their order. Of two errors, the
// one in the even-numbered files is reported.
std::vector<write::RenderedFile> renderBackend(const model::Backend& backend,
                                               const emit::RunInfo& run,
                                               render::TemplateSet& templates,
                                               const std::string& out_dir) {
  constexpr std::size_t kParallelThreshold = 64;
  templates.setGlobals(emit::globalContext(backend, run));
  std::vector<emit::OutputFile> files = emit::emitAll(backend);
  std::vector<write::RenderedFile> rendered(files.size());
  // Existing user files are never written; skip rendering them.
  std::set<std::string> existing_user;
  if (!out_dir.empty()) {
    std::vector<std::string> user_paths;
    for (const auto& file : files) {
      if (file.user_owned) user_paths.push_back(file.path);
    }
    // After a killed run every starter is rendered: one it left cut short
    // is made again (Note [Interrupted runs] in generator/write/writer.cpp).
    if (::access((out_dir + "/" + write::kJournalName).c_str(), F_OK) != 0) {
      existing_user = existingFiles(out_dir, user_paths);
    }
  }

  auto renderEvery = [&](std::size_t first, std::size_t step) {
    for (std::size_t i = first; i < files.size(); i += step) {
      auto& file = files[i];
      rendered[i].path = file.path;
      rendered[i].user_owned = file.user_owned;
      if (file.user_owned && existing_user.count(file.path)) continue;
      file.data["source"] = file.source;
      rendered[i].content = templates.render(file.template_name, file.data);
      // Released here, while it is fresh in this thread's cache, rather
      // than all at once on one thread at the end: freeing the data of
      // thousands of kernels costs about as much as building it.
      file.data = nlohmann::json();
    }
  };

  if (files.size() < kParallelThreshold) {
    renderEvery(0, 1);
  } else {
    inTwoParts([&](int part) { renderEvery(part, 2); });
  }
  return rendered;
}

namespace {

// The running accgen itself: its code decides the output as much as the
// templates do, and a rebuilt or upgraded accgen of the same version
// (a development build, a patched install) must not take its
// predecessor's output for current. Hashed once per process; without
// /proc, the version alone.
const std::string& selfFingerprint() {
  static const std::string self =
      write::contentHash(readFile("/proc/self/exe").value_or(""));
  return self;
}

// What stands for one file in the input fingerprint: its bytes, read within
// readInputFile's bound; a file it refuses (larger than kMaxInputBytes, not
// readable) by its size and modification time, so that a stray 1 GiB file
// beside the specs costs a stat, not its bytes in memory.
std::string boundedFingerprint(const std::filesystem::path& path) {
  InputFile file = readInputFile(path.string());
  if (file.status == InputFile::Status::kRead) return std::move(file.text);
  std::error_code ec;
  const auto size = std::filesystem::file_size(path, ec);
  const auto time = std::filesystem::last_write_time(path, ec);
  return "unread " + std::to_string(ec ? 0 : size) + " " +
         std::to_string(time.time_since_epoch().count()) + " " + file.error;
}

}  // namespace

std::string inputFingerprint(const std::string& specs_dir,
                             const std::string& out_dir,
                             const std::string& schema_file,
                             const std::string& torch_version,
                             const std::string& templates_root,
                             const PendingInputFiles& pending) {
  namespace fs = std::filesystem;
  static const std::map<std::string, std::string> kNothingPending;
  std::string all = std::string("accgen ") + ACCGEN_VERSION + '\0' +
                    selfFingerprint() + '\0' + "torch " + torch_version + '\0';
  auto add = [&all](const std::string& label, const std::string& content) {
    all += label + '\0' + content + '\0';
  };
  // The files of `dir` in path order, a pending file (by its name in
  // `dir`) with its new content in place of, or beside, the one on disk.
  auto addTree = [&add](const std::string& label, const fs::path& dir,
                        bool recursive,
                        const std::map<std::string, std::string>& pending) {
    std::error_code ec;
    std::map<fs::path, const std::string*> files;
    if (fs::is_directory(dir, ec)) {
      if (recursive) {
        for (const auto& e : fs::recursive_directory_iterator(dir, ec)) {
          // The error_code form: a link loop is not a file, not an error.
          if (e.is_regular_file(ec)) files.emplace(e.path(), nullptr);
        }
      } else {
        for (const auto& e : fs::directory_iterator(dir, ec)) {
          // The lock's temporary and the writer's, left by a run killed
          // while it replaced the lock or wrote a starter kernel, are
          // accgen's own and no input.
          const std::string name = e.path().filename().string();
          if (e.is_regular_file(ec) && name != upgrade::kLockTempFileName &&
              !name.ends_with(write::kTempSuffix)) {
            files.emplace(e.path(), nullptr);
          }
        }
      }
    }
    for (const auto& [name, content] : pending)
      files[dir / name] = &content;
    // Iterated paths start with `dir`: relative to it lexically (resolving
    // links, as fs::relative does, costs a readlink per path component).
    for (const auto& [f, content] : files) {
      add(label + f.lexically_relative(dir).generic_string(),
          content ? *content : boundedFingerprint(f));
    }
  };
  add("schemas", boundedFingerprint(schema_file));
  addTree("templates/", templates_root, /*recursive=*/true, kNothingPending);
  addTree("specs/", specs_dir, /*recursive=*/false, pending.specs);
  addTree("kernels/", fs::path(out_dir) / "kernels", /*recursive=*/false,
          pending.kernels);
  return write::contentHash(all);
}

void printDiagnostics(const std::vector<Diagnostic>& diags, std::ostream& err) {
  for (const auto& d : diags)
    err << d.format();
}

nlohmann::json manifestExtra(const emit::RunInfo& run) {
  nlohmann::json extra = {{"accgen_version", ACCGEN_VERSION},
                          {"torch_version", run.torch_version}};
  if (!run.inputs.empty()) extra["inputs"] = run.inputs;
  return extra;
}

}  // namespace accgen::cli
