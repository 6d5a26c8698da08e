// Finding a kernel's definition in a user-owned C++ file and comparing its
// parameter types with the signature the backend now expects.
//
// Note [Reading C++ without a compiler]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// This is not a C++ parser and does not try to be one. Comments, string
// literals and preprocessor lines are blanked first (keeping every line and
// column where it was); then each `<name>(` followed, after its matching
// `)`, by `{` is a definition. Its parameters split at commas outside
// brackets; each loses its default value and its trailing parameter name;
// the rest is compared token by token after dropping the at::, c10::,
// std:: and torch:: qualifiers and moving an east `const` west, so that
// `const at::Tensor& self`, `at::Tensor const &x` and `const Tensor&` are
// one type. Other typedef spellings (`c10::ArrayRef<int64_t>` for
// `at::IntArrayRef`) read as a mismatch: the check then errs on the side of
// pointing at the file, and docs/upgrading.md says to keep the spelling of
// the generated declaration. The return type is left to the compiler: a
// definition that differs from its declaration only there is a compile
// error in the user's file already; one whose parameters differ is a new
// overload and fails only at link or load time, which is what this check
// exists to catch.
#include "generator/upgrade/user_kernels.h"
#include "generator/support/io.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "generator/write/writer.h"

namespace accgen::upgrade {
namespace {

namespace fs = std::filesystem;

bool isIdentChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
}

/// `text` with comments, string and character literals and preprocessor
/// lines replaced by spaces; newlines stay, so offsets map to the same line
/// and column.
std::string blankNonCode(std::string_view text) {
  std::string s(text);
  const std::size_t n = s.size();
  auto blank = [&](std::size_t from, std::size_t to) {
    for (std::size_t k = from; k < to && k < n; ++k) {
      if (s[k] != '\n') s[k] = ' ';
    }
  };
  bool line_start = true;
  std::size_t i = 0;
  while (i < n) {
    char c = s[i];
    if (c == '\n') {
      line_start = true;
      ++i;
      continue;
    }
    if (c == ' ' || c == '\t' || c == '\r') {
      ++i;
      continue;
    }
    if (line_start && c == '#') {
      std::size_t j = i;
      while (j < n && s[j] != '\n') {
        if (s[j] == '\\' && j + 1 < n && s[j + 1] == '\n') ++j;
        ++j;
      }
      blank(i, j);
      i = j;
      continue;
    }
    line_start = false;
    if (c == '/' && i + 1 < n && s[i + 1] == '/') {
      std::size_t j = s.find('\n', i);
      if (j == std::string::npos) j = n;
      blank(i, j);
      i = j;
      continue;
    }
    if (c == '/' && i + 1 < n && s[i + 1] == '*') {
      std::size_t j = s.find("*/", i + 2);
      j = j == std::string::npos ? n : j + 2;
      blank(i, j);
      i = j;
      continue;
    }
    if (c == '"' || c == '\'') {
      std::size_t j = i + 1;
      while (j < n && s[j] != c && s[j] != '\n') {
        if (s[j] == '\\') ++j;
        ++j;
      }
      blank(i, j + 1);
      i = j + 1;
      continue;
    }
    ++i;
  }
  return s;
}

std::vector<std::string> tokenize(std::string_view s) {
  std::vector<std::string> toks;
  std::size_t i = 0;
  while (i < s.size()) {
    char c = s[i];
    if (std::isspace(static_cast<unsigned char>(c))) {
      ++i;
    } else if (isIdentChar(c)) {
      std::size_t j = i;
      while (j < s.size() && isIdentChar(s[j]))
        ++j;
      toks.emplace_back(s.substr(i, j - i));
      i = j;
    } else if (c == ':' && i + 1 < s.size() && s[i + 1] == ':') {
      toks.emplace_back("::");
      i += 2;
    } else if (c == '&' && i + 1 < s.size() && s[i + 1] == '&') {
      toks.emplace_back("&&");
      i += 2;
    } else {
      toks.emplace_back(1, c);
      ++i;
    }
  }
  return toks;
}

bool isIdent(const std::string& t) {
  return !t.empty() &&
         (std::isalpha(static_cast<unsigned char>(t[0])) || t[0] == '_');
}

/// One canonical spelling of a C++ type; see Note [Reading C++ without a
/// compiler].
std::string normalizeType(std::string_view type) {
  static const std::set<std::string> kNamespaces = {"at", "c10", "std",
                                                    "torch"};
  std::vector<std::string> in = tokenize(type), out;
  for (std::size_t i = 0; i < in.size(); ++i) {
    if (kNamespaces.count(in[i]) && i + 1 < in.size() && in[i + 1] == "::") {
      ++i;
      continue;
    }
    // A global qualifier: `::std::optional`.
    if (in[i] == "::" && (out.empty() || !isIdent(out.back()))) continue;
    out.push_back(in[i]);
  }
  // East const at the top level: `Tensor const &` -> `const Tensor &`.
  if (!out.empty() && out.front() != "const") {
    int depth = 0;
    for (std::size_t i = 0; i < out.size(); ++i) {
      if (out[i] == "<") ++depth;
      if (out[i] == ">") --depth;
      if (depth == 0 && out[i] == "const" &&
          (i + 1 == out.size() || out[i + 1] == "&" || out[i + 1] == "&&" ||
           out[i + 1] == "*")) {
        out.erase(out.begin() + static_cast<std::ptrdiff_t>(i));
        out.insert(out.begin(), "const");
        break;
      }
    }
  }
  std::string s;
  for (const auto& t : out) {
    if (!s.empty()) s += ' ';
    s += t;
  }
  return s;
}

/// The type of one C++ parameter declaration: default and name dropped.
std::string parameterType(std::string_view param) {
  std::vector<std::string> toks = tokenize(param);
  int depth = 0;
  for (std::size_t i = 0; i < toks.size(); ++i) {
    const auto& t = toks[i];
    if (t == "<" || t == "(" || t == "[" || t == "{") ++depth;
    if (t == ">" || t == ")" || t == "]" || t == "}") --depth;
    if (depth == 0 && t == "=") {
      toks.resize(i);
      break;
    }
  }
  static const std::set<std::string> kNotAType = {"const", "volatile",
                                                  "unsigned", "signed"};
  if (toks.size() >= 2 && isIdent(toks.back()) &&
      !kNotAType.count(toks.back()) && toks[toks.size() - 2] != "::") {
    bool has_type = false;
    for (std::size_t i = 0; i + 1 < toks.size(); ++i) {
      if (!kNotAType.count(toks[i])) has_type = true;
    }
    if (has_type) toks.pop_back();
  }
  std::string joined;
  for (const auto& t : toks)
    joined += t + " ";
  return normalizeType(joined);
}

/// Splits a parameter list at top-level commas.
std::vector<std::string> splitParameters(std::string_view list) {
  std::vector<std::string> out;
  int depth = 0;
  std::size_t start = 0;
  for (std::size_t i = 0; i < list.size(); ++i) {
    char c = list[i];
    if (c == '<' || c == '(' || c == '[' || c == '{') ++depth;
    if (c == '>' || c == ')' || c == ']' || c == '}') --depth;
    if (c == ',' && depth == 0) {
      out.emplace_back(list.substr(start, i - start));
      start = i + 1;
    }
  }
  std::string last(list.substr(start));
  if (last.find_first_not_of(" \t\r\n") != std::string::npos || !out.empty()) {
    out.push_back(last);
  }
  // `f(void)` takes nothing.
  if (out.size() == 1 && normalizeType(out[0]) == "void") out.clear();
  return out;
}

struct Definition {
  std::size_t offset;              // of the name
  std::vector<std::string> types;  // normalised
  std::string params_text;         // as written, whitespace collapsed
};

std::string collapseSpaces(std::string_view s) {
  std::string out;
  bool space = false;
  for (char c : s) {
    if (std::isspace(static_cast<unsigned char>(c))) {
      space = !out.empty();
      continue;
    }
    if (space) out += ' ';
    space = false;
    out += c;
  }
  return out;
}

std::vector<Definition> findDefinitions(const std::string& code,
                                        std::string_view original,
                                        const std::string& name) {
  std::vector<Definition> defs;
  std::size_t pos = 0;
  while ((pos = code.find(name, pos)) != std::string::npos) {
    const std::size_t at = pos;
    pos += name.size();
    if (at > 0 && isIdentChar(code[at - 1])) continue;
    if (pos < code.size() && isIdentChar(code[pos])) continue;
    std::size_t p = code.find_first_not_of(" \t\r\n", pos);
    if (p == std::string::npos || code[p] != '(') continue;
    int depth = 0;
    std::size_t close = std::string::npos;
    for (std::size_t q = p; q < code.size(); ++q) {
      if (code[q] == '(') ++depth;
      if (code[q] == ')' && --depth == 0) {
        close = q;
        break;
      }
    }
    if (close == std::string::npos) break;
    // A definition continues with its body (after `noexcept` at most).
    std::size_t after = code.find_first_not_of(" \t\r\n", close + 1);
    if (after != std::string::npos && code.compare(after, 8, "noexcept") == 0) {
      after = code.find_first_not_of(" \t\r\n", after + 8);
    }
    if (after == std::string::npos || code[after] != '{') continue;
    Definition d;
    d.offset = at;
    std::string_view list = std::string_view(code).substr(p + 1, close - p - 1);
    for (const auto& param : splitParameters(list)) {
      d.types.push_back(parameterType(param));
    }
    d.params_text = collapseSpaces(original.substr(p, close - p + 1));
    defs.push_back(std::move(d));
  }
  return defs;
}

/// 1-based line of `offset`, and the column of the line's first
/// non-blank character (where the declaration starts).
SourceLoc locate(std::string_view text, std::size_t offset,
                 const std::string& path) {
  SourceLoc loc{path, 1, 1};
  std::size_t line_start = 0;
  for (std::size_t i = 0; i < offset && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++loc.line;
      line_start = i + 1;
    }
  }
  std::size_t first = text.find_first_not_of(" \t", line_start);
  loc.column = static_cast<int>(
      (first == std::string_view::npos ? line_start : first) - line_start + 1);
  return loc;
}

}  // namespace

std::string displayPath(const std::string& out_dir, const std::string& rel) {
  if (out_dir.empty() || out_dir == ".") return rel;
  if (out_dir.back() == '/') return out_dir + rel;
  return out_dir + "/" + rel;
}

std::vector<Diagnostic> checkKernelSource(std::string_view source,
                                          const std::string& path,
                                          const std::string& function,
                                          const schema::CppSignature& signature,
                                          const std::string& op,
                                          Severity severity) {
  std::vector<std::string> expected;
  for (const auto& b : signature.arguments) {
    expected.push_back(normalizeType(b.type.text));
  }
  const std::string code = blankNonCode(source);
  const auto defs = findDefinitions(code, source, function);
  for (const auto& d : defs) {
    if (d.types == expected) return {};
  }
  Diagnostic diag;
  diag.severity = severity;
  const std::string now = signature.decl(function);
  if (defs.empty()) {
    diag.loc = SourceLoc{path, 0, 0};
    diag.message = "no definition of kernel '" + function + "' for " + op +
                   " found; the signature is now: " + now;
    diag.notes.push_back(
        "define it with exactly these parameter types (the generated "
        "declaration has the same spelling)");
  } else {
    const Definition& d = defs.front();
    diag.loc = locate(source, d.offset, path);
    diag.message = "kernel '" + function + "' no longer matches " + op +
                   "; the signature is now: " + now;
    diag.notes.push_back("this definition takes " + d.params_text);
    diag.notes.push_back(
        "update the parameters (and the body) to the new signature; accgen "
        "never rewrites this file");
  }
  return {diag};
}

std::vector<Diagnostic> checkUserKernels(const model::Backend& backend,
                                         const std::string& out_dir,
                                         Severity severity) {
  std::vector<Diagnostic> out;
  std::vector<std::string> files;
  for (const model::Operator& op : backend.operators()) {
    if (spec::kindTraits(op.kind).user_kernel) {
      files.push_back(op.kernel_file);
    }
  }
  for (const model::CustomOperator& c : backend.customOperators()) {
    files.push_back(c.kernel_file);
  }
  const std::set<std::string> existing = existingFiles(out_dir, files);
  auto check = [&](const std::string& file, const std::string& function,
                   const schema::CppSignature& sig, const std::string& op) {
    if (!existing.count(file)) return;
    auto text =
        readFile((fs::path(out_dir.empty() ? "." : out_dir) / file).string());
    if (!text) return;
    auto diags = checkKernelSource(*text, displayPath(out_dir, file), function,
                                   sig, op, severity);
    out.insert(out.end(), diags.begin(), diags.end());
  };
  for (const model::Operator& op : backend.operators()) {
    if (!spec::kindTraits(op.kind).user_kernel || op.kernel_file.empty()) {
      continue;
    }
    const model::Registration& p = op.primary();
    check(op.kernel_file, op.kernel_name, p.signature, "aten::" + p.fullName());
  }
  for (const model::CustomOperator& c : backend.customOperators()) {
    check(c.kernel_file, c.kernel_name, c.signature, c.qualified_name);
    if (!c.meta_name.empty()) {
      check(c.kernel_file, c.meta_name, c.signature, c.qualified_name);
    }
  }
  return out;
}

std::vector<Diagnostic> findOrphanedKernels(const model::Backend& backend,
                                            const std::string& out_dir) {
  const fs::path out(out_dir.empty() ? "." : out_dir);
  std::set<std::string> candidates;
  if (auto text = readFile((out / write::kManifestName).string())) {
    auto j = nlohmann::json::parse(*text, nullptr, false);
    if (!j.is_discarded() && j.contains("user_files") &&
        j["user_files"].is_array()) {
      for (const auto& f : j["user_files"]) {
        if (f.is_string() && f.get<std::string>().starts_with("kernels/")) {
          candidates.insert(f.get<std::string>());
        }
      }
    }
  }
  std::error_code ec;
  for (fs::directory_iterator it(out / "kernels", ec), end; !ec && it != end;
       it.increment(ec)) {
    if (it->is_regular_file() && it->path().extension() == ".cpp") {
      candidates.insert("kernels/" + it->path().filename().string());
    }
  }
  // A new tree has no kernel files yet.
  if (candidates.empty()) return {};
  std::set<std::string> used;
  for (const auto& op : backend.operators()) {
    if (!op.kernel_file.empty()) used.insert(op.kernel_file);
  }
  for (const auto& c : backend.customOperators())
    used.insert(c.kernel_file);
  const std::string ops_yaml =
      (fs::path(backend.specDir()) / "operators.yaml").string();
  std::vector<Diagnostic> diags;
  for (const auto& rel : candidates) {
    if (used.count(rel) || !fs::exists(out / rel)) continue;
    Diagnostic d;
    d.severity = Severity::kWarning;
    d.loc = SourceLoc{displayPath(out_dir, rel), 0, 0};
    d.message = "orphaned user kernel file; no operator in " + ops_yaml +
                " uses it; delete it or add the operator back";
    diags.push_back(std::move(d));
  }
  return diags;
}

}  // namespace accgen::upgrade
