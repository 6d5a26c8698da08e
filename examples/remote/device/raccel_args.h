// The argument blocks of the device functions in raccel_device.cpp, shared
// by the device code and the kernels that launch it (kernels/): plain
// structs of device pointers, sizes and scalars, copied as bytes.
#pragma once

#include <cstdint>

namespace raccel {

struct FillArgs {
  void* data;
  uint64_t numel;
  uint64_t itemsize;
  unsigned char pattern[16];  // one element's bytes
};

struct BinaryArgs {
  float* out;
  const float* x;
  const float* y;
  float alpha;
  uint64_t n;
};

struct UnaryArgs {
  float* out;
  const float* x;
  uint64_t n;
};

struct MatmulArgs {
  float* out;
  const float* x;
  const float* y;
  uint64_t m;
  uint64_t k;
  uint64_t n;
};

struct ReduceArgs {
  float* out;
  const float* x;
  uint64_t rows;
  uint64_t n;
};

}  // namespace raccel
