// Strict YAML reading: key checks, duplicate detection, typed scalars and
// 1-based locations.
#include "generator/spec/yaml_reader.h"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <sstream>

#include <yaml-cpp/eventhandler.h>

#include "generator/support/io.h"

namespace accgen::spec {
namespace {

// YAML 1.2 core schema resolution of plain scalars; a spec never relies on
// yaml-cpp's YAML 1.1 extras (yes/no/on/off are strings here).
enum class PlainType { kString, kBool, kInt, kFloat };

// Hand-written rather than std::regex: libstdc++'s regex matcher recurses
// once a character, and a plain scalar of some 26,000 digits overflowed the
// stack.
bool isDigits(std::string_view s, bool (*digit)(char)) {
  return !s.empty() && std::all_of(s.begin(), s.end(), digit);
}

bool isDecimal(char c) {
  return c >= '0' && c <= '9';
}
bool isOctal(char c) {
  return c >= '0' && c <= '7';
}
bool isHex(char c) {
  return isDecimal(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

std::string_view withoutSign(std::string_view s) {
  if (!s.empty() && (s[0] == '-' || s[0] == '+')) s.remove_prefix(1);
  return s;
}

bool isInt(std::string_view s) {
  if (s.starts_with("0o")) return isDigits(s.substr(2), isOctal);
  if (s.starts_with("0x")) return isDigits(s.substr(2), isHex);
  return isDigits(withoutSign(s), isDecimal);
}

// [-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?, .inf and .nan.
bool isFloat(std::string_view s) {
  if (s == ".nan" || s == ".NaN" || s == ".NAN") return true;
  s = withoutSign(s);
  if (s == ".inf" || s == ".Inf" || s == ".INF") return true;
  std::string_view mantissa = s.substr(0, s.find_first_of("eE"));
  if (mantissa.size() < s.size()) {
    if (!isDigits(withoutSign(s.substr(mantissa.size() + 1)), isDecimal)) {
      return false;
    }
  }
  const std::size_t dot = mantissa.find('.');
  if (dot == std::string_view::npos) return isDigits(mantissa, isDecimal);
  std::string_view whole = mantissa.substr(0, dot);
  std::string_view fraction = mantissa.substr(dot + 1);
  if (whole.empty()) return isDigits(fraction, isDecimal);
  return isDigits(whole, isDecimal) &&
         (fraction.empty() || isDigits(fraction, isDecimal));
}

PlainType classifyPlain(const std::string& s) {
  if (s == "true" || s == "True" || s == "TRUE" || s == "false" ||
      s == "False" || s == "FALSE") {
    return PlainType::kBool;
  }
  if (isInt(s)) return PlainType::kInt;
  if (isFloat(s)) return PlainType::kFloat;
  return PlainType::kString;
}

bool isPlain(const YAML::Node& node) {
  return node.Tag() == "?";
}

// Note [Reading one document]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~
// yaml-cpp 0.7's LoadAll loops for ever, allocating as it goes, on a
// document whose first token its parser cannot consume, such as a ',' that
// starts a file (`,type:` for `dtype:`; upstream issue #1040): every pass
// yields one more empty document at the same place. YAML::Load parses the
// first document only and always ends. The rest of the stream is looked at
// only when the first document is empty or a line starts with a document
// marker ('---', '...'), through a Parser whose documents must each move on
// from where the last one started.
class DocumentStarts : public YAML::EventHandler {
 public:
  std::optional<YAML::Mark> start;  ///< where the document's first token is
  std::optional<YAML::Mark> node;   ///< where its root node is

  void OnDocumentStart(const YAML::Mark& mark) override { start = mark; }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark& mark, YAML::anchor_t) override { see(mark); }
  void OnAlias(const YAML::Mark& mark, YAML::anchor_t) override { see(mark); }
  void OnScalar(const YAML::Mark& mark, const std::string&, YAML::anchor_t,
                const std::string&) override {
    see(mark);
  }
  void OnSequenceStart(const YAML::Mark& mark, const std::string&,
                       YAML::anchor_t, YAML::EmitterStyle::value) override {
    see(mark);
  }
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t,
                  YAML::EmitterStyle::value) override {
    see(mark);
  }
  void OnMapEnd() override {}

 private:
  void see(const YAML::Mark& mark) {
    if (!node) node = mark;
  }
};

bool mayHoldMoreDocuments(std::string_view text) {
  for (std::string_view marker : {"---", "..."}) {
    if (text.starts_with(marker)) return true;
    if (text.find("\n" + std::string(marker)) != std::string_view::npos) {
      return true;
    }
  }
  return false;
}

/// The outcome of checking the stream past its first document.
struct StreamCheck {
  int documents = 0;
  std::optional<YAML::Mark> second;  ///< the second document's root node
  std::optional<YAML::Mark> stuck;   ///< a token the parser cannot consume
};

StreamCheck checkStream(const std::string& text) {
  StreamCheck check;
  std::istringstream in(text);
  YAML::Parser parser(in);
  std::optional<int> last_start;
  for (;;) {
    DocumentStarts doc;
    if (!parser.HandleNextDocument(doc)) break;
    const int start = doc.start ? doc.start->pos : -1;
    if (last_start && start <= *last_start) {
      check.stuck = doc.start;
      break;
    }
    last_start = start;
    if (++check.documents == 2) check.second = doc.node ? doc.node : doc.start;
  }
  return check;
}

}  // namespace

const YamlField* YamlMap::find(std::string_view key) const {
  for (const auto& f : fields_) {
    if (f.key == key) return &f;
  }
  return nullptr;
}

YamlReader::YamlReader(std::string path, std::string_view text,
                       DiagnosticEngine& diags)
    : path_(std::move(path)), text_(text), diags_(diags) {
  // YAML is Unicode text; yaml-cpp passes any byte through, and the JSON
  // writers downstream would refuse it only later.
  if (const auto bad = firstInvalidUtf8(text_)) {
    const std::string_view before = std::string_view(text_).substr(0, *bad);
    const std::size_t line_start = before.rfind('\n');
    const int line =
        1 + static_cast<int>(std::count(before.begin(), before.end(), '\n'));
    const int column = 1 + static_cast<int>(line_start == std::string_view::npos
                                                ? *bad
                                                : *bad - line_start - 1);
    char hex[8];
    std::snprintf(hex, sizeof hex, "0x%02X",
                  static_cast<unsigned char>(text_[*bad]));
    error(SourceLoc{path_, line, column},
          std::string("invalid UTF-8: byte ") + hex +
              " does not begin a well-formed UTF-8 sequence",
          {"spec files are UTF-8 text; re-save the file as UTF-8"});
    return;
  }
  try {
    // Note [Reading one document].
    root_ = YAML::Load(text_);
    if (root_.IsNull() || mayHoldMoreDocuments(text_)) {
      const StreamCheck check = checkStream(text_);
      if (check.stuck) {
        const YAML::Mark& m = *check.stuck;
        const char c =
            m.pos >= 0 && static_cast<std::size_t>(m.pos) < text_.size()
                ? text_[static_cast<std::size_t>(m.pos)]
                : ' ';
        root_ = YAML::Node();
        error(SourceLoc{path_, m.line + 1, m.column + 1},
              std::string("invalid YAML: unexpected '") + c + "'",
              {"a plain value cannot start with ',', '[', ']', '{' or '}'; "
               "quote it"});
        return;
      }
      if (check.documents > 1) {
        root_ = YAML::Node();
        const YAML::Mark m = check.second.value_or(YAML::Mark());
        error(m.line < 0 ? SourceLoc{path_, 0, 0}
                         : SourceLoc{path_, m.line + 1, m.column + 1},
              "expected one YAML document, found " +
                  std::to_string(check.documents));
        return;
      }
    }
    ok_ = true;
  } catch (const YAML::ParserException& e) {
    SourceLoc where{path_, e.mark.line + 1, e.mark.column + 1};
    std::vector<std::string> notes;
    if (e.mark.line < 0) {
      where = SourceLoc{path_, 0, 0};
    } else if (auto note = unclosedFlowNote(
                   static_cast<std::size_t>(std::max(e.mark.pos, 0)))) {
      notes.push_back(*note);
    }
    error(where, "invalid YAML: " + e.msg, std::move(notes));
  }
}

YamlReader::~YamlReader() {
  std::stable_sort(pending_.begin(), pending_.end(),
                   [](const Diagnostic& a, const Diagnostic& b) {
                     return std::pair(a.loc.line, a.loc.column) <
                            std::pair(b.loc.line, b.loc.column);
                   });
  for (auto& d : pending_) {
    if (d.severity == Severity::kError) {
      diags_.error(std::move(d.loc), std::move(d.message), std::move(d.notes));
    } else {
      diags_.warning(std::move(d.loc), std::move(d.message),
                     std::move(d.notes));
    }
  }
}

std::optional<std::string> YamlReader::unclosedFlowNote(std::size_t pos) const {
  struct Open {
    char c;
    int line;
    int column;
  };
  std::vector<Open> open;
  int line = 1;
  int column = 1;
  char quote = 0;
  bool comment = false;
  for (std::size_t i = 0; i < pos && i < text_.size(); ++i) {
    char c = text_[i];
    if (c == '\n') {
      ++line;
      column = 1;
      comment = false;
      continue;
    }
    if (comment) {
      // Brackets inside a comment do not count.
    } else if (quote) {
      if (c == quote) quote = 0;
    } else if (c == '"' || c == '\'') {
      quote = c;
    } else if (c == '#' && (i == 0 || text_[i - 1] == ' ')) {
      comment = true;
    } else if (c == '{' || c == '[') {
      open.push_back({c, line, column});
    } else if ((c == '}' || c == ']') && !open.empty()) {
      open.pop_back();
    }
    ++column;
  }
  if (open.empty()) return std::nullopt;
  const Open& o = open.back();
  return std::string("the '") + o.c + "' at " +
         SourceLoc{path_, o.line, o.column}.str() + " is not closed";
}

SourceLoc YamlReader::loc(const YAML::Node& node) const {
  YAML::Mark m = node.Mark();
  if (m.line < 0 || m.column < 0) return SourceLoc{path_, 0, 0};
  return SourceLoc{path_, m.line + 1, m.column + 1};
}

SourceLoc YamlReader::contentLoc(const YAML::Node& node) const {
  SourceLoc at = loc(node);
  YAML::Mark m = node.Mark();
  if (at.line == 0 || m.pos < 0 ||
      static_cast<std::size_t>(m.pos) >= text_.size()) {
    return at;
  }
  char c = text_[static_cast<std::size_t>(m.pos)];
  if (c == '"' || c == '\'') {
    ++at.column;
  } else if (c == '|' || c == '>') {
    // Block scalar: the text starts on the next line after its indentation.
    std::size_t nl = text_.find('\n', static_cast<std::size_t>(m.pos));
    if (nl != std::string::npos) {
      std::size_t first = text_.find_first_not_of(' ', nl + 1);
      if (first == std::string::npos) first = text_.size();
      at.line += 1;
      at.column = static_cast<int>(first - nl);
    }
  }
  return at;
}

SourceLoc YamlReader::valueLoc(const YAML::Node& key,
                               const YAML::Node& value) const {
  if (!value.IsDefined() || value.IsNull()) return loc(key);
  return loc(value);
}

void YamlReader::error(SourceLoc loc, std::string message,
                       std::vector<std::string> notes) {
  pending_.push_back(
      {Severity::kError, std::move(loc), std::move(message), std::move(notes)});
  ++error_count_;
}

std::string YamlReader::describe(const YAML::Node& node) {
  if (!node.IsDefined() || node.IsNull()) return "an empty value";
  if (node.IsMap()) return "a map";
  if (node.IsSequence()) return "a sequence";
  const std::string& s = node.Scalar();
  if (isPlain(node)) {
    switch (classifyPlain(s)) {
      case PlainType::kBool:
        return "a boolean (" + shortenedValue(s) + ")";
      case PlainType::kInt:
        return "an integer (" + shortenedValue(s) + ")";
      case PlainType::kFloat:
        return "a number (" + shortenedValue(s) + ")";
      case PlainType::kString:
        break;
    }
  }
  return "a string ('" + shortenedValue(s) + "')";
}

std::optional<YamlMap> YamlReader::readMap(
    const YAML::Node& node, std::string_view context,
    const std::vector<std::string>& allowed, const SourceLoc& where) {
  if (!node.IsMap()) {
    SourceLoc at = node.IsDefined() && !node.IsNull() ? loc(node) : where;
    error(at,
          "expected a map for " + std::string(context) + ", got " +
              describe(node),
          {"allowed keys: " + joinNames(allowed)});
    return std::nullopt;
  }
  std::vector<YamlField> fields;
  for (auto it = node.begin(); it != node.end(); ++it) {
    // Copies: `it->first` lives in a proxy that dies with the statement
    // (a reference to it was a stack-use-after-scope).
    const YAML::Node key = it->first;
    const YAML::Node value = it->second;
    if (!key.IsScalar()) {
      error(loc(key),
            "expected a key name in " + std::string(context) + ", got " +
                describe(key),
            {"allowed keys: " + joinNames(allowed)});
      continue;
    }
    const std::string& name = key.Scalar();
    if (std::find(allowed.begin(), allowed.end(), name) == allowed.end()) {
      std::string message =
          "unknown key '" + name + "' in " + std::string(context);
      std::string near = nearestName(name, allowed);
      if (!near.empty()) message += "; did you mean '" + near + "'?";
      error(loc(key), message, {"allowed keys: " + joinNames(allowed)});
      continue;
    }
    auto first =
        std::find_if(fields.begin(), fields.end(),
                     [&](const YamlField& f) { return f.key == name; });
    if (first != fields.end()) {
      error(loc(key), "duplicate key '" + name + "' in " + std::string(context),
            {"first given at " + loc(first->key_node).str(),
             "allowed keys: " + joinNames(allowed)});
      continue;
    }
    fields.push_back(YamlField{name, key, value});
  }
  return YamlMap(std::move(fields));
}

void YamlReader::missingKey(std::string_view key, std::string_view context,
                            const SourceLoc& where) {
  error(where, "missing required key '" + std::string(key) + "' in " +
                   std::string(context));
}

std::optional<std::string> YamlReader::readString(const YAML::Node& value,
                                                  std::string_view what,
                                                  const SourceLoc& where) {
  bool ok =
      value.IsScalar() &&
      (!isPlain(value) || classifyPlain(value.Scalar()) == PlainType::kString);
  if (!ok) {
    error(where, "expected a string for " + std::string(what) + ", got " +
                     describe(value));
    return std::nullopt;
  }
  return value.Scalar();
}

std::optional<bool> YamlReader::readBool(const YAML::Node& value,
                                         std::string_view what,
                                         const SourceLoc& where) {
  if (value.IsScalar() && isPlain(value) &&
      classifyPlain(value.Scalar()) == PlainType::kBool) {
    return value.Scalar()[0] == 't' || value.Scalar()[0] == 'T';
  }
  error(where, "expected a boolean (true or false) for " + std::string(what) +
                   ", got " + describe(value));
  return std::nullopt;
}

std::optional<std::int64_t> YamlReader::readInt(const YAML::Node& value,
                                                std::string_view what,
                                                const SourceLoc& where) {
  if (value.IsScalar() && isPlain(value) &&
      classifyPlain(value.Scalar()) == PlainType::kInt) {
    const std::string& s = value.Scalar();
    std::int64_t result = 0;
    std::string_view digits = s;
    if (!digits.empty() && digits[0] == '+') digits.remove_prefix(1);
    int base = 10;
    if (digits.starts_with("0x")) {
      base = 16;
      digits.remove_prefix(2);
    } else if (digits.starts_with("0o")) {
      base = 8;
      digits.remove_prefix(2);
    }
    auto [end, ec] = std::from_chars(
        digits.data(), digits.data() + digits.size(), result, base);
    if (ec == std::errc() && end == digits.data() + digits.size()) {
      return result;
    }
    error(where, "integer " + shortenedValue(s) + " for " + std::string(what) +
                     " is out of range");
    return std::nullopt;
  }
  error(where, "expected an integer for " + std::string(what) + ", got " +
                   describe(value));
  return std::nullopt;
}

std::optional<std::string> YamlReader::fieldString(const YamlField& f) {
  return readString(f.value, "'" + f.key + "'", valueLoc(f.key_node, f.value));
}

std::optional<bool> YamlReader::fieldBool(const YamlField& f) {
  return readBool(f.value, "'" + f.key + "'", valueLoc(f.key_node, f.value));
}

std::optional<std::int64_t> YamlReader::fieldInt(const YamlField& f) {
  return readInt(f.value, "'" + f.key + "'", valueLoc(f.key_node, f.value));
}

std::string shortenedValue(const std::string& s) {
  constexpr std::size_t kMax = 40;
  if (s.size() <= kMax) return s;
  return s.substr(0, kMax) + "...";
}

std::string joinNames(const std::vector<std::string>& names) {
  std::string s;
  for (const auto& n : names) {
    if (!s.empty()) s += ", ";
    s += n;
  }
  return s;
}

}  // namespace accgen::spec
