// The template renderer: mustache templates (kainjow mustache's dialect)
// filled from JSON data, strictly. A variable, section or partial that the
// data does not define is an error naming the template and the tag, never an
// empty string; nothing is HTML-escaped.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>

#include <nlohmann/json.hpp>

namespace accgen::render {

/// Templates loaded and parsed lazily, once each, from one directory tree;
/// partials are looked up as "partials/<name>.mustache" under the same root.
/// Threads may render through one TemplateSet at once (parsed templates are
/// shared); setGlobals() must not run during a render.
class TemplateSet {
 public:
  explicit TemplateSet(std::string root);
  ~TemplateSet();
  TemplateSet(const TemplateSet&) = delete;
  TemplateSet& operator=(const TemplateSet&) = delete;

  /// Values every render sees beneath its own data (a render's data wins on
  /// equal keys).
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

  /// A parsed template (Note [Rendering from JSON] in renderer.cpp).
  struct Node;
  struct Compiled;

 private:
  class Walk;
  const Compiled& compiled(const std::string& name);
  /// The partial `name`; a syntax error in it is reported against `label`,
  /// the template using it.
  const Compiled& partial(const std::string& name, const std::string& label);

  std::string root_;
  std::map<std::string, std::unique_ptr<Compiled>> cache_;
  std::map<std::string, std::unique_ptr<Compiled>> partials_;
  std::unique_ptr<nlohmann::json> globals_;
  /// Guards the two caches; a parsed template never changes or moves.
  std::mutex mutex_;
};

/// The templates directory of this installation: $ACCGEN_TEMPLATE_DIR if set,
/// else <dir of the accgen executable>/../share/accgen/templates (the same
/// relative layout in the build tree and in an install prefix).
std::string defaultTemplateDir();

}  // namespace accgen::render
