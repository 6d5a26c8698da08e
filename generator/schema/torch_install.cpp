// Locating the installed torch, and the DispatchStubs its headers declare.
//
// findTorch asks Python where the `torch` and `torchgen` packages are with
// importlib.util.find_spec, which reads the file system without running the
// packages: importing torch would cost seconds on every accgen run. The
// version comes from the text of torch/version.py for the same reason.
#include <algorithm>
#include <array>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "generator/schema/schema.h"
#include "generator/support/identifiers.h"
#include "generator/support/io.h"

namespace accgen::schema {
namespace {

namespace fs = std::filesystem;

// Printed one per line: torch's package dir, then torchgen's ("" if absent).
// Python runs with -S: processing site-packages' .pth files can cost more
// than the rest of an accgen run. The script adds the standard user and
// prefix site-packages itself, and falls back to the full site setup only
// when torch is not there (Debian dist-packages, .pth-based installs).
// A virtual environment is recognised by its pyvenv.cfg (with -S, Python
// does not apply it itself): its site-packages come first, and the base
// interpreter's only when the venv includes system site-packages.
constexpr std::string_view kLocateScript =
    "import sys, os\n"
    "v = 'python%d.%d' % sys.version_info[:2]\n"
    "venv = os.path.dirname(os.path.dirname(os.path.abspath(sys.executable)))\n"
    "cfg = os.path.join(venv, 'pyvenv.cfg')\n"
    "dirs = []\n"
    "if os.path.isfile(cfg):\n"
    "    dirs.append(os.path.join(venv, 'lib', v, 'site-packages'))\n"
    "    with open(cfg) as f:\n"
    "        text = f.read().replace(' ', '').lower()\n"
    "    system = 'include-system-site-packages=true' in text\n"
    "else:\n"
    "    system = True\n"
    "if system:\n"
    "    if not os.environ.get('PYTHONNOUSERSITE'):\n"
    "        dirs.append(os.path.expanduser(os.path.join('~', '.local', 'lib', "
    "v, 'site-packages')))\n"
    "    dirs.append(os.path.join(sys.base_prefix, 'lib', v, "
    "'site-packages'))\n"
    "sys.path.extend(d for d in dirs if os.path.isdir(d))\n"
    "import importlib.util as u\n"
    "def loc(n):\n"
    "    try:\n"
    "        s = u.find_spec(n)\n"
    "    except Exception:\n"
    "        s = None\n"
    "    if s is None or not s.submodule_search_locations:\n"
    "        return ''\n"
    "    return list(s.submodule_search_locations)[0]\n"
    "if not loc('torch'):\n"
    "    import site\n"
    "    site.main()\n"
    "print(loc('torch'))\n"
    "print(loc('torchgen'))\n";

[[noreturn]] void fail(const std::string& message) {
  throw AccgenError(ExitCode::kInvalidInput, "error: " + message);
}

// `__version__ = '2.13.0+cpu'` -> 2.13.0+cpu
std::string versionFromText(const std::string& text) {
  std::size_t pos = text.find("__version__");
  while (pos != std::string::npos) {
    std::size_t eq = text.find_first_not_of(" \t", pos + 11);
    if (eq != std::string::npos && text[eq] == '=') {
      std::size_t q = text.find_first_not_of(" \t", eq + 1);
      if (q != std::string::npos && (text[q] == '\'' || text[q] == '"')) {
        std::size_t end = text.find(text[q], q + 1);
        if (end != std::string::npos) return text.substr(q + 1, end - q - 1);
      }
    }
    pos = text.find("__version__", pos + 1);
  }
  return "";
}

}  // namespace

std::string readTorchVersion(const std::string& version_py) {
  return versionFromText(readFile(version_py).value_or(""));
}

TorchInstall findTorch() {
  const char* env = std::getenv("ACCGEN_PYTHON");
  std::string python = env && *env ? env : "python3";
  auto out = captureCommand(shellQuote(python) + " -S -c " +
                            shellQuote(kLocateScript) + " 2>/dev/null");
  if (!out) {
    fail("cannot run Python ('" + python +
         "') to locate torch; set ACCGEN_PYTHON to the interpreter that has "
         "torch installed");
  }
  std::istringstream lines(*out);
  std::string torch_dir, torchgen_dir;
  std::getline(lines, torch_dir);
  std::getline(lines, torchgen_dir);
  if (torch_dir.empty()) {
    fail(
        "torch is not installed for '" + python +
        "'; install torch or set ACCGEN_PYTHON to the interpreter that has it");
  }
  TorchInstall t;
  t.torch_dir = torch_dir;
  t.site_packages = fs::path(torch_dir).parent_path().string();
  t.include_dir = (fs::path(torch_dir) / "include").string();
  fs::path version_py = fs::path(torch_dir) / "version.py";
  t.version = readTorchVersion(version_py.string());
  if (t.version.empty()) {
    fail("cannot read the torch version from " + version_py.string());
  }
  if (torchgen_dir.empty()) {
    fail("torchgen is not installed next to torch " + t.version +
         "; native_functions.yaml ships with it (pass --schemas FILE instead)");
  }
  fs::path yaml = fs::path(torchgen_dir) / "packaged" / "ATen" / "native" /
                  "native_functions.yaml";
  if (!fs::exists(yaml)) {
    fail("torchgen has no " + yaml.string() +
         "; pass --schemas FILE with the native_functions.yaml to use");
  }
  t.native_functions_yaml = yaml.string();
  return t;
}

namespace {

// Appends the names of DECLARE_DISPATCH(fn_type, name) uses in one header.
// Comments, string literals and preprocessor lines (the macro's own
// #define) are skipped; the arguments split at commas outside parentheses,
// exactly as the preprocessor splits them.
void scanHeader(const std::string& text, const std::string& header,
                DispatchStubs& out) {
  constexpr std::string_view kMacro = "DECLARE_DISPATCH";
  const std::size_t n = text.size();
  std::size_t i = 0;
  bool line_start = true;
  while (i < n) {
    char c = text[i];
    if (c == '\n') {
      line_start = true;
      ++i;
      continue;
    }
    if (c == ' ' || c == '\t') {
      ++i;
      continue;
    }
    if (line_start && c == '#') {
      // Skip the directive with its backslash continuations.
      while (i < n && text[i] != '\n') {
        if (text[i] == '\\' && i + 1 < n && text[i + 1] == '\n') ++i;
        ++i;
      }
      continue;
    }
    line_start = false;
    if (c == '/' && i + 1 < n && text[i + 1] == '/') {
      while (i < n && text[i] != '\n')
        ++i;
      continue;
    }
    if (c == '/' && i + 1 < n && text[i + 1] == '*') {
      std::size_t end = text.find("*/", i + 2);
      i = end == std::string::npos ? n : end + 2;
      continue;
    }
    if (c == '"' || c == '\'') {
      ++i;
      while (i < n && text[i] != c && text[i] != '\n') {
        if (text[i] == '\\') ++i;
        ++i;
      }
      ++i;
      continue;
    }
    if (!isIdentChar(c)) {
      ++i;
      continue;
    }
    std::size_t start = i;
    while (i < n && isIdentChar(text[i]))
      ++i;
    if (std::string_view(text).substr(start, i - start) != kMacro) continue;
    std::size_t p = i;
    while (p < n && std::isspace(static_cast<unsigned char>(text[p])))
      ++p;
    if (p >= n || text[p] != '(') continue;
    int depth = 0;
    std::size_t last_comma = std::string::npos, close = std::string::npos;
    for (std::size_t q = p; q < n; ++q) {
      if (text[q] == '(') {
        ++depth;
      } else if (text[q] == ')') {
        if (--depth == 0) {
          close = q;
          break;
        }
      } else if (text[q] == ',' && depth == 1) {
        last_comma = q;
      }
    }
    if (close == std::string::npos || last_comma == std::string::npos) break;
    std::string_view name =
        std::string_view(text).substr(last_comma + 1, close - last_comma - 1);
    while (!name.empty() &&
           std::isspace(static_cast<unsigned char>(name.front()))) {
      name.remove_prefix(1);
    }
    while (!name.empty() &&
           std::isspace(static_cast<unsigned char>(name.back()))) {
      name.remove_suffix(1);
    }
    if (!name.empty() && std::all_of(name.begin(), name.end(), isIdentChar)) {
      out.emplace(name, header);
    }
    i = close + 1;
  }
}

}  // namespace

DispatchStubs findDispatchStubs(const std::string& aten_include_dir) {
  fs::path root(aten_include_dir);
  // Accept torch/include, torch/include/ATen or ATen/native itself.
  if (fs::is_directory(root / "ATen" / "native")) {
    root = root / "ATen" / "native";
  } else if (fs::is_directory(root / "native")) {
    root = root / "native";
  }
  std::error_code ec;
  fs::recursive_directory_iterator it(root, ec), end;
  if (ec) {
    fail("cannot read ATen headers under " + aten_include_dir + ": " +
         ec.message());
  }
  // Relative paths in a fixed order: directory listings have none.
  std::vector<std::string> headers;
  for (; it != end; it.increment(ec)) {
    if (ec) break;
    if (!it->is_regular_file() || it->path().extension() != ".h") continue;
    headers.push_back(it->path().lexically_relative(root).generic_string());
  }
  std::sort(headers.begin(), headers.end());
  DispatchStubs stubs;
  for (const std::string& header : headers) {
    std::string text = readFile((root / header).string()).value_or("");
    if (text.find("DECLARE_DISPATCH") == std::string::npos) continue;
    scanHeader(text, "ATen/native/" + header, stubs);
  }
  return stubs;
}

}  // namespace accgen::schema
