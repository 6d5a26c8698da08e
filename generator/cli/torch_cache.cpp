// The torch-location cache (Note [Torch cache] in torch_cache.h).
#include "generator/cli/torch_cache.h"

#include <unistd.h>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "generator/support/io.h"
#include "generator/write/writer.h"

namespace accgen::cli {
namespace {

namespace fs = std::filesystem;

std::string envOr(const char* name, const std::string& fallback) {
  const char* v = std::getenv(name);
  return v && *v ? v : fallback;
}

fs::path cacheDir() {
  std::string xdg = envOr("XDG_CACHE_HOME", "");
  if (!xdg.empty()) return fs::path(xdg) / "accgen";
  return fs::path(envOr("HOME", "/tmp")) / ".cache" / "accgen";
}

/// "size:mtime" of a file, or "" when it cannot be read.
std::string stamp(const std::string& path) {
  std::error_code ec;
  auto size = fs::file_size(path, ec);
  if (ec) return "";
  auto mtime = fs::last_write_time(path, ec);
  if (ec) return "";
  return std::to_string(size) + ":" +
         std::to_string(mtime.time_since_epoch().count());
}

std::string stamps(const schema::TorchInstall& t) {
  return stamp(t.torch_dir + "/version.py") + "|" +
         stamp(t.native_functions_yaml);
}

}  // namespace

TorchFacts findTorchCached() {
  const bool enabled = envOr("ACCGEN_NO_CACHE", "") != "1";
  const std::string key =
      write::contentHash(envOr("ACCGEN_PYTHON", "python3") + "\n" +
                         envOr("PATH", "") + "\n" + envOr("VIRTUAL_ENV", ""));
  // The format's version is part of the name: an accgen that writes
  // another layout (stubs as a list of names before version 2) never reads
  // this one.
  const fs::path file = cacheDir() / ("torch-v2-" + key + ".json");

  if (enabled) {
    // The cache is a hint: anything but a small regular file of the right
    // shape (a FIFO, a directory, a value of another type) is a miss, read
    // without blocking (readInputFile).
    const InputFile cached = readInputFile(file.string(), 1u << 20);
    auto j = cached.status == InputFile::Status::kRead
                 ? nlohmann::json::parse(cached.text, nullptr,
                                         /*allow_exceptions=*/false)
                 : nlohmann::json();
    const auto text = [&j](const char* key) {
      const auto it = j.find(key);
      return it != j.end() && it->is_string() ? it->get<std::string>()
                                              : std::string();
    };
    if (!j.is_discarded() && j.is_object()) {
      TorchFacts facts;
      auto& t = facts.install;
      t.site_packages = text("site_packages");
      t.torch_dir = text("torch_dir");
      t.version = text("version");
      t.native_functions_yaml = text("native_functions_yaml");
      t.include_dir = text("include_dir");
      if (!t.torch_dir.empty() && text("stamps") == stamps(t)) {
        // An object of stub to header.
        const auto stubs = j.find("dispatch_stubs");
        if (stubs != j.end() && stubs->is_object()) {
          for (const auto& [name, header] : stubs->items()) {
            if (header.is_string()) {
              facts.dispatch_stubs.emplace(name, header.get<std::string>());
            }
          }
          return facts;
        }
      }
    }
  }

  TorchFacts facts;
  facts.install = schema::findTorch();
  facts.dispatch_stubs = schema::findDispatchStubs(facts.install.include_dir);
  if (enabled) {
    const auto& t = facts.install;
    nlohmann::json j = {{"site_packages", t.site_packages},
                        {"torch_dir", t.torch_dir},
                        {"version", t.version},
                        {"native_functions_yaml", t.native_functions_yaml},
                        {"include_dir", t.include_dir},
                        {"stamps", stamps(t)},
                        {"dispatch_stubs", facts.dispatch_stubs}};
    // Best effort: a cache that cannot be written only costs time.
    std::error_code ec;
    fs::create_directories(file.parent_path(), ec);
    fs::path tmp = file;
    tmp += ".tmp" + std::to_string(::getpid());
    {
      std::ofstream out(tmp);
      out << j.dump() << "\n";
    }
    fs::rename(tmp, file, ec);
    if (ec) fs::remove(tmp, ec);
  }
  return facts;
}

}  // namespace accgen::cli
