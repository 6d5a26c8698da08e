// Helpers of the generated registrations of `stub` operators
// (csrc/ops/RegisterStubs.cpp of a backend): the device entry of a
// DispatchStub, which runs the stub's CPU loop on the device memory as a
// kernel on the current stream, and the structured kernel adapter that
// computes into a given out= tensor. Include it before any other ATen
// header: the CPU-capability macros below must precede DispatchStub.h.
#pragma once

// Calling a stub's CPU entry from here needs DispatchStub.h to declare the
// CPU capabilities torch itself was built with; these macros come from
// torch's build, not its headers (x86-64 wheels have AVX2 and AVX512).
#if defined(__x86_64__) || defined(_M_X64)
#define HAVE_AVX512_CPU_DEFINITION
#define HAVE_AVX2_CPU_DEFINITION
#endif

#include <cstddef>
#include <tuple>
#include <type_traits>
#include <utility>

#include <ATen/TensorIterator.h>
#include <ATen/native/DispatchStub.h>
#include <ATen/native/Resize.h>
#include <c10/util/SmallVector.h>

#include "accgen/runtime/Emulate.h"
#include "accgen/runtime/Registration.h"
#include "accgen/runtime/Runtime.h"

namespace accgen::runtime::stubs {

// The device memory a stub's arguments give its loop.
class StubBuffers {
 public:
  void add(const at::TensorIteratorBase& iter) {
    checkDtypes(iter);
    for (int i = 0; i < iter.ntensors(); ++i) {
      add(iter.tensor_base(i));
    }
  }
  void add(const at::TensorBase& t) {
    if (t.defined() && t.device().type() == kDeviceType) {
      // Note [Device misuse] in src/emulate/Aliases.cpp.
      emulate::checkInBounds(t);
      if (device_ < 0) {
        device_ = t.device().index();
      }
      if (t.storage().data() != nullptr) {
        buffers_.push_back(t.storage().data());
      }
      bytes_ += t.nbytes();
    }
  }
  // Any other argument: a TensorIterator of a stub typed with the derived
  // class (addr_stub) counts as its base; scalars and the rest carry no
  // device memory.
  template <class T>
  void add(const T& arg) {
    if constexpr (std::is_base_of_v<at::TensorIteratorBase, T>) {
      add(static_cast<const at::TensorIteratorBase&>(arg));
    }
  }

  c10::DeviceIndex device() const {
    return device_ < 0 ? currentDevice() : device_;
  }
  c10::ArrayRef<const void*> buffers() const { return buffers_; }
  /// The bytes of the operands.
  std::size_t bytes() const { return bytes_; }

 private:
  // --8<-- [start:stub-entries-do-not-cast]
  // Note [Emulated stub entries do not cast]
  // ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
  // On the CPU, a TensorIterator casts inputs to the computation dtype (and
  // results back) before the loop runs; on any other device it leaves that
  // to the device's kernel, which reads each operand in its own dtype (as
  // CUDA's loops do). The stub's CPU loop cannot: it would read an int64
  // input of sin as floats. So the emulated entry refuses operands of
  // another dtype than the computation's (torch.sin of an int64 tensor),
  // with an error that says so, instead of computing garbage; bool results
  // of comparisons and CPU scalars are read correctly. An operator that
  // needs casts is listed `emulate` until its stub has a device kernel.
  // --8<-- [end:stub-entries-do-not-cast]
  static void checkDtypes(const at::TensorIteratorBase& iter) {
    const auto common = iter.maybe_common_dtype();
    if (!common.has_value()) {
      return;
    }
    for (int i = 0; i < iter.ntensors(); ++i) {
      const at::ScalarType dtype = iter.dtype(i);
      const bool bool_result = i < iter.noutputs() && dtype == at::kBool;
      TORCH_CHECK(dtype == *common || bool_result || iter.is_cpu_scalar(i),
                  "the emulated ", kDeviceName, " stub loop computes in ",
                  *common, " but an operand is ", dtype,
                  "; cast the operands to ", *common,
                  " first, or register the operator with kind "
                  "emulate, whose CPU kernel casts");
    }
  }

  c10::SmallVector<const void*, 4> buffers_;
  std::size_t bytes_ = 0;
  c10::DeviceIndex device_ = -1;
};

// An argument a queued loop keeps: a copy of the iterator whose operands
// are its own tensors over the same memory (the caller's may be gone when
// the loop runs; as on CUDA, the loop keeps no device memory allocated:
// ownedByLaunch), or the value of a scalar.
struct OwnedStubArg {
  // TensorIteratorBase keeps its operands protected; a member pointer named
  // through a derived class reads them.
  struct Operands : at::TensorIteratorBase {
    static constexpr auto kOperands = &Operands::operands_;
  };
  static at::TensorIterator of(const at::TensorIteratorBase& iter) {
    at::TensorIterator owned(iter);
    for (at::OperandInfo& op : owned.*Operands::kOperands) {
      op.tensor(c10::MaybeOwned<at::TensorBase>::owned(
          ownedByLaunch(at::Tensor(op.tensor_base()))));
    }
    return owned;
  }
  template <class T>
  static std::decay_t<T> of(const T& value) {
    return value;
  }
};

// Whether a loop with an argument of type T may be queued: iterators and
// values are kept; anything else (a generator, whose draws must happen in
// the host's order) makes the loop wait.
template <class T>
inline constexpr bool kQueueableStubArg =
    std::is_base_of_v<at::TensorIteratorBase, std::decay_t<T>> ||
    std::is_arithmetic_v<std::decay_t<T>> || std::is_enum_v<std::decay_t<T>> ||
    std::is_same_v<std::decay_t<T>, c10::Scalar>;

// The device's entry of a DispatchStub: its CPU loop, launched on the device.
template <auto& stub, class Fn>
struct OnDevice;

template <auto& stub, class... Args>
struct OnDevice<stub, void (*)(Args...)> {
  static void run(Args... args) {
    // Note [Host access]: no copies can stand in for the loop's operands.
    requireHostAccess("a `stub` entry (its DispatchStub's CPU loop)");
    StubBuffers buffers;
    (buffers.add(args), ...);
    const auto loop = [&] {
      stub(c10::DeviceType::CPU, std::forward<Args>(args)...);
    };
    // Note [Structured loops on the device]: at once, or not at all.
    if (auto* scope = emulate::detail::LoopScope::current()) {
      if (!emulate::runOnDeviceIfIdle(buffers.device(), buffers.buffers(),
                                      loop)) {
        scope->decline();
      }
      return;
    }
    if constexpr ((kQueueableStubArg<Args> && ...)) {
      // Note [Queued operators]: the iterator checked the operands on the
      // host; the loop is queued with what it reads.
      emulate::queueOnDevice(
          buffers.device(), buffers.buffers(), buffers.bytes(),
          [owned = std::make_tuple(OwnedStubArg::of(args)...)]() mutable {
            std::apply(
                [](auto&... kept) { stub(c10::DeviceType::CPU, kept...); },
                owned);
          },
          c10::str("the ", kDeviceName, " stub loop"));
    } else {
      emulate::runOnDevice(buffers.device(), buffers.buffers(), loop);
    }
  }
};

// Note [Stub entries of the owner only]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// A DispatchStub's PrivateUse1 entry is one pointer for the whole process,
// as the dispatcher's kernels are one table: a backend loaded after another
// one took the PrivateUse1 device type must leave the owner's entries
// alone, or the owner's operators would run the other backend's loops on
// its driver (Registration.h). ACCGEN_STUB_ON_DEVICE(stub) sets the entry
// to OnDevice's when this backend owns the device type, at load time.
template <class Stub>
class DeviceEntry {
 public:
  DeviceEntry(Stub& stub, typename Stub::FnPtr entry) {
    if (ownsDevice()) {
      stub.set_privateuse1_dispatch_ptr(entry);
    }
  }
};

// A structured kernel class of ATen (at::native::structured_<op>_out)
// computing into a given out= tensor: its meta() decides the result's
// shape, dtype and strides, which the tensor takes as an out= argument
// does, and its impl() runs the stub (Note [Stubs of structured operators]
// in accgen's generator/emit/operators.cpp).
template <class Kernel>
class IntoOutput final : public Kernel {
 public:
  explicit IntoOutput(const at::Tensor& out) : out_(out) {}

  void set_output_strided(int64_t index, at::IntArrayRef sizes,
                          at::IntArrayRef strides,
                          at::TensorOptions options) override {
    prepare(sizes, strides, options);
    Kernel::set_output_raw_strided(index, sizes, strides, options);
  }

  void set_output_raw_strided(int64_t index, at::IntArrayRef sizes,
                              at::IntArrayRef strides,
                              at::TensorOptions options) override {
    prepare(sizes, strides, options);
    Kernel::set_output_raw_strided(index, sizes, strides, options);
  }

  const at::Tensor& maybe_get_output(int64_t) override { return out_; }

 private:
  // An out= tensor keeps its strides unless it has to be resized.
  void prepare(at::IntArrayRef sizes, at::IntArrayRef strides,
               const at::TensorOptions& options) {
    TORCH_CHECK(options.dtype() == out_.dtype(),
                "expected an out tensor of "
                "dtype ",
                options.dtype(), ", got ", out_.dtype());
    TORCH_CHECK(options.device() == out_.device(),
                "expected an out tensor "
                "on ",
                options.device(), ", got one on ", out_.device());
    if (at::native::resize_output(out_, sizes) && !strides.empty()) {
      out_.as_strided_(sizes, strides);
    }
  }

  const at::Tensor& out_;
};

}  // namespace accgen::runtime::stubs

// In namespace at::native, where the stubs are declared.
#define ACCGEN_STUB_ON_DEVICE(stub)                                         \
  static const ::accgen::runtime::stubs::DeviceEntry<decltype(stub)>        \
      stub##_accgen_device_entry(stub, &::accgen::runtime::stubs::OnDevice< \
                                           stub, decltype(stub)::FnPtr>::run);
