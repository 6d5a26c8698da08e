// What accgen's libFuzzer targets share (tests/fuzz, docs/reliability.md):
// an input either parses or is refused with accgen's own error types;
// anything else escaping the parser (another exception, a crash, a
// sanitizer report, a time-out, runaway memory) is a bug that libFuzzer
// reports.
#pragma once

#include <cstddef>
#include <cstdint>
#include <exception>
#include <string_view>

#include "generator/schema/schema.h"
#include "generator/support/diagnostics.h"

namespace accgen::fuzz {

inline std::string_view textOf(const std::uint8_t* data, std::size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

/// Runs `parse` on the input; accgen's input errors are expected outcomes.
/// An AccgenError of kind kInternal (unless `internal_refuses`: templates
/// are accgen's own, so the renderer reports their faults as internal), or
/// any other exception, is a bug: it aborts, so that libFuzzer keeps the
/// input.
template <class Parse>
int expectRefusalsOnly(Parse&& parse, bool internal_refuses = false) {
  try {
    parse();
  } catch (const AccgenError& error) {
    if (error.code() == ExitCode::kInternal && !internal_refuses) {
      std::terminate();
    }
  } catch (const schema::SchemaParseError&) {
  }
  return 0;
}

}  // namespace accgen::fuzz
