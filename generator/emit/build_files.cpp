// The build files emitter: what makes a generated backend a pip-installable
// project: CMakeLists.txt (the extension module over libtorch and the
// accgen driver), pyproject.toml (scikit-build-core, the torch.backends
// entry point) and .gitignore (the in-tree build directory).
#include <string>
#include <vector>

#include "generator/emit/emitter.h"
#include "generator/emit/emitters.h"
#include "generator/model/backend.h"

namespace accgen::emit {

std::vector<OutputFile> emitBuildFiles(const model::Backend& /*backend*/) {
  std::vector<OutputFile> files(3);
  files[0].path = ".gitignore";
  // A template named ".gitignore.mustache" would be hidden from listings.
  files[0].template_name = "backend/gitignore.mustache";
  files[1].path = "CMakeLists.txt";
  files[1].template_name = "backend/CMakeLists.txt.mustache";
  files[2].path = "pyproject.toml";
  files[2].template_name = "backend/pyproject.toml.mustache";
  return files;
}

}  // namespace accgen::emit
