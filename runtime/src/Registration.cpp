// Claiming PrivateUse1 for this backend and the registrations that follow
// (Note [One PrivateUse1 backend per process] in Registration.h).
#include "accgen/runtime/Registration.h"

#include <ATen/core/CachingHostAllocator.h>
#include <ATen/detail/PrivateUse1HooksInterface.h>
#include <c10/core/Allocator.h>
#include <c10/core/AutogradState.h>
#include <c10/core/DeviceType.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>

#include "Internal.h"
#include "accgen/runtime/Runtime.h"

namespace accgen::runtime {
namespace {

struct Claim {
  bool owned = false;
  std::string taken_by;
};

// --8<-- [start:claim-device]
Claim claimDevice() {
  // Another backend holds the device type once it registered its hooks or
  // renamed PrivateUse1 to a name of its own.
  if (at::isPrivateUse1HooksRegistered() ||
      (c10::is_privateuse1_backend_registered() &&
       c10::get_privateuse1_backend() != kDeviceName)) {
    return {false, c10::get_privateuse1_backend()};
  }
  c10::register_privateuse1_backend(kDeviceName);
  static const c10::impl::DeviceGuardImplRegistrar guard_registrar(
      kDeviceType, detail::guardImpl());
  c10::SetAllocator(kDeviceType, getTensorAllocator());
  detail::installKernelResultsAllocator();
  if (kPinnedMemory) {
    at::setHostAllocator(kDeviceType, getHostAllocator());
  }
  at::RegisterPrivateUse1HooksInterface(detail::hooks());
  detail::registerSerialization();
  detail::registerProfiler();
  detail::registerGraphs();
  // Note [Backward on the calling thread]
  // ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
  // The autograd engine runs a device's backward on a worker thread of its
  // own, as for CUDA, where the host only queues kernels. The emulated
  // device's kernels are CPU code: on that thread they start OpenMP and
  // BLAS thread pools of their own, which compete with the calling thread's
  // spinning ones (a small CNN's training step took 1.6x as long, and CPU
  // work in the same process slowed by 3x). So the thread that loads the
  // backend (the one that imports it, the main thread of a C++ program)
  // runs backward passes itself, as it does for the CPU; a program that
  // wants the device thread back calls
  // torch.autograd.set_multithreading_enabled(True) on its thread.
  c10::AutogradState::get_tls_state().set_multithreading_enabled(false);
  return {true, {}};
}
// --8<-- [end:claim-device]

const Claim& claim() {
  static const Claim result = [] {
    try {
      return claimDevice();
    } catch (const std::exception&) {
      // c10 refused a registration: another backend got there first.
      return Claim{false, c10::get_privateuse1_backend()};
    }
  }();
  return result;
}

}  // namespace

bool ownsDevice() noexcept {
  return claim().owned;
}

std::string deviceTakenBy() {
  return claim().taken_by;
}

namespace detail {

LibraryInit::LibraryInit(torch::Library::Kind kind,
                         void (*init)(torch::Library&), const char* ns,
                         std::optional<c10::DispatchKey> key, const char* file,
                         std::uint32_t line) {
  if (ownsDevice()) {
    library_.emplace(kind, ns, key, file, line);
    init(*library_);
  }
}

}  // namespace detail
}  // namespace accgen::runtime
