// Strict reading of YAML spec files on top of yaml-cpp.
//
// yaml-cpp is permissive where a spec must not be: it keeps duplicate map
// keys without a word, converts between scalar types on request and reports
// 0-based positions. YamlReader checks keys against an allowed list (nearest
// name for a misspelling), finds duplicates by walking the map's own nodes,
// says which type it expected and which it found, and turns every position
// into a 1-based SourceLoc. Diagnostics are held back and passed on in file
// order when the reader is destroyed, whatever order the checks ran in.
// Used by the three spec parsers only.
#pragma once

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "generator/support/diagnostics.h"

namespace accgen::spec {

/// One key/value pair of a checked map.
struct YamlField {
  std::string key;
  YAML::Node key_node;
  YAML::Node value;
};

/// The fields of a map whose keys were checked; unknown and repeated keys are
/// already reported and left out.
class YamlMap {
 public:
  YamlMap() = default;
  explicit YamlMap(std::vector<YamlField> fields)
      : fields_(std::move(fields)) {}

  /// The field named `key`, or nullptr when it was not given.
  const YamlField* find(std::string_view key) const;
  const std::vector<YamlField>& fields() const { return fields_; }

 private:
  std::vector<YamlField> fields_;
};

/// Reads one YAML document and reports problems against its path.
class YamlReader {
 public:
  /// Parses `text`; a syntax error is reported and leaves root() null with
  /// ok() false.
  YamlReader(std::string path, std::string_view text, DiagnosticEngine& diags);
  /// Passes the collected diagnostics on, sorted by position.
  ~YamlReader();
  YamlReader(const YamlReader&) = delete;
  YamlReader& operator=(const YamlReader&) = delete;

  bool ok() const { return ok_; }
  const YAML::Node& root() const { return root_; }
  const std::string& path() const { return path_; }
  /// Errors reported so far through this reader.
  int errorCount() const { return error_count_; }

  /// The node's 1-based position; the file alone when the node has none.
  SourceLoc loc(const YAML::Node& node) const;
  /// Where the text of a scalar starts: past an opening quote.
  SourceLoc contentLoc(const YAML::Node& node) const;
  /// Where to report about a field's value: the value, or the key when the
  /// value is empty (yaml-cpp places an empty value at the next token).
  SourceLoc valueLoc(const YAML::Node& key, const YAML::Node& value) const;

  void error(SourceLoc loc, std::string message,
             std::vector<std::string> notes = {});

  /// Checks that `node` is a map, reports unknown keys (with the nearest
  /// allowed key and the full list) and duplicates. `context` names the map
  /// in messages: "backend.yaml", "an operator entry". nullopt when `node` is
  /// not a map (reported, at `where` if the node has no position).
  std::optional<YamlMap> readMap(const YAML::Node& node,
                                 std::string_view context,
                                 const std::vector<std::string>& allowed,
                                 const SourceLoc& where);

  /// Reports a missing required key of a map read at `where`.
  void missingKey(std::string_view key, std::string_view context,
                  const SourceLoc& where);

  /// A string scalar. Plain scalars that read as another type (true, 12,
  /// 1.5) and non-scalars are type errors naming `what` ("'device'").
  std::optional<std::string> readString(const YAML::Node& value,
                                        std::string_view what,
                                        const SourceLoc& where);
  /// true / false (any capitalisation YAML 1.2 allows).
  std::optional<bool> readBool(const YAML::Node& value, std::string_view what,
                               const SourceLoc& where);
  /// A decimal integer.
  std::optional<std::int64_t> readInt(const YAML::Node& value,
                                      std::string_view what,
                                      const SourceLoc& where);

  /// The type of a node as a phrase for "got ...": "a map", "a sequence",
  /// "an empty value", "a boolean (true)", "an integer (12)", "a string
  /// ('x')".
  static std::string describe(const YAML::Node& node);

  /// Convenience for fields: the three readers with where = valueLoc.
  std::optional<std::string> fieldString(const YamlField& f);
  std::optional<bool> fieldBool(const YamlField& f);
  std::optional<std::int64_t> fieldInt(const YamlField& f);

 private:
  std::string path_;
  std::string text_;
  DiagnosticEngine& diags_;
  YAML::Node root_;
  bool ok_ = false;
  std::vector<Diagnostic> pending_;
  int error_count_ = 0;

  /// A note naming the innermost '{' or '[' still open at byte `pos`: yaml-cpp
  /// reports an unclosed flow collection where it gives up, lines later.
  std::optional<std::string> unclosedFlowNote(std::size_t pos) const;
};

/// A value as quoted in a message: its first 40 characters and "..." when
/// longer, so that a 40 KB value makes a one-line error.
std::string shortenedValue(const std::string& s);

/// "a, b and c"-free list for notes: "a, b, c".
std::string joinNames(const std::vector<std::string>& names);

/// A non-empty list of dtype names (knownDtypeNames(): "float32", ...)
/// into `out`; false, with every problem reported, when it is not one.
bool readDtypeNames(YamlReader& r, const YamlField& f,
                    std::vector<std::string>& out);

}  // namespace accgen::spec
