// Structured loops on the device: the emulated operators of
// accgen/runtime/detail/StructuredLoops.def run ATen's CPU loop directly on
// the device tensors, without host aliases.
#include "accgen/runtime/StubSupport.h"

#include <ATen/Dispatch_v2.h>
#include <ATen/EmptyTensor.h>
#include <ATen/native/Activation.h>
#include <ATen/native/BinaryOps.h>
#include <ATen/native/Lerp.h>
#include <ATen/native/PointwiseOps.h>
#include <ATen/native/UnaryOps.h>
#include <c10/core/DeviceGuard.h>
#include <c10/core/DynamicCast.h>
#include <c10/util/StringUtil.h>

#include <atomic>
#include <deque>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "Engine.h"
#include "accgen/runtime/detail/StructuredLoops.h"

// Note [Structured loops on the device]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// The CPU kernel of a structured pointwise operator (mul, add_, addcdiv_,
// threshold_backward) is ATen's structured class for its group: meta()
// builds a TensorIterator over the arguments (broadcasting, type promotion,
// overlap checks, the result's shape and strides), and impl() calls one
// DispatchStub, whose CPU entry is the loop. The class is the same on every
// device: CUDA's kernel for mul is that class with CUDA's stub entry. So
// instead of running the CPU kernel on host aliases of the device tensors
// (Note [How an emulated operator runs]), the engine runs the class on the
// device tensors themselves: meta() allocates the result on the device,
// and the stub's PrivateUse1 entry (registered below) runs the CPU loop on
// the device memory, as a kernel on the current stream. No aliases, no
// shape cache, no second TensorIterator: a small such call costs its CPU
// kernel, one allocation and one launch.
//
// It runs so when the loop computes what the CPU kernel would:
//  - every operand has the iterator's common dtype. On the CPU, the
//    iterator casts operands of other dtypes to it (and results back); on
//    any other device it leaves that to the device's kernel, and the CPU
//    loop reads each operand as the common dtype (Note [Emulated stub
//    entries do not cast]). A CPU scalar (a Python number, a 0-dim CPU
//    tensor) of another dtype is cast here, exactly as the CPU's iterator
//    casts it; any other mismatch goes to the engine's rule.
//  - an in-place form's `self`, or an out= form's `out`, keeps its shape
//    and dtype (one the CPU would resize or cast into goes to the engine);
//  - meta() raises nothing: on an error the engine's rule runs the call and
//    raises the CPU kernel's error after its own device checks (Note
//    [Device misuse]);
//  - the work is small (at most kInlineBytes) and the stream idle, so that
//    the loop runs at once on the calling thread (Note [Queued operators]).
//    Otherwise the engine queues the call, owning its arguments: the host
//    goes on, as on CUDA. The stub entry declines a busy stream, and the
//    engine then runs the call.
//  - the host computes on device memory and no graph is being captured
//    (the engine records captured launches).
// tests/python/test_structured_loops.py compares both paths with the CPU.

namespace accgen::runtime::emulate::detail {
namespace {

// TensorIteratorBase keeps its operands protected; a member pointer named
// through a derived class reads them on any iterator.
struct IteratorOperands : at::TensorIteratorBase {
  static constexpr auto kOperands = &IteratorOperands::operands_;
};

bool castableScalarType(at::ScalarType t) {
  switch (t) {
    case at::kByte:
    case at::kChar:
    case at::kShort:
    case at::kInt:
    case at::kLong:
    case at::kBool:
    case at::kHalf:
    case at::kBFloat16:
    case at::kFloat:
    case at::kDouble:
    case at::kComplexFloat:
    case at::kComplexDouble:
      return true;
    default:
      return false;
  }
}

// A CPU scalar operand cast to `dtype`, as the CPU's iterator casts it
// (TensorIteratorBase::compute_types: the operand is exchanged for its
// cast; original_tensor_base() stays the caller's).
bool castCpuScalar(at::OperandInfo& op, at::ScalarType dtype) {
  if (!castableScalarType(dtype) || !castableScalarType(op.current_dtype)) {
    return false;
  }
  at::Tensor cast = at::detail::empty_cpu({}, dtype);
  const void* from = op.tensor_base().const_data_ptr();
  AT_DISPATCH_V2(dtype, "cast_cpu_scalar", AT_WRAP([&] {
                   *cast.mutable_data_ptr<scalar_t>() =
                       c10::fetch_and_cast<scalar_t>(op.current_dtype, from);
                 }),
                 AT_EXPAND(AT_ALL_TYPES_AND_COMPLEX), at::kHalf, at::kBFloat16,
                 at::kBool);
  cast.unsafeGetTensorImpl()->set_wrapped_number(
      op.tensor_base().unsafeGetTensorImpl()->is_wrapped_number());
  op.exchange_tensor(c10::MaybeOwned<at::TensorBase>::owned(std::move(cast)));
  op.current_dtype = dtype;
  op.target_dtype = dtype;
  // NOLINTNEXTLINE(cppcoreguidelines-pro-type-const-cast)
  op.data = const_cast<void*>(op.tensor_base().const_data_ptr());
  return true;
}

thread_local LoopScope* tls_loop_scope = nullptr;

struct LoopCounters {
  std::mutex mutex;
  // Never erased: each operator's kernel keeps a reference to its count.
  std::deque<std::pair<std::string, std::atomic<int64_t>>> counts;
};

LoopCounters& loopCounters() {
  // Never destroyed: operators may still run during static destruction.
  static auto* counters = new LoopCounters();
  return *counters;
}

}  // namespace

std::atomic<int64_t>& loopCounter(const char* name, const char* overload) {
  LoopCounters& counters = loopCounters();
  const std::lock_guard<std::mutex> lock(counters.mutex);
  std::string full(name);
  if (overload[0] != '\0') {
    full += c10::str(".", overload);
  }
  auto& entry = counters.counts.emplace_back();
  entry.first = std::move(full);
  return entry.second;
}

bool loopsRunNow() noexcept {
  return hostComputes() && !graphCaptureInProgress();
}

// Also the loop path's start, once meta() ran: as every emulated call
// does, the warnings of kernels queued earlier are raised on the caller's
// thread first.
bool readyForLoop(at::TensorIteratorBase& iter) {
  raiseDeferredWarnings();
  auto& operands = iter.*IteratorOperands::kOperands;
  const std::optional<at::ScalarType> common = iter.maybe_common_dtype();
  const at::ScalarType dtype =
      common.has_value() ? *common : operands[0].current_dtype;
  std::size_t bytes = 0;
  for (int i = 0; i < iter.ntensors(); ++i) {
    at::OperandInfo& op = operands[i];
    const bool cpu_scalar = i >= iter.noutputs() && iter.is_cpu_scalar(i);
    if (op.current_dtype != dtype &&
        !(cpu_scalar && castCpuScalar(op, dtype))) {
      return false;
    }
    if (!cpu_scalar) {
      bytes += op.tensor_base().nbytes();
    }
  }
  return bytes <= kInlineBytes;
}

void loopKeptShapes(Rule& rule) noexcept {
  if (!rule.out_proven.load(std::memory_order_relaxed)) {
    rule.out_proven.store(true, std::memory_order_relaxed);
  }
}

at::Tensor allocateLoopResult(at::IntArrayRef sizes, at::IntArrayRef strides,
                              const at::TensorOptions& options) {
  const c10::DeviceIndex device = options.device().index();
  std::optional<c10::DeviceGuard> guard;
  if (device >= 0 && device != currentDevice()) {
    guard.emplace(options.device());
  }
  const at::ScalarType dtype = options.dtype().toScalarType();
  if (strides.size() == sizes.size()) {
    return allocateResult(sizes, strides, dtype);
  }
  return at::detail::empty_generic(
      sizes, getDeviceAllocator(),
      c10::DispatchKeySet(c10::DispatchKey::PrivateUse1), dtype, std::nullopt);
}

LoopScope::LoopScope() noexcept : outer_(tls_loop_scope) {
  tls_loop_scope = this;
}

LoopScope::~LoopScope() {
  tls_loop_scope = outer_;
}

LoopScope* LoopScope::current() noexcept {
  return tls_loop_scope;
}

}  // namespace accgen::runtime::emulate::detail

namespace accgen::runtime {

std::vector<std::pair<std::string, int64_t>> structuredLoopCounts() {
  emulate::detail::LoopCounters& counters = emulate::detail::loopCounters();
  const std::lock_guard<std::mutex> lock(counters.mutex);
  std::vector<std::pair<std::string, int64_t>> counts;
  for (const auto& [op, calls] : counters.counts) {
    const int64_t n = calls.load(std::memory_order_relaxed);
    if (n > 0) {
      counts.emplace_back(op, n);
    }
  }
  return counts;
}

}  // namespace accgen::runtime

// The PrivateUse1 entries of the stubs the table's impls call (Note [Stub
// entries of the owner only] in accgen/runtime/StubSupport.h).
namespace at::native {
#define ACCGEN_LOOP_STUB(stub) ACCGEN_STUB_ON_DEVICE(stub)
#include "accgen/runtime/detail/StructuredLoops.def"
}  // namespace at::native
