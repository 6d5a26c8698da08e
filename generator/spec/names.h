// Naming rules shared by the spec and model layers: what makes a valid
// Python identifier, C++ identifier, operator name and torch device name.
//
// The device name is the most constrained: torch parses device strings as
// letters and underscores only ("accel:1"), refuses in-tree device type names
// for PrivateUse1, and registers the runtime module as torch.<device>, which
// must not replace an existing torch attribute.
#pragma once

#include <string>
#include <string_view>

namespace accgen::spec {

/// ASCII Python identifier: [A-Za-z_][A-Za-z0-9_]*.
bool isIdentifier(std::string_view name);

/// A hard Python keyword (`class`, `import`, `None`, ...).
bool isPythonKeyword(std::string_view name);

/// A C++20 keyword or alternative token (`new`, `and`, `co_await`, ...).
bool isCppKeyword(std::string_view name);

/// A device type c10 already defines, spelt as torch.device accepts it
/// ("cpu", "cuda", "privateuseone", ...).
bool isTorchDeviceType(std::string_view name);

/// A public attribute of the torch module that is not an operator: a
/// submodule (`nn`, `fft`, `cuda`) or a well-known object (`device`,
/// `float16`). torch.<device> would have to replace it.
bool isReservedTorchAttribute(std::string_view name);

/// "name" or "name.overload" with identifier characters in both parts.
bool isOperatorName(std::string_view name);

/// The reasons `device` is not a usable device name, or "" when it is.
/// Checks: not empty, only lower-case letters and underscores, not a Python
/// keyword, not a torch device type, not a torch attribute.
std::string deviceNameProblem(std::string_view device);

/// Why `ns` cannot be the backend's C++ namespace, or "" when it can.
std::string cppNamespaceProblem(std::string_view ns);

}  // namespace accgen::spec
