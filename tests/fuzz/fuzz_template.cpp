// libFuzzer target: the template renderer (render::TemplateSet::renderText)
// on template text, with data of every JSON kind a template sees.
#include <nlohmann/json.hpp>

#include "generator/render/renderer.h"
#include "tests/fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data,
                                      std::size_t size) {
  static const nlohmann::json kData = {
      {"name", "add.Tensor"},
      {"device", "accel"},
      {"flag", true},
      {"off", false},
      {"count", 3},
      {"items",
       {{{"name", "a"}, {"last", false}}, {{"name", "b"}, {"last", true}}}},
      {"words", {"x", "y"}},
      {"nested", {{"inner", {{"value", "v"}}}}},
  };
  // The real templates, so that partials ({{> banner_cpp}}) resolve.
  static accgen::render::TemplateSet templates(ACCGEN_TEMPLATE_DIR);
  return accgen::fuzz::expectRefusalsOnly(
      [&] {
        (void)templates.renderText(
            std::string(accgen::fuzz::textOf(data, size)), kData,
            "fuzz.mustache");
      },
      /*internal_refuses=*/true);
}
