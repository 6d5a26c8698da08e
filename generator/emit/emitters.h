// Declarations of every emitter function; the registry table in registry.cpp
// lists them. Each returns the OutputFiles of one output family.
#pragma once

#include <vector>

#include "generator/emit/emitter.h"

namespace accgen::emit {

/// csrc/runtime/* (driver checks, device guard and streams, allocators,
/// generators, hooks) and csrc/ops/Builtin*.cpp; HostAllocator.cpp only with
/// features.pinned_memory.
std::vector<OutputFile> emitRuntime(const model::Backend& backend);

/// <package>/__init__.py and csrc/python/Module.cpp.
std::vector<OutputFile> emitPythonPackage(const model::Backend& backend);

/// CMakeLists.txt, pyproject.toml and .gitignore.
std::vector<OutputFile> emitBuildFiles(const model::Backend& backend);

/// csrc/ops/Emulate.*, RegisterEmulate_<k>.cpp, KernelDecls.h,
/// RegisterKernels.cpp, RegisterStubs.cpp, RegisterFallback.cpp,
/// CustomOps.cpp, Autocast.cpp and the user-owned kernels/*.cpp: every
/// registration of operators.yaml and autocast.yaml (operators.cpp).
std::vector<OutputFile> emitOperators(const model::Backend& backend);

/// tests/conformance/: the backend's conformance suite (backend_spec.py
/// with every fact of the specs it tests, conftest.py and the test files).
std::vector<OutputFile> emitConformance(const model::Backend& backend);

}  // namespace accgen::emit
