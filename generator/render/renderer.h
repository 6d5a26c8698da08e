// The template renderer: mustache templates (kainjow mustache) filled from
// JSON data, strictly. A variable, section or partial that the data does not
// define is an error naming the template and the tag, never an empty string;
// nothing is HTML-escaped.
#pragma once

#include <map>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

namespace accgen::render {

/// Templates loaded lazily from one directory tree; partials are looked up as
/// "partials/<name>.mustache" under the same root.
class TemplateSet {
 public:
  explicit TemplateSet(std::string root);
  ~TemplateSet();
  TemplateSet(const TemplateSet&) = delete;
  TemplateSet& operator=(const TemplateSet&) = delete;

  /// Values every render sees beneath its own data (converted once; a
  /// render's data wins on equal keys).
  void setGlobals(const nlohmann::json& globals);

  /// Renders `name` (a path relative to the root) with `data`. Throws
  /// AccgenError(kInternal) for a missing template, a syntax error or a
  /// variable the data does not define.
  std::string render(const std::string& name, const nlohmann::json& data);

  /// Renders template text given inline (for tests); `label` names it in
  /// errors.
  std::string renderText(const std::string& text, const nlohmann::json& data,
                         const std::string& label = "<inline>");

  const std::string& root() const { return root_; }

 private:
  struct Compiled;
  Compiled& compiled(const std::string& name);
  const std::string& partialText(const std::string& name);

  std::string root_;
  std::map<std::string, std::unique_ptr<Compiled>> cache_;
  std::map<std::string, std::string> partials_;
  struct Globals;
  std::unique_ptr<Globals> globals_;
};

/// The templates directory of this installation: $ACCGEN_TEMPLATE_DIR if set,
/// else <dir of the accgen executable>/../share/accgen/templates (the same
/// relative layout in the build tree and in an install prefix).
std::string defaultTemplateDir();

}  // namespace accgen::render
