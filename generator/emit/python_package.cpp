// The Python package emitter: src/<package>/__init__.py, which re-exports
// accgen's device module (runtime/python/_device.py, installed into
// the package as _device.py by accgen_add_backend) and registers the
// package as torch.<device>. The bindings it stands on (<package>._C) are
// the runtime's too.
#include <string>
#include <vector>

#include "generator/emit/emitter.h"
#include "generator/emit/emitters.h"
#include "generator/model/backend.h"

namespace accgen::emit {

std::vector<OutputFile> emitPythonPackage(const model::Backend& backend) {
  std::vector<OutputFile> files(1);
  // The package directory is named after the package (src layout, so that
  // the unbuilt sources never shadow the installed package), so the
  // template has a fixed name and the path is computed here.
  files[0].path = "src/" + backend.package() + "/__init__.py";
  files[0].template_name = "backend/package_init.py.mustache";
  return files;
}

}  // namespace accgen::emit
