// Helpers of the generated wrappers of `kernel` operators
// (csrc/ops/RegisterKernels.cpp of a backend): the Meta inputs that give a
// derived form its result shapes, the device of new results and their
// allocation. How the forms of a group derive from its one kernel: Note [One
// kernel for a group] in accgen's generator/emit/operators_kernels.cpp
// (quoted in docs/operators.md).
#pragma once

#include <optional>
#include <vector>

#include <ATen/core/List.h>
#include <ATen/core/Tensor.h>
#include <ATen/ops/empty_strided.h>
#include <c10/core/DeviceGuard.h>

#include "accgen/runtime/Emulate.h"
#include "accgen/runtime/Runtime.h"

namespace accgen::runtime::wrappers {

// Meta tensors with the dtype and geometry of the arguments: the inputs of
// the Meta kernels that give derived forms their result shapes. CPU scalars
// stay (they may be wrapped numbers, which type promotion treats apart).
inline at::Tensor toMeta(const at::Tensor& t) {
  if (!t.defined() || t.is_meta() || (t.is_cpu() && t.dim() == 0)) {
    return t;
  }
  return emulate::metaTensor(t);
}
inline std::optional<at::Tensor> toMeta(const std::optional<at::Tensor>& t) {
  if (!t.has_value()) {
    return t;
  }
  return toMeta(*t);
}
inline std::vector<at::Tensor> toMeta(const at::ITensorListRef& ts) {
  std::vector<at::Tensor> out;
  for (const at::Tensor& t : ts) {
    out.push_back(toMeta(t));
  }
  return out;
}
inline c10::List<std::optional<at::Tensor>> toMeta(
    const c10::List<std::optional<at::Tensor>>& ts) {
  c10::List<std::optional<at::Tensor>> out;
  for (std::optional<at::Tensor> t : ts) {
    out.push_back(toMeta(t));
  }
  return out;
}

inline void checkBounds(const at::Tensor& t) {
  if (t.defined() && t.device().type() == kDeviceType) {
    emulate::checkInBounds(t);
  }
}
inline void checkBounds(const std::optional<at::Tensor>& t) {
  if (t.has_value()) {
    checkBounds(*t);
  }
}
inline void checkBounds(const at::ITensorListRef& ts) {
  for (const at::Tensor& t : ts) {
    checkBounds(t);
  }
}

/// Note [Device misuse] in src/emulate/Aliases.cpp, for a kernel wrapper's
/// tensor arguments (Tensor, Tensor?, Tensor[]): a CPU tensor among device
/// tensors raises the same-device error, and a device tensor whose view reaches
/// past its storage raises before the kernel touches it.
template <class... Args>
void checkArguments(const Args&... args) {
  emulate::SameDeviceCheck check;
  (check.add(args), ...);
  check.finish();
  (checkBounds(args), ...);
}

// The device of new results: that of the first tensor argument, else the
// current device.
inline c10::Device deviceOf(const at::Tensor& t) {
  return t.device();
}
inline c10::Device deviceOf(const std::optional<at::Tensor>& t) {
  return t.has_value() ? t->device()
                       : c10::Device(kDeviceType, currentDevice());
}
inline c10::Device deviceOf(const at::ITensorListRef& ts) {
  return ts.size() > 0 ? ts.front().device()
                       : c10::Device(kDeviceType, currentDevice());
}
inline c10::Device deviceOf() {
  return c10::Device(kDeviceType, currentDevice());
}

// A new device tensor with the dtype and geometry of a meta result.
inline at::Tensor emptyLike(const at::Tensor& meta, c10::Device device) {
  return at::empty_strided(meta.sizes(), meta.strides(),
                           meta.options().device(device));
}

using ShapeCache = emulate::detail::ShapeCache;

/// The result shapes of a derived functional form: `meta()` (its Meta
/// computation over toMeta'd arguments), or the answer `cache` kept for an
/// earlier call with arguments of the same key (Note [Shape cache] in
/// src/emulate/Engine.cpp). A Meta computation that raises raises here,
/// and nothing is kept.
template <class Meta, class... Args>
ShapeCache::Results resultShapes(ShapeCache& cache, Meta&& meta,
                                 const Args&... args) {
  ShapeCache::Results shapes;
  ShapeCache::Key key;
  emulate::detail::keyDefaults(key);
  const bool keyed = (emulate::detail::keyArg(key, args) && ...);
  if (keyed && cache.lookup(key, shapes)) {
    return shapes;
  }
  emulate::detail::collectShapes(meta(), shapes);
  if (keyed) {
    cache.insert(std::move(key), shapes);
  }
  return shapes;
}

// A new device tensor of a result shape, straight from the device's
// allocator (no dispatch).
inline at::Tensor emptyLike(const ShapeCache::Result& shape,
                            c10::Device device) {
  if (device.index() == currentDevice()) {
    return emulate::detail::allocateResult(shape.sizes, shape.strides,
                                           shape.dtype);
  }
  const c10::DeviceGuard guard(device);
  return emulate::detail::allocateResult(shape.sizes, shape.strides,
                                         shape.dtype);
}

}  // namespace accgen::runtime::wrappers
