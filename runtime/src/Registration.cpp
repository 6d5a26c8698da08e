// Claiming PrivateUse1 for this backend and the registrations that follow
// (Note [One PrivateUse1 backend per process] in Registration.h).
#include "accgen/runtime/Registration.h"

#include <ATen/core/CachingHostAllocator.h>
#include <ATen/detail/PrivateUse1HooksInterface.h>
#include <c10/core/Allocator.h>
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
  if (kPinnedMemory) {
    at::setHostAllocator(kDeviceType, getHostAllocator());
  }
  at::RegisterPrivateUse1HooksInterface(detail::hooks());
  detail::registerSerialization();
  detail::registerProfiler();
  return {true, {}};
}

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
