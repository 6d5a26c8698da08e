// The one door to the driver interface (accgen/driver.h): every call the
// runtime makes goes through ACCGEN_CHECK, which turns an error code into a
// c10 exception naming the call, its file and line and the driver's
// message. Out-of-memory becomes c10::OutOfMemoryError so that Python sees
// torch.OutOfMemoryError and can recover.
#pragma once

#include <accgen/driver.h>

#include <c10/macros/Macros.h>

namespace accgen::runtime::detail {

/// Throws the c10 exception for a failed driver call: c10::OutOfMemoryError
/// for accErrorMemoryAllocation, c10::Error otherwise.
[[noreturn]] void throwDriverError(accError_t error, const char* call,
                                   const char* file, int line,
                                   const char* function);

/// Trims a compiler-given path to its part from the last "csrc/" or
/// "runtime/" directory on, so that messages do not depend on where the
/// backend or accgen was built.
const char* shortSourcePath(const char* file);

}  // namespace accgen::runtime::detail

/// Evaluates a driver call; on failure throws a c10 exception that names the
/// call, the file and line, and accGetErrorString() of the result.
#define ACCGEN_CHECK(expr)                                     \
  do {                                                         \
    const ::accError_t driver_error_ = (expr);                 \
    if (C10_UNLIKELY(driver_error_ != ::accSuccess)) {         \
      ::accgen::runtime::detail::throwDriverError(             \
          driver_error_, #expr, __FILE__, __LINE__, __func__); \
    }                                                          \
  } while (0)
