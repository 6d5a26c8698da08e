// Quantized tensors on the device: quantize_per_tensor and
// quantize_per_channel of dense device tensors, and on the
// QuantizedPrivateUse1 key the allocation, copies, parameters,
// dequantize and int_repr of quantized device tensors.
//
// Note [Quantized tensors on the device]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// A quantized tensor is a tensor of a quantized dtype (qint8, quint8,
// qint32) whose quantizer holds the scale(s) and zero point(s); its bytes
// are those of the underlying integer type. ATen's quantizers and
// allocation are device-generic (new_qtensor allocates through the device's
// allocator), so they are registered as they are. What computes runs as a
// kernel on the device (emulate::HostViews): the CPU's quantize and
// dequantize read host aliases of the device memory, and the integers are
// reached through a dense view of the underlying type over the same storage
// (integerView), which also serves int_repr and copies. Per-channel
// parameters are small and move to the host before the kernel runs. Views
// (view, as_strided, and through them the composite view operators) are
// ATen's device-generic ones, which keep the quantizer. Every other
// operator runs as sparse ones do (Note [Sparse tensors on the device]):
// its quantized arguments copied to the host, the QuantizedCPU kernel, the
// results copied back; one the CPU does not implement either raises
// NotImplementedError naming it and the device (the fallback of
// QuantizedPrivateUse1). A vendor registers device kernels on the same
// keys (docs/operators.md, "Sparse and quantized tensors").

#include <ATen/core/Tensor.h>
#include <ATen/ops/_copy_from.h>
#include <ATen/ops/_empty_affine_quantized.h>
#include <ATen/ops/_empty_affine_quantized_native.h>
#include <ATen/ops/_empty_per_channel_affine_quantized.h>
#include <ATen/ops/_empty_per_channel_affine_quantized_native.h>
#include <ATen/ops/_make_per_channel_quantized_tensor.h>
#include <ATen/ops/_make_per_tensor_quantized_tensor.h>
#include <ATen/ops/_reshape_alias_native.h>
#include <ATen/ops/as_strided_native.h>
#include <ATen/ops/clone_native.h>
#include <ATen/ops/dequantize.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_like_native.h>
#include <ATen/ops/empty_native.h>
#include <ATen/ops/empty_quantized_native.h>
#include <ATen/ops/int_repr.h>
#include <ATen/ops/q_per_channel_axis_native.h>
#include <ATen/ops/q_per_channel_scales_native.h>
#include <ATen/ops/q_per_channel_zero_points_native.h>
#include <ATen/ops/q_scale_native.h>
#include <ATen/ops/q_zero_point_native.h>
#include <ATen/ops/qscheme_native.h>
#include <ATen/ops/quantize_per_channel.h>
#include <ATen/ops/quantize_per_tensor.h>
#include <ATen/ops/view_native.h>
#include <c10/core/TensorImpl.h>
#include <c10/util/Exception.h>
#include <c10/util/FunctionRef.h>
#include <torch/library.h>

#include "Guarded.h"
#include "Internal.h"
#include "accgen/runtime/Emulate.h"
#include "accgen/runtime/Registration.h"
#include "accgen/runtime/Runtime.h"

namespace accgen::runtime {
namespace {

// A dense tensor of the underlying integer type of the quantized tensor `q`
// (int8 for qint8, ...) over the same bytes, on q's device.
at::Tensor integerView(const at::Tensor& q) {
  TORCH_CHECK(q.is_cpu() || q.device().type() == kDeviceType,
              "expected a quantized tensor on cpu or ", kDeviceName,
              ", got one on ", q.device());
  const c10::DispatchKey key =
      q.is_cpu() ? c10::DispatchKey::CPU : c10::DispatchKey::PrivateUse1;
  return detail::tensorOver(
      q.storage(), key,
      c10::scalarTypeToTypeMeta(c10::toUnderlying(q.scalar_type())), q.sizes(),
      q.strides(), q.storage_offset());
}

// The quantizer of a device tensor, its per-channel parameters on the host.
struct HostQuantizer {
  c10::QScheme scheme = c10::kPerTensorAffine;
  double scale = 1;
  int64_t zero_point = 0;
  at::Tensor scales;
  at::Tensor zero_points;
  int64_t axis = 0;

  explicit HostQuantizer(const at::Tensor& q) : scheme(q.qscheme()) {
    if (scheme == c10::kPerTensorAffine) {
      scale = q.q_scale();
      zero_point = q.q_zero_point();
    } else if (scheme == c10::kPerChannelAffine) {
      scales = q.q_per_channel_scales().cpu();
      zero_points = q.q_per_channel_zero_points().cpu();
      axis = q.q_per_channel_axis();
    } else {
      TORCH_CHECK_NOT_IMPLEMENTED(
          false, "quantized tensors of scheme ", c10::toString(scheme),
          " are not supported on device '", kDeviceName, "'");
    }
  }

  // A host quantized tensor with these parameters holding `integers`.
  at::Tensor quantized(const at::Tensor& integers) const {
    if (scheme == c10::kPerTensorAffine) {
      return at::_make_per_tensor_quantized_tensor(integers, scale, zero_point);
    }
    return at::_make_per_channel_quantized_tensor(integers, scales, zero_points,
                                                  axis);
  }
};

// `q` (allocated on the device) receives the integers of `quantize` run on
// the host alias of `self`.
at::Tensor quantizeInto(
    const at::Tensor& self, const at::Tensor& q,
    c10::function_ref<at::Tensor(const at::Tensor&)> quantize) {
  emulate::HostViews host;
  const at::Tensor host_self = host(self);
  at::Tensor host_integers = host(integerView(q));
  host.run([&] { host_integers.copy_(quantize(host_self).int_repr()); });
  return q;
}

at::Tensor wrapper_quantize_per_tensor(const at::Tensor& self, double scale,
                                       int64_t zero_point,
                                       at::ScalarType dtype) {
  const at::Tensor q = at::_empty_affine_quantized(
      self.sizes(), self.options().dtype(dtype), scale, zero_point,
      self.suggest_memory_format());
  return quantizeInto(self, q, [&](const at::Tensor& host) {
    return at::quantize_per_tensor(host, scale, zero_point, dtype);
  });
}

at::Tensor wrapper_quantize_per_tensor_tensor_qparams(
    const at::Tensor& self, const at::Tensor& scale,
    const at::Tensor& zero_point, at::ScalarType dtype) {
  return wrapper_quantize_per_tensor(self, scale.item<double>(),
                                     zero_point.item<int64_t>(), dtype);
}

at::Tensor wrapper_quantize_per_channel(const at::Tensor& self,
                                        const at::Tensor& scales,
                                        const at::Tensor& zero_points,
                                        int64_t axis, at::ScalarType dtype) {
  const at::Tensor q = at::_empty_per_channel_affine_quantized(
      self.sizes(), scales, zero_points, axis, self.options().dtype(dtype),
      self.suggest_memory_format());
  const at::Tensor host_scales = scales.cpu();
  const at::Tensor host_zero_points = zero_points.cpu();
  return quantizeInto(self, q, [&](const at::Tensor& host) {
    return at::quantize_per_channel(host, host_scales, host_zero_points, axis,
                                    dtype);
  });
}

at::Tensor wrapper_dequantize_self(const at::Tensor& self) {
  const HostQuantizer quantizer(self);
  at::Tensor result = at::empty(self.sizes(), self.options().dtype(at::kFloat),
                                self.suggest_memory_format());
  emulate::HostViews host;
  const at::Tensor host_integers = host(integerView(self));
  at::Tensor host_result = host(result);
  host.run([&] {
    host_result.copy_(quantizer.quantized(host_integers).dequantize());
  });
  return result;
}

at::Tensor wrapper_int_repr(const at::Tensor& self) {
  const at::Tensor integers = integerView(self);
  at::Tensor result =
      at::empty(self.sizes(), integers.options(), self.suggest_memory_format());
  result.copy_(integers);
  return result;
}

// Copies between quantized tensors of the host and the device move their
// integers; copy_ has already given `dst` the quantizer of `self`.
at::Tensor wrapper_quantized__copy_from(const at::Tensor& self,
                                        const at::Tensor& dst,
                                        bool non_blocking) {
  TORCH_CHECK(self.is_quantized() && dst.is_quantized(),
              "copies of quantized tensors on ", kDeviceName,
              " need quantized tensors on both sides, got ", self.scalar_type(),
              " -> ", dst.scalar_type());
  at::_copy_from(integerView(self), integerView(dst), non_blocking);
  return dst;
}

at::Tensor wrapper__empty_affine_quantized(
    c10::SymIntArrayRef size, std::optional<at::ScalarType> dtype,
    std::optional<at::Layout> layout, std::optional<at::Device> device,
    std::optional<bool> pin_memory, double scale, int64_t zero_point,
    std::optional<at::MemoryFormat> memory_format) {
  return at::native::empty_affine_quantized(C10_AS_INTARRAYREF_SLOW(size),
                                            dtype, layout, device, pin_memory,
                                            scale, zero_point, memory_format);
}

at::Tensor wrapper__empty_per_channel_affine_quantized(
    c10::SymIntArrayRef size, const at::Tensor& scales,
    const at::Tensor& zero_points, int64_t axis,
    std::optional<at::ScalarType> dtype, std::optional<at::Layout> layout,
    std::optional<at::Device> device, std::optional<bool> pin_memory,
    std::optional<at::MemoryFormat> memory_format) {
  return at::native::empty_per_channel_affine_quantized(
      C10_AS_INTARRAYREF_SLOW(size), scales, zero_points, axis, dtype, layout,
      device, pin_memory, memory_format);
}

void quantizedOnHost(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  detail::runOnHost(op, stack, "quantized");
}

}  // namespace

ACCGEN_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("quantize_per_channel",
         detail::guarded<&wrapper_quantize_per_channel>());
  m.impl("quantize_per_tensor",
         detail::guarded<&wrapper_quantize_per_tensor>());
  m.impl("quantize_per_tensor.tensor_qparams",
         detail::guarded<&wrapper_quantize_per_tensor_tensor_qparams>());
}

ACCGEN_LIBRARY_IMPL(aten, QuantizedPrivateUse1, m) {
  m.impl("_copy_from", TORCH_FN(wrapper_quantized__copy_from));
  m.impl("_empty_affine_quantized",
         detail::guarded<&wrapper__empty_affine_quantized>());
  m.impl("_empty_per_channel_affine_quantized",
         detail::guarded<&wrapper__empty_per_channel_affine_quantized>());
  m.impl("clone", detail::guarded<&at::native::quantized_clone>());
  m.impl("dequantize.self", detail::guarded<&wrapper_dequantize_self>());
  m.impl("empty.memory_format",
         detail::guarded<&at::native::empty_unknown_quantized>());
  m.impl("empty_like", detail::guarded<&at::native::empty_like_quantized>());
  m.impl("empty_quantized", detail::guarded<&at::native::empty_quantized>());
  m.impl("int_repr", TORCH_FN(wrapper_int_repr));
  m.impl("q_per_channel_axis", TORCH_FN(at::native::q_per_channel_axis));
  m.impl("q_per_channel_scales", TORCH_FN(at::native::q_per_channel_scales));
  m.impl("q_per_channel_zero_points",
         TORCH_FN(at::native::q_per_channel_zero_points));
  m.impl("q_scale", TORCH_FN(at::native::q_scale_quant));
  m.impl("q_zero_point", TORCH_FN(at::native::q_zero_point_quant));
  m.impl("qscheme", TORCH_FN(at::native::qscheme_quant));
  // Views: ATen's own, which keep the quantizer.
  m.impl("_reshape_alias", TORCH_FN(at::native::_reshape_alias));
  m.impl("as_strided", TORCH_FN(at::native::as_strided_qtensorimpl));
  m.impl("view", TORCH_FN(at::native::view));
  // Every other operator the CPU computes for quantized tensors runs on the
  // host, and so does every structured operator, whose composite kernel
  // (CompositeExplicitAutogradNonFunctional: cat, exp) would otherwise take
  // it before the key's fallback sees it and fail on a result without a
  // quantizer; on the host it computes or raises what the CPU raises.
  auto& dispatcher = c10::Dispatcher::singleton();
  for (const c10::OperatorName& name : dispatcher.getAllOpNames()) {
    const auto op = dispatcher.findOp(name);
    if (!op.has_value() || name.name.rfind("aten::", 0) != 0 ||
        !(op->hasKernelForDispatchKey(c10::DispatchKey::QuantizedCPU) ||
          op->hasKernelForDispatchKey(
              c10::DispatchKey::CompositeExplicitAutogradNonFunctional)) ||
        op->hasKernelForDispatchKey(c10::DispatchKey::QuantizedPrivateUse1)) {
      continue;
    }
    std::string short_name = name.name.substr(6);
    if (!name.overload_name.empty()) {
      short_name += "." + name.overload_name;
    }
    m.impl(short_name.c_str(),
           torch::CppFunction::makeFromBoxedFunction<&quantizedOnHost>());
  }
}

ACCGEN_LIBRARY_IMPL(_, QuantizedPrivateUse1, m) {
  m.fallback(torch::CppFunction::makeFromBoxedFunction<&quantizedOnHost>());
}

}  // namespace accgen::runtime
