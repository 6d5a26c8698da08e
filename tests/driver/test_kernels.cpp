// Device functions for the driver acceptance tests: a module loaded with
// accModuleLoad and launched by name. Device code sees device pointers and
// sizes only.
#include <accgen/device.h>

#include <chrono>
#include <cstdint>
#include <cstring>
#include <thread>

// out[i] = value for i < n.
ACC_DEVICE_FUNCTION(fill_u32) {
  struct {
    uint32_t* out;
    uint64_t n;
    uint32_t value;
  } a;
  if (!accUnpackArgs(args, args_size, a)) {
    return accErrorInvalidValue;
  }
  for (uint64_t i = 0; i < a.n; ++i) {
    a.out[i] = a.value;
  }
  return accSuccess;
}

// out[i] = x[i] + y[i] for i < n.
ACC_DEVICE_FUNCTION(add_f32) {
  struct {
    float* out;
    const float* x;
    const float* y;
    uint64_t n;
  } a;
  if (!accUnpackArgs(args, args_size, a)) {
    return accErrorInvalidValue;
  }
  for (uint64_t i = 0; i < a.n; ++i) {
    a.out[i] = a.x[i] + a.y[i];
  }
  return accSuccess;
}

// Keeps its stream busy for `ms` milliseconds.
ACC_DEVICE_FUNCTION(sleep_ms) {
  uint64_t ms = 0;
  if (!accUnpackArgs(args, args_size, ms)) {
    return accErrorInvalidValue;
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(ms));
  return accSuccess;
}

// Fails, as a kernel that found bad input on the device.
ACC_DEVICE_FUNCTION(fail) {
  (void)args;
  (void)args_size;
  return accErrorLaunchFailure;
}
