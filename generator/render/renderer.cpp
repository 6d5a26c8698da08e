// Strict mustache rendering over kainjow mustache.
//
// Note [Strict templates]
// kainjow renders an undefined tag as nothing. A template that names a key an
// emitter forgot would then emit silently wrong code, so every render goes
// through StrictContext, which records each name the data does not resolve;
// any miss turns the render into an error. Sections and inverted sections are
// strict too: an emitter states every flag a template tests.
#include "generator/render/renderer.h"
#include "generator/support/io.h"

#include <unistd.h>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <kainjow/mustache.hpp>

#include "generator/support/diagnostics.h"

namespace accgen::render {
namespace {

namespace mst = kainjow::mustache;

mst::data toData(const nlohmann::json& j) {
  switch (j.type()) {
    case nlohmann::json::value_t::object: {
      mst::data d{mst::data::type::object};
      for (const auto& [key, value] : j.items())
        d.set(key, toData(value));
      return d;
    }
    case nlohmann::json::value_t::array: {
      mst::data d{mst::data::type::list};
      for (const auto& value : j)
        d.push_back(toData(value));
      return d;
    }
    case nlohmann::json::value_t::string:
      return mst::data{j.get<std::string>()};
    case nlohmann::json::value_t::boolean:
      return mst::data{j.get<bool>()};
    case nlohmann::json::value_t::null:
      return mst::data{false};
    default:
      return mst::data{j.dump()};
  }
}

std::string readTemplate(const std::string& path) {
  auto text = readFile(path);
  if (!text) {
    throw AccgenError(ExitCode::kInternal,
                      "cannot read template '" + path + "'");
  }
  return *text;
}

/// A context that resolves like kainjow's and remembers what it could not.
class StrictContext : public mst::basic_context<std::string> {
 public:
  StrictContext(const mst::data* root,
                std::function<const std::string&(const std::string&)> partial)
      : inner_(root), partial_(std::move(partial)) {}

  void push(const mst::data* data) override { inner_.push(data); }
  void pop() override { inner_.pop(); }

  const mst::data* get(const std::string& name) const override {
    const mst::data* d = inner_.get(name);
    if (d == nullptr) missing_.push_back(name);
    return d;
  }

  const mst::data* get_partial(const std::string& name) const override {
    auto it = partials_.find(name);
    if (it == partials_.end()) {
      it = partials_.emplace(name, mst::data{partial_(name)}).first;
    }
    return &it->second;
  }

  const std::vector<std::string>& missing() const { return missing_; }

 private:
  mst::context<std::string> inner_;
  std::function<const std::string&(const std::string&)> partial_;
  mutable std::map<std::string, mst::data> partials_;
  mutable std::vector<std::string> missing_;
};

}  // namespace

struct TemplateSet::Globals {
  mst::data data;
};

struct TemplateSet::Compiled {
  explicit Compiled(const std::string& text) : tmpl(text) {}
  mst::mustache tmpl;
};

TemplateSet::TemplateSet(std::string root) : root_(std::move(root)) {}

void TemplateSet::setGlobals(const nlohmann::json& globals) {
  globals_ = std::make_unique<Globals>(Globals{toData(globals)});
}
TemplateSet::~TemplateSet() = default;

const std::string& TemplateSet::partialText(const std::string& name) {
  auto it = partials_.find(name);
  if (it == partials_.end()) {
    it = partials_
             .emplace(name,
                      readTemplate(root_ + "/partials/" + name + ".mustache"))
             .first;
  }
  return it->second;
}

TemplateSet::Compiled& TemplateSet::compiled(const std::string& name) {
  auto it = cache_.find(name);
  if (it != cache_.end()) return *it->second;
  auto c = std::make_unique<Compiled>(readTemplate(root_ + "/" + name));
  if (!c->tmpl.is_valid()) {
    throw AccgenError(ExitCode::kInternal,
                      "template '" + name + "': " + c->tmpl.error_message());
  }
  c->tmpl.set_custom_escape([](const std::string& s) { return s; });
  return *cache_.emplace(name, std::move(c)).first->second;
}

namespace {

std::string renderWith(
    mst::mustache& tmpl, const nlohmann::json& data, const mst::data* globals,
    const std::string& label,
    std::function<const std::string&(const std::string&)> partial) {
  mst::data root = toData(data);
  StrictContext ctx(globals, std::move(partial));
  if (globals == nullptr) ctx.pop();
  ctx.push(&root);
  std::string out = tmpl.render(ctx);
  if (!tmpl.is_valid()) {
    throw AccgenError(ExitCode::kInternal,
                      "template '" + label + "': " + tmpl.error_message());
  }
  if (!ctx.missing().empty()) {
    std::string names;
    for (const auto& m : ctx.missing()) {
      if (names.find("'" + m + "'") != std::string::npos) continue;
      names += (names.empty() ? "'" : ", '") + m + "'";
    }
    throw AccgenError(ExitCode::kInternal,
                      "template '" + label + "': undefined variable " + names);
  }
  return out;
}

}  // namespace

std::string TemplateSet::render(const std::string& name,
                                const nlohmann::json& data) {
  return renderWith(compiled(name).tmpl, data,
                    globals_ ? &globals_->data : nullptr, name,
                    [this](const std::string& p) -> const std::string& {
                      return partialText(p);
                    });
}

std::string TemplateSet::renderText(const std::string& text,
                                    const nlohmann::json& data,
                                    const std::string& label) {
  mst::mustache tmpl(text);
  if (!tmpl.is_valid()) {
    throw AccgenError(ExitCode::kInternal,
                      "template '" + label + "': " + tmpl.error_message());
  }
  tmpl.set_custom_escape([](const std::string& s) { return s; });
  return renderWith(tmpl, data, globals_ ? &globals_->data : nullptr, label,
                    [this](const std::string& p) -> const std::string& {
                      return partialText(p);
                    });
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
