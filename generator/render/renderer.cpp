// Strict mustache rendering: kainjow mustache parses, accgen fills.
//
// Note [Strict templates]
// kainjow renders an undefined tag as nothing. A template that names a key an
// emitter forgot would then emit silently wrong code, so every lookup the
// data does not resolve is recorded; any miss turns the render into an
// error. Sections and inverted sections are strict too: an emitter states
// every flag a template tests.
//
// Note [Rendering from JSON]
// Templates are parsed once per TemplateSet by kainjow's parser (partials
// too) and compiled into a small tree; rendering walks that tree over the
// emitters' nlohmann::json data as it is: converting every file's data to
// kainjow's own data type and rendering through kainjow would cost more than
// building the data, for a large backend most of a run. The walk keeps
// kainjow's rendering rules exactly, so the output is byte for byte what
// kainjow renders from the converted data:
//   - lookups search the context stack from the innermost entry; a dotted
//     name resolves entirely within one entry; `.` is the innermost entry;
//   - a string renders as it is, a number as JSON prints it, anything else
//     (booleans, null, maps, lists) as nothing; nothing is escaped;
//   - a section renders for each item of a non-empty list, once with any
//     other value but false, null and the empty list; an inverted section
//     renders for those three and for a missing name;
//   - a line that held a rendered section tag and is left empty or blank is
//     dropped with its newline (kainjow's line buffer), the last line too;
//   - comments and set-delimiter tags render nothing and leave the line as
//     it is; a partial renders inline, sharing the line.
#include "generator/render/renderer.h"
#include "generator/support/io.h"

#include <filesystem>

#include <kainjow/mustache.hpp>

#include "generator/support/diagnostics.h"

namespace accgen::render {

namespace mst = kainjow::mustache;
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
};

struct TemplateSet::Compiled {
  std::vector<Node> nodes;
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

std::vector<std::string> splitName(const std::string& name) {
  std::vector<std::string> parts;
  if (name.find('.') == std::string::npos) return parts;
  std::size_t start = 0;
  for (std::size_t dot; (dot = name.find('.', start)) != std::string::npos;
       start = dot + 1) {
    parts.push_back(name.substr(start, dot - start));
  }
  parts.push_back(name.substr(start));
  return parts;
}

/// kainjow's components as Nodes: texts between newlines merged, closing
/// section tags, comments and set-delimiter tags dropped.
void compileInto(const std::vector<mst::component<std::string>>& components,
                 std::vector<Node>& out) {
  for (const auto& c : components) {
    Node n;
    switch (c.tag.type) {
      case mst::tag_type::text:
        if (c.is_newline()) {
          n.kind = Node::Kind::kNewline;
        } else if (!out.empty() && out.back().kind == Node::Kind::kText) {
          out.back().text += c.text;
          continue;
        }
        n.text = c.text;
        break;
      case mst::tag_type::variable:
      case mst::tag_type::unescaped_variable:
        n.kind = Node::Kind::kVariable;
        break;
      case mst::tag_type::section_begin:
      case mst::tag_type::section_begin_inverted:
        n.kind = c.tag.type == mst::tag_type::section_begin
                     ? Node::Kind::kSection
                     : Node::Kind::kInverted;
        compileInto(c.children, n.children);
        break;
      case mst::tag_type::partial:
        n.kind = Node::Kind::kPartial;
        break;
      default:
        continue;
    }
    if (n.kind != Node::Kind::kText && n.kind != Node::Kind::kNewline) {
      n.text = c.tag.name;
      n.path = splitName(c.tag.name);
    }
    out.push_back(std::move(n));
  }
}

/// Parses `text`; throws naming `label` on a syntax error.
std::unique_ptr<TemplateSet::Compiled> compile(const std::string& text,
                                               const std::string& label) {
  mst::context<std::string> ctx;
  mst::context_internal<std::string> internal{ctx};
  mst::component<std::string> root;
  std::string error;
  mst::parser<std::string> parse{text, internal, root, error};
  if (!error.empty()) {
    throw AccgenError(ExitCode::kInternal,
                      "template '" + label + "': " + error);
  }
  auto compiled = std::make_unique<TemplateSet::Compiled>();
  compileInto(root.children, compiled->nodes);
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

  std::string run(const std::vector<Node>& nodes, const json& data) {
    if (set_.globals_) stack_.push_back(set_.globals_.get());
    stack_.push_back(&data);
    render(nodes);
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
  return Walk(*this, name).run(compiled(name).nodes, data);
}

std::string TemplateSet::renderText(const std::string& text, const json& data,
                                    const std::string& label) {
  return Walk(*this, label).run(compile(text, label)->nodes, data);
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
