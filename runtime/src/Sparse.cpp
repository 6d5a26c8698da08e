// Sparse tensors on the device: the COO and compressed (CSR, CSC, BSR, BSC)
// layouts on the SparsePrivateUse1 and SparseCsrPrivateUse1 keys.
//
// Note [Sparse tensors on the device]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// A sparse tensor is a container of dense tensors (indices and values for
// COO; compressed and plain indices and values for the compressed layouts),
// so the device needs two things only: ATen's device-generic constructors,
// accessors and copies of the containers, registered here on the sparse
// keys, and a way to compute. Computation runs on the host: the boxed
// kernel below (the fallback of both sparse keys, and the kernel of the
// dense-to-sparse conversions on PrivateUse1) moves every device tensor
// argument to the host with .cpu(), runs the operator's CPU kernel, moves
// new results back with .to(device), and copies the host results of
// in-place and out= arguments back into the device tensors. The dense
// members never reach the host thread except through those copies. An
// operator whose result is a view of an argument cannot keep that relation
// across a copy, and one the CPU does not implement for sparse tensors
// either: both raise NotImplementedError naming the operator and the device.
// A vendor replaces any of these with a device kernel registered on the same
// key (docs/operators.md, "Sparse and quantized tensors").
#include <optional>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>
#include <ATen/core/ivalue.h>
#include <ATen/core/stack.h>
#include <ATen/ops/_coalesced_native.h>
#include <ATen/ops/_indices_native.h>
#include <ATen/ops/_nnz_native.h>
#include <ATen/ops/_sparse_coo_tensor_with_dims_and_tensors_native.h>
#include <ATen/ops/_sparse_coo_tensor_with_dims_native.h>
#include <ATen/ops/_values_native.h>
#include <ATen/ops/ccol_indices_native.h>
#include <ATen/ops/clone_native.h>
#include <ATen/ops/col_indices_native.h>
#include <ATen/ops/copy_native.h>
#include <ATen/ops/copy_sparse_to_sparse_native.h>
#include <ATen/ops/crow_indices_native.h>
#include <ATen/ops/dense_dim_native.h>
#include <ATen/ops/empty_native.h>
#include <ATen/ops/indices_native.h>
#include <ATen/ops/is_coalesced_native.h>
#include <ATen/ops/row_indices_native.h>
#include <ATen/ops/sparse_dim_native.h>
#include <ATen/ops/sparse_resize_and_clear_native.h>
#include <ATen/ops/sparse_resize_native.h>
#include <ATen/ops/values_native.h>
#include <c10/util/Exception.h>
#include <torch/library.h>

#include "Guarded.h"
#include "Internal.h"
#include "accgen/runtime/Emulate.h"
#include "accgen/runtime/Registration.h"
#include "accgen/runtime/Runtime.h"

namespace accgen::runtime {
namespace {

bool onDevice(const at::Tensor& t) {
  return t.defined() && t.device().type() == kDeviceType;
}

[[noreturn]] void unsupported(const c10::OperatorHandle& op, const char* kind,
                              const std::string& why) {
  TORCH_CHECK_NOT_IMPLEMENTED(false, "operator ", op.operator_name(),
                              " is not supported for ", kind,
                              " tensors on device '", kDeviceName, "': ", why);
}

// `value` with each tensor in it (a Tensor, Tensor[] or Tensor?[]) replaced
// by `move(tensor)`; undefined tensors and other values stay.
template <class Move>
c10::IValue mapTensors(const c10::IValue& value, const Move& move) {
  if (value.isTensor()) {
    const at::Tensor& t = value.toTensor();
    return t.defined() ? c10::IValue(move(t)) : value;
  }
  if (value.isTensorList()) {
    c10::List<at::Tensor> moved;
    for (const at::Tensor& t : value.toTensorVector()) {
      moved.push_back(t.defined() ? move(t) : t);
    }
    return moved;
  }
  if (value.isList() && value.toListRef().size() > 0 &&
      value.type()->containedType(0)->kind() == c10::TypeKind::OptionalType) {
    c10::List<std::optional<at::Tensor>> moved;
    for (const c10::IValue& element : value.toListRef()) {
      moved.push_back(element.isTensor()
                          ? std::optional<at::Tensor>(move(element.toTensor()))
                          : std::nullopt);
    }
    return moved;
  }
  return value;
}

// The tensors of `value` (a Tensor or Tensor[]), in order.
std::vector<at::Tensor> tensorsOf(const c10::IValue& value) {
  if (value.isTensor()) {
    return {value.toTensor()};
  }
  if (value.isTensorList()) {
    return value.toTensorVector();
  }
  return {};
}

// Gives the device tensor `device` the value its host copy `host` has
// after an in-place or out= operator wrote it.
void writeBack(const at::Tensor& device, const at::Tensor& host) {
  if (!device.defined() || !host.defined() || device.is_same(host)) {
    return;
  }
  if (device.layout() == at::kStrided && device.sizes() != host.sizes()) {
    device.resize_(host.sizes());
  }
  // Sparse copies resize their destination themselves.
  device.copy_(host);
}

}  // namespace

namespace detail {

// The kernel of Note [Sparse tensors on the device] (and of quantized
// tensors, Note [Quantized tensors on the device]): `op` on the host.
void runOnHost(const c10::OperatorHandle& op, torch::jit::Stack* stack,
               const char* kind) {
  const c10::FunctionSchema& schema = op.schema();
  for (const c10::Argument& ret : schema.returns()) {
    if (ret.alias_info() != nullptr && !ret.alias_info()->isWrite()) {
      unsupported(op, kind,
                  c10::str("its result is a view of an argument, which a "
                           "copy to the host cannot keep; register a kernel "
                           "for it on the ",
                           kind, " key"));
    }
  }
  const auto& arguments = schema.arguments();
  const std::size_t base = stack->size() - arguments.size();
  const std::vector<c10::IValue> originals =
      torch::jit::last(*stack, arguments.size()).vec();
  // Note [Device misuse]: a CPU tensor among device tensors, sparse or
  // dense, raises CUDA's error; the copies below would hide it.
  emulate::checkSameDevice(originals, schema);
  std::optional<c10::Device> device;
  for (std::size_t i = 0; i < arguments.size(); ++i) {
    const c10::IValue& value = originals[i];
    if (value.isDevice() && value.toDevice().type() == kDeviceType &&
        !device.has_value()) {
      device = value.toDevice();
    }
    (*stack)[base + i] = mapTensors(value, [&](const at::Tensor& t) {
      if (!onDevice(t)) {
        return t;
      }
      device = device.value_or(t.device());
      // Some CPU kernels read their arguments' requires_grad below autograd
      // (_sparse_mm_reduce_impl computes the indices its backward reads
      // only then), and a copy made here is a new leaf without it: the
      // backward would read indices never written.
      at::Tensor host = t.cpu();
      if (t.requires_grad()) {
        host.set_requires_grad(true);
      }
      return host;
    });
  }
  const std::vector<c10::IValue> host_arguments =
      torch::jit::last(*stack, arguments.size()).vec();
  bool moved = false;
  for (std::size_t i = 0; i < arguments.size() && !moved; ++i) {
    for (const at::Tensor& t : tensorsOf(originals[i])) {
      moved = moved || onDevice(t);
    }
  }
  if (!moved) {
    // Nothing to move (a factory given the device): the same call again
    // would only come back here.
    unsupported(op, kind,
                c10::str("it has no ", kind,
                         " tensor argument to compute on the host; register "
                         "a kernel for it on the ",
                         kind, " key"));
  }
  try {
    op.callBoxed(stack);
  } catch (const c10::NotImplementedError& error) {
    unsupported(op, kind, error.what_without_backtrace());
  }
  const c10::Device target =
      device.value_or(c10::Device(kDeviceType, currentDevice()));

  // In-place and out= arguments: the host copies were written.
  std::vector<std::pair<at::Tensor, at::Tensor>> written;  // host, device
  for (std::size_t i = 0; i < arguments.size(); ++i) {
    const c10::AliasInfo* alias = arguments[i].alias_info();
    if (alias == nullptr || !alias->isWrite()) {
      continue;
    }
    const std::vector<at::Tensor> hosts = tensorsOf(host_arguments[i]);
    const std::vector<at::Tensor> devices = tensorsOf(originals[i]);
    for (std::size_t k = 0; k < hosts.size() && k < devices.size(); ++k) {
      writeBack(devices[k], hosts[k]);
      written.emplace_back(hosts[k], devices[k]);
    }
  }
  // Results: a written argument is returned as the device tensor itself,
  // anything new moves to the device.
  for (auto it =
           stack->end() - static_cast<std::ptrdiff_t>(schema.returns().size());
       it != stack->end(); ++it) {
    *it = mapTensors(*it, [&](const at::Tensor& t) {
      for (const auto& [host, dev] : written) {
        if (t.is_same(host)) {
          return dev;
        }
      }
      return onDevice(t) ? t : t.to(target);
    });
  }
}

}  // namespace detail

namespace {

void sparseOnHost(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  detail::runOnHost(op, stack, "sparse");
}

torch::CppFunction onHost() {
  return torch::CppFunction::makeFromBoxedFunction<&sparseOnHost>();
}

}  // namespace

// Sparse constructors whose indices and values are dense device tensors
// dispatch here.
ACCGEN_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl(
      "_sparse_coo_tensor_with_dims_and_tensors",
      detail::guarded<&at::native::new_with_dims_and_tensor_sparse_symint>());
  m.impl("_to_sparse", onHost());
  m.impl("_to_sparse.sparse_dim", onHost());
  m.impl("_to_sparse_bsc", onHost());
  m.impl("_to_sparse_bsr", onHost());
  m.impl("_to_sparse_csc", onHost());
  m.impl("_to_sparse_csr", onHost());
}

ACCGEN_LIBRARY_IMPL(aten, SparsePrivateUse1, m) {
  m.impl("_coalesced_", TORCH_FN(at::native::_coalesced_sparse_));
  m.impl("_has_compatible_shallow_copy_type",
         TORCH_FN(detail::hasCompatibleShallowCopyType));
  m.impl("_dimI", TORCH_FN(at::native::sparse_dim_sparse));
  m.impl("_dimV", TORCH_FN(at::native::dense_dim_sparse));
  m.impl("_indices", TORCH_FN(at::native::_indices_sparse));
  m.impl("_nnz", TORCH_FN(at::native::_nnz_sparse));
  m.impl("_sparse_coo_tensor_with_dims",
         detail::guarded<&at::native::new_with_dims_sparse>());
  m.impl(
      "_sparse_coo_tensor_with_dims_and_tensors",
      detail::guarded<&at::native::new_with_dims_and_tensor_sparse_symint>());
  m.impl("_values", TORCH_FN(at::native::_values_sparse));
  m.impl("copy_", detail::guarded<&at::native::copy_sparse_wrapper_>());
  m.impl("copy_sparse_to_sparse_",
         detail::guarded<&at::native::copy_sparse_>());
  m.impl("dense_dim", TORCH_FN(at::native::dense_dim_sparse));
  m.impl("empty.memory_format",
         detail::guarded<&at::native::empty_sparse_symint>());
  m.impl("indices", TORCH_FN(at::native::indices_sparse));
  m.impl("is_coalesced", TORCH_FN(at::native::is_coalesced_sparse));
  m.impl("sparse_dim", TORCH_FN(at::native::sparse_dim_sparse));
  m.impl("sparse_resize_", detail::guarded<&at::native::sparse_resize_>());
  m.impl("sparse_resize_and_clear_",
         detail::guarded<&at::native::sparse_resize_and_clear_>());
  m.impl("values", TORCH_FN(at::native::values_sparse));
}

ACCGEN_LIBRARY_IMPL(aten, SparseCsrPrivateUse1, m) {
  m.impl("_has_compatible_shallow_copy_type",
         TORCH_FN(detail::hasCompatibleShallowCopyType));
  m.impl("_nnz", TORCH_FN(at::native::_nnz_sparse_csr));
  m.impl("ccol_indices", TORCH_FN(at::native::ccol_indices_sparse_csr));
  // Members cloned, as on CUDA: the composite clone would copy into an
  // empty tensor, which a compressed copy_ refuses (the counts differ).
  m.impl("clone", detail::guarded<&at::native::clone_sparse_compressed>());
  m.impl("col_indices", TORCH_FN(at::native::col_indices_sparse_csr));
  m.impl("copy_", detail::guarded<&at::native::copy_sparse_compressed_>());
  m.impl("crow_indices", TORCH_FN(at::native::crow_indices_sparse_csr));
  m.impl("dense_dim", TORCH_FN(at::native::dense_dim_sparse_csr));
  m.impl("empty.memory_format",
         detail::guarded<&at::native::empty_sparse_compressed_symint>());
  m.impl("row_indices", TORCH_FN(at::native::row_indices_sparse_csr));
  m.impl("sparse_dim", TORCH_FN(at::native::sparse_dim_sparse_csr));
  m.impl("values", TORCH_FN(at::native::values_sparse_csr));
}

ACCGEN_LIBRARY_IMPL(_, SparsePrivateUse1, m) {
  m.fallback(onHost());
}

ACCGEN_LIBRARY_IMPL(_, SparseCsrPrivateUse1, m) {
  m.fallback(onHost());
}

}  // namespace accgen::runtime
