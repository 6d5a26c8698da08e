// Strict mustache rendering from JSON data.
//
// Note [Strict templates]
// ~~~~~~~~~~~~~~~~~~~~~~~
// A mustache renderer renders an undefined tag as nothing. A template that
// names a key an emitter forgot would then emit silently wrong code, so
// every lookup the data does not resolve is recorded; any miss turns the
// render into an error. Sections and inverted sections are strict too: an
// emitter states every flag a template tests.
//
// Note [Rendering from JSON]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~
// Templates are the mustache dialect of kainjow mustache, and render byte
// for byte as kainjow renders them (render_test.cpp holds the two to that).
// accgen parses each template once per TemplateSet into a small tree and
// walks it over the emitters' nlohmann::json data as it is: converting every
// file's data to kainjow's own data type, and kainjow's parser, which builds
// an object for every space of a template, would cost more than building the
// data, for a large backend most of a run. kainjow's rules, kept here:
//   - `{{{name}}}` and `{{&name}}` are plain variables (nothing is escaped);
//     `{{=<% %>=}}` sets the delimiters; a syntax error is reported with the
//     byte offset of its tag;
//   - lookups search the context stack from the innermost entry; a dotted
//     name resolves entirely within one entry; `.` is the innermost entry;
//   - a string renders as it is, a number as JSON prints it, anything else
//     (booleans, null, maps, lists) as nothing;
//   - a section renders for each item of a non-empty list, once with any
//     other value but false, null and the empty list; an inverted section
//     renders for those three and for a missing name;
//   - a line that held a rendered section tag and is left empty or blank is
//     dropped with its newline (kainjow's line buffer), the last line too;
//   - comments and set-delimiter tags render nothing and leave the line as
//     it is; a partial renders inline, sharing the line.
#include "generator/render/renderer.h"
#include "generator/support/io.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <string_view>

#include "generator/support/diagnostics.h"

namespace accgen::render {

using nlohmann::json;

/// One piece of a compiled template.
struct TemplateSet::Node {
  enum class Kind { kText, kNewline, kVariable, kSection, kInverted, kPartial };
  Kind kind = Kind::kText;
  /// The text, or the tag's name as written.
  std::string text;
  /// A dotted tag name split at its dots.
  std::vector<std::string> path;
  /// A section's content.
  std::vector<Node> children;
  /// While parsing a section: the byte offset of its tag and the name of
  /// the tag that closed it.
  std::size_t position = 0;
  std::string end_name;
};

struct TemplateSet::Compiled {
  std::vector<Node> nodes;
  /// The template's length: what a render reserves twice over, so that
  /// most outputs (thousands of kernel starters) grow no more.
  std::size_t size = 0;
};

namespace {

using Node = TemplateSet::Node;

std::string readTemplate(const std::string& path) {
  auto text = readFile(path);
  if (!text) {
    throw AccgenError(ExitCode::kInternal,
                      "cannot read template '" + path + "'");
  }
  return *text;
}

/// A dotted tag name split at its dots the way kainjow splits it (a
/// trailing dot adds no empty part); empty for a name without dots.
std::vector<std::string> splitName(const std::string& name) {
  std::vector<std::string> parts;
  if (name.find('.') == std::string::npos) return parts;
  std::size_t start = 0;
  for (std::size_t dot; (dot = name.find('.', start)) != std::string::npos;
       start = dot + 1) {
    parts.push_back(name.substr(start, dot - start));
  }
  if (start < name.size()) parts.push_back(name.substr(start));
  return parts;
}

/// A node of `kind` with its text (or tag name, split when dotted).
Node makeNode(Node::Kind kind, std::string text) {
  Node node;
  node.kind = kind;
  if (kind != Node::Kind::kText && kind != Node::Kind::kNewline) {
    node.path = splitName(text);
  }
  node.text = std::move(text);
  return node;
}

std::string trimmed(std::string_view s) {
  auto space = [](char c) {
    return std::isspace(static_cast<unsigned char>(c));
  };
  while (!s.empty() && space(s.front()))
    s.remove_prefix(1);
  while (!s.empty() && space(s.back()))
    s.remove_suffix(1);
  return std::string(s);
}

/// Reads a template into Nodes the way kainjow's parser reads it (tags,
/// set-delimiter tags, `{{{...}}}`, its error messages and their byte
/// offsets), without building kainjow's component per whitespace character.
class Parser {
 public:
  explicit Parser(const std::string& text) : text_(text) {}

  /// The nodes; throws AccgenError naming `label` on a syntax error.
  std::vector<Node> parse(const std::string& label) {
    std::vector<Node> root;
    std::string error = parseInto(root);
    if (error.empty()) error = unclosed(root);
    if (!error.empty()) {
      throw AccgenError(ExitCode::kInternal,
                        "template '" + label + "': " + error);
    }
    return root;
  }

 private:
  std::string parseInto(std::vector<Node>& root) {
    std::string begin = "{{", end = "}}";
    bool braces = true;
    std::vector<std::vector<Node>*> open = {&root};
    std::vector<Node*> sections;
    const std::size_t n = text_.size();
    std::size_t pos = 0;
    while (pos < n) {
      if (text_.compare(pos, begin.size(), begin) != 0) {
        std::vector<Node>& out = *open.back();
        const char c = text_[pos];
        if (c == '\n' || c == '\r') {
          const std::size_t len =
              c == '\r' && pos + 1 < n && text_[pos + 1] == '\n' ? 2 : 1;
          out.push_back(makeNode(Node::Kind::kNewline, text_.substr(pos, len)));
          pos += len;
          continue;
        }
        // Text runs to the next newline or possible tag start.
        std::size_t stop =
            text_.find_first_of(std::string("\n\r") + begin.front(), pos + 1);
        if (stop == std::string::npos) stop = n;
        if (out.empty() || out.back().kind != Node::Kind::kText) {
          out.push_back(makeNode(Node::Kind::kText, ""));
        }
        out.back().text.append(text_, pos, stop - pos);
        pos = stop;
        continue;
      }
      const std::size_t tag_start = pos;
      std::size_t contents = pos + begin.size();
      const bool triple =
          braces && tag_start != n - 2 && text_.at(contents) == begin.front();
      const std::string& close = triple ? kTripleClose : end;
      if (triple) ++contents;
      const std::size_t tag_end = text_.find(close, contents);
      if (tag_end == std::string::npos) {
        return "Unclosed tag at " + std::to_string(tag_start);
      }
      pos = tag_end + close.size();
      std::string tag =
          trimmed(std::string_view(text_).substr(contents, tag_end - contents));
      if (!tag.empty() && tag.front() == '=') {
        if (!setDelimiters(tag, begin, end)) {
          return "Invalid set delimiter tag at " + std::to_string(tag_start);
        }
        braces = begin == "{{" && end == "}}";
        continue;
      }
      char kind = triple || tag.empty() ? '\0' : tag.front();
      if (std::string_view("#^/>&!").find(kind) == std::string_view::npos) {
        kind = '\0';
      }
      const std::string name = kind ? trimmed(tag.substr(1)) : tag;
      std::vector<Node>& out = *open.back();
      switch (kind) {
        case '!':
          break;
        case '/':
          if (sections.empty()) {
            return "Unopened section \"" + name + "\" at " +
                   std::to_string(tag_start);
          }
          sections.back()->end_name = name;
          sections.pop_back();
          open.pop_back();
          break;
        case '#':
        case '^':
          out.push_back(makeNode(
              kind == '#' ? Node::Kind::kSection : Node::Kind::kInverted,
              name));
          out.back().position = tag_start;
          sections.push_back(&out.back());
          open.push_back(&out.back().children);
          break;
        case '>':
          out.push_back(makeNode(Node::Kind::kPartial, name));
          break;
        default:
          out.push_back(makeNode(Node::Kind::kVariable, name));
          break;
      }
    }
    return "";
  }

  /// kainjow's check after parsing: the first section, in document order,
  /// not closed by a tag of its own name.
  static std::string unclosed(const std::vector<Node>& nodes) {
    for (const Node& node : nodes) {
      if (node.kind != Node::Kind::kSection &&
          node.kind != Node::Kind::kInverted) {
        continue;
      }
      if (node.end_name != node.text) {
        return "Unclosed section \"" + node.text + "\" at " +
               std::to_string(node.position);
      }
      if (std::string inner = unclosed(node.children); !inner.empty()) {
        return inner;
      }
    }
    return "";
  }

  /// `=<% %>=`: the new delimiters, which may not contain `=` or spaces.
  static bool setDelimiters(const std::string& tag, std::string& begin,
                            std::string& end) {
    if (tag.size() < 5 || tag.back() != '=') return false;
    const std::string inner = trimmed(tag.substr(1, tag.size() - 2));
    const std::size_t space = inner.find(' ');
    if (space == std::string::npos) return false;
    const std::size_t next = inner.find_first_not_of(' ', space + 1);
    const std::string b = inner.substr(0, space);
    const std::string e = inner.substr(next);
    auto valid = [](const std::string& d) {
      return std::none_of(d.begin(), d.end(), [](char c) {
        return c == '=' || std::isspace(static_cast<unsigned char>(c));
      });
    };
    if (!valid(b) || !valid(e)) return false;
    begin = b;
    end = e;
    return true;
  }

  inline static const std::string kTripleClose = "}}}";
  const std::string& text_;
};

/// Parses `text`; throws naming `label` on a syntax error.
std::unique_ptr<TemplateSet::Compiled> compile(const std::string& text,
                                               const std::string& label) {
  auto compiled = std::make_unique<TemplateSet::Compiled>();
  compiled->nodes = Parser(text).parse(label);
  compiled->size = text.size();
  return compiled;
}

bool isFalsy(const json& j) {
  return j.is_null() || (j.is_boolean() && !j.get<bool>()) ||
         (j.is_array() && j.empty());
}

}  // namespace

/// One render: the output, the line being filled, the context stack and the
/// names that did not resolve.
class TemplateSet::Walk {
 public:
  Walk(TemplateSet& set, const std::string& label) : set_(set), label_(label) {}

  std::string run(const Compiled& compiled, const json& data) {
    out_.reserve(2 * compiled.size);
    if (set_.globals_) stack_.push_back(set_.globals_.get());
    stack_.push_back(&data);
    render(compiled.nodes);
    dropBlankLine();
    if (!missing_.empty()) {
      std::string names;
      for (const auto& m : missing_) {
        if (names.find("'" + m + "'") != std::string::npos) continue;
        names += (names.empty() ? "'" : ", '") + m + "'";
      }
      throw AccgenError(
          ExitCode::kInternal,
          "template '" + label_ + "': undefined variable " + names);
    }
    return std::move(out_);
  }

 private:
  void render(const std::vector<Node>& nodes) {
    for (const Node& n : nodes) {
      switch (n.kind) {
        case Node::Kind::kText:
          out_ += n.text;
          break;
        case Node::Kind::kNewline:
          if (!dropBlankLine()) out_ += n.text;
          line_start_ = out_.size();
          break;
        case Node::Kind::kVariable:
          if (const json* v = find(n)) {
            if (v->is_string()) {
              out_ += v->get_ref<const std::string&>();
            } else if (v->is_number()) {
              out_ += v->dump();
            }
          }
          break;
        case Node::Kind::kSection:
          if (const json* v = find(n); v != nullptr && !isFalsy(*v)) {
            if (v->is_array()) {
              for (const json& item : *v)
                section(n, item);
            } else {
              section(n, *v);
            }
          }
          break;
        case Node::Kind::kInverted:
          if (const json* v = find(n); v == nullptr || isFalsy(*v)) {
            section(n, v);
          }
          break;
        case Node::Kind::kPartial:
          render(set_.partial(n.text, label_).nodes);
          break;
      }
    }
  }

  // kainjow pushes the section's value, even the falsy value of an
  // inverted section; only a missing one pushes nothing.
  void section(const Node& n, const json* pushed) {
    section_tag_ = true;
    if (pushed != nullptr) stack_.push_back(pushed);
    render(n.children);
    if (pushed != nullptr) stack_.pop_back();
    section_tag_ = true;
  }
  void section(const Node& n, const json& pushed) { section(n, &pushed); }

  /// Ends the line being filled: drops it when a section tag left it
  /// blank, and says so (its newline goes too).
  bool dropBlankLine() {
    const bool drop =
        section_tag_ &&
        out_.find_first_not_of(" \t", line_start_) == std::string::npos;
    if (drop) out_.resize(line_start_);
    section_tag_ = false;
    return drop;
  }

  const json* find(const Node& n) {
    const json* found = nullptr;
    if (n.text == ".") {
      found = stack_.empty() ? nullptr : stack_.back();
    } else {
      for (auto it = stack_.rbegin(); it != stack_.rend() && !found; ++it) {
        found = n.path.empty() ? member(**it, n.text) : resolve(**it, n.path);
      }
    }
    if (found == nullptr) missing_.push_back(n.text);
    return found;
  }

  static const json* member(const json& j, const std::string& key) {
    if (!j.is_object()) return nullptr;
    auto it = j.find(key);
    return it == j.end() ? nullptr : &*it;
  }

  static const json* resolve(const json& j,
                             const std::vector<std::string>& path) {
    const json* at = &j;
    for (const auto& key : path) {
      at = member(*at, key);
      if (at == nullptr) return nullptr;
    }
    return at;
  }

  TemplateSet& set_;
  const std::string& label_;
  std::string out_;
  std::size_t line_start_ = 0;
  bool section_tag_ = false;
  std::vector<const json*> stack_;
  std::vector<std::string> missing_;
};

TemplateSet::TemplateSet(std::string root) : root_(std::move(root)) {}
TemplateSet::~TemplateSet() = default;

void TemplateSet::setGlobals(const json& globals) {
  globals_ = std::make_unique<json>(globals);
}

const TemplateSet::Compiled& TemplateSet::partial(const std::string& name,
                                                  const std::string& label) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = partials_.find(name);
  if (it == partials_.end()) {
    // A partial's syntax error is reported against the template using it.
    auto c =
        compile(readTemplate(root_ + "/partials/" + name + ".mustache"), label);
    it = partials_.emplace(name, std::move(c)).first;
  }
  return *it->second;
}

const TemplateSet::Compiled& TemplateSet::compiled(const std::string& name) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = cache_.find(name);
  if (it == cache_.end()) {
    it = cache_.emplace(name, compile(readTemplate(root_ + "/" + name), name))
             .first;
  }
  return *it->second;
}

std::string TemplateSet::render(const std::string& name, const json& data) {
  return Walk(*this, name).run(compiled(name), data);
}

std::string TemplateSet::renderText(const std::string& text, const json& data,
                                    const std::string& label) {
  return Walk(*this, label).run(*compile(text, label), data);
}

std::string defaultTemplateDir() {
  if (const char* env = std::getenv("ACCGEN_TEMPLATE_DIR"); env && *env) {
    return env;
  }
  std::error_code ec;
  auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) return "templates";
  return (exe.parent_path().parent_path() / "share" / "accgen" / "templates")
      .lexically_normal()
      .string();
}

}  // namespace accgen::render
