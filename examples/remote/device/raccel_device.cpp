// The device code of the ported example: functions of the device module
// (libtorch_raccel_device.so), which the remote driver loads into its device
// process and the kernels in kernels/ launch by name. Device code sees the
// device pointers, sizes and scalars of its argument block, nothing of
// torch and nothing of host memory.
#include <accgen/device.h>

#include <cstdint>
#include <cstring>

#include "raccel_args.h"

ACC_DEVICE_FUNCTION(raccel_fill) {
  raccel::FillArgs a;
  if (!accUnpackArgs(args, args_size, a) || a.itemsize == 0 ||
      a.itemsize > sizeof(a.pattern)) {
    return accErrorInvalidValue;
  }
  auto* out = static_cast<unsigned char*>(a.data);
  for (uint64_t i = 0; i < a.numel; ++i) {
    std::memcpy(out + i * a.itemsize, a.pattern, a.itemsize);
  }
  return accSuccess;
}

// --8<-- [start:device-add]
ACC_DEVICE_FUNCTION(raccel_add_f32) {
  raccel::BinaryArgs a;
  if (!accUnpackArgs(args, args_size, a)) {
    return accErrorInvalidValue;
  }
  for (uint64_t i = 0; i < a.n; ++i) {
    a.out[i] = a.x[i] + a.alpha * a.y[i];
  }
  return accSuccess;
}
// --8<-- [end:device-add]

ACC_DEVICE_FUNCTION(raccel_mul_f32) {
  raccel::BinaryArgs a;
  if (!accUnpackArgs(args, args_size, a)) {
    return accErrorInvalidValue;
  }
  for (uint64_t i = 0; i < a.n; ++i) {
    a.out[i] = a.x[i] * a.y[i];
  }
  return accSuccess;
}

ACC_DEVICE_FUNCTION(raccel_relu_f32) {
  raccel::UnaryArgs a;
  if (!accUnpackArgs(args, args_size, a)) {
    return accErrorInvalidValue;
  }
  for (uint64_t i = 0; i < a.n; ++i) {
    // NaN stays NaN, as torch.relu keeps it.
    a.out[i] = a.x[i] < 0.0f ? 0.0f : a.x[i];
  }
  return accSuccess;
}

// out[m, n] = x[m, k] @ y[k, n], row-major, accumulated in float as the
// CPU's float32 matmul does.
ACC_DEVICE_FUNCTION(raccel_mm_f32) {
  raccel::MatmulArgs a;
  if (!accUnpackArgs(args, args_size, a)) {
    return accErrorInvalidValue;
  }
  for (uint64_t i = 0; i < a.m; ++i) {
    float* row = a.out + i * a.n;
    for (uint64_t j = 0; j < a.n; ++j) {
      row[j] = 0.0f;
    }
    for (uint64_t p = 0; p < a.k; ++p) {
      const float scale = a.x[i * a.k + p];
      const float* y_row = a.y + p * a.n;
      for (uint64_t j = 0; j < a.n; ++j) {
        row[j] += scale * y_row[j];
      }
    }
  }
  return accSuccess;
}

// out[r] = the sum of x[r * n .. r * n + n), for r < rows: a reduction over
// the innermost, contiguous elements, in double as a pairwise sum would
// keep it close to the CPU's.
ACC_DEVICE_FUNCTION(raccel_sum_f32) {
  raccel::ReduceArgs a;
  if (!accUnpackArgs(args, args_size, a)) {
    return accErrorInvalidValue;
  }
  for (uint64_t r = 0; r < a.rows; ++r) {
    double total = 0.0;
    const float* x = a.x + r * a.n;
    for (uint64_t i = 0; i < a.n; ++i) {
      total += x[i];
    }
    a.out[r] = static_cast<float>(total);
  }
  return accSuccess;
}
