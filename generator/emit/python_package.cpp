// The Python package emitter: <package>/__init__.py, which registers the
// device with PyTorch and builds torch.<device> (devices, streams, events,
// generators, memory, autocast), and csrc/python/Module.cpp, the bindings
// it stands on (the extension module <package>._C).
#include <string>
#include <vector>

#include "generator/emit/emitter.h"
#include "generator/emit/emitters.h"
#include "generator/model/backend.h"

namespace accgen::emit {

std::vector<OutputFile> emitPythonPackage(const model::Backend& backend) {
  std::vector<OutputFile> files(2);
  files[0].path = "csrc/python/Module.cpp";
  files[0].template_name = "backend/csrc/python/Module.cpp.mustache";
  // The package directory is named after the package, so the template has
  // a fixed name and the path is computed here.
  files[1].path = backend.package() + "/__init__.py";
  files[1].template_name = "backend/package/__init__.py.mustache";
  return files;
}

}  // namespace accgen::emit
