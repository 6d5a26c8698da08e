// Driver start-up, device selection and the translation of driver error
// codes into c10 exceptions. Everything else in the runtime reaches the
// driver through the helpers defined here and ACCGEN_CHECK.
#include "accgen/runtime/Driver.h"

#include <dlfcn.h>

#include <atomic>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>

#include <c10/util/Exception.h>
#include <c10/util/StringUtil.h>

#include "Internal.h"
#include "accgen/runtime/Runtime.h"

namespace accgen::runtime {
namespace detail {

const char* shortSourcePath(const char* file) {
  // The last match wins: the project itself may live below a directory of
  // either name.
  const char* short_path = file;
  for (const char* marker : {"/csrc/", "/runtime/"}) {
    for (const char* found = std::strstr(short_path, marker); found != nullptr;
         found = std::strstr(found + 1, marker)) {
      short_path = found + 1;
    }
  }
  return short_path;
}

void throwDriverError(accError_t error, const char* call, const char* file,
                      int line, const char* function) {
  std::string message =
      c10::str(kDeviceName, " driver call ", call, " failed with ",
               accGetErrorName(error), ": ", accGetErrorString(error), " (",
               shortSourcePath(file), ":", line, ")");
  if (error == accErrorLaunchFailure) {
    // Note [Queued operators]: what the failed kernels raised.
    if (const std::string queued = takeDeferredErrors(); !queued.empty()) {
      message += c10::str("\nWork queued on the ", kDeviceName,
                          " earlier failed:", queued);
    }
  }
  const c10::SourceLocation location{function, file,
                                     static_cast<std::uint32_t>(line)};
  if (error == accErrorMemoryAllocation) {
    throw c10::OutOfMemoryError(location, std::move(message));
  }
  throw c10::Error(location, std::move(message));
}

}  // namespace detail

void initDriver() noexcept {
  // A function-local static: after the first call, one load of its guard
  // (std::call_once reads several thread-locals on every call, and this
  // runs several times per operator).
  static const bool initialized = [] {
    accInitParams params{};
    params.deviceCount = kDefaultDeviceCount;
    params.memoryPerDevice = kDefaultMemoryBytes;
    // accErrorNotInitialized means someone used the driver first; it keeps
    // the settings it started with, which is all we could do anyway.
    (void)accInit(&params);
    return true;
  }();
  (void)initialized;
}

// --8<-- [start:host-access]
// Note [Host access]
// ~~~~~~~~~~~~~~~~~~
// Everything the runtime runs as CPU code over device memory asks this one
// function whether it may: the emulation engine's host aliases (`emulate`
// entries, the emulate fallback, emulate::call), the host views of the hook
// and quantized operators, the copy kernel between layouts, and the kernel
// that lands host results on the device. The driver says so per device
// (accDevAttrHostAddressable): the emulator's memory is host memory, the
// remote driver's and most accelerators' is not. Where it may not, the
// engine hands the operator to runWithoutHostAccess (Fallback.cpp: the CPU
// fallback with copies if features.host_copies allows it, an error naming
// the operator otherwise), the host views become host copies written back
// once changed, the copy kernel stages through the host, and host results
// land with the driver's copies. Nothing else in the runtime reads or
// writes device memory from the host. What the spec lists as such code
// (`stub` entries; `emulate` entries and the emulate fallback without
// features.host_copies) refuses the whole backend up front: refuseHostCode
// at the device's initialization, and accgen_add_backend at configure time
// for a driver target whose ACCGEN_HOST_ADDRESSABLE is OFF.
// --8<-- [end:host-access]
bool hostComputes() noexcept {
  static const bool computes = [] {
    initDriver();
    int value = 1;
    int count = 0;
    if (accGetDeviceCount(&count) != accSuccess || count <= 0 ||
        accDeviceGetAttribute(&value, accDevAttrHostAddressable, 0) !=
            accSuccess) {
      return true;  // no device: nothing runs on one either way
    }
    return value != 0;
  }();
  return computes;
}

void requireHostAccess(const char* what) {
  TORCH_CHECK(hostComputes(), kDeviceName, ": ", what,
              " runs as CPU code over device memory, but the host cannot "
              "address this driver's device memory "
              "(accDevAttrHostAddressable is 0). Write a kernel for the "
              "operator (kind: kernel) or run it on the CPU (kind: "
              "fallback).");
}

void refuseHostCode() {
  if (hostComputes()) {
    return;
  }
  std::string refused;
  auto add = [&](const char* what, const std::string& names) {
    if (!names.empty()) {
      refused += std::string(refused.empty() ? "" : "; ") + what + names;
    }
  };
  add("`stub` entries (ATen's CPU loops): ", kNeedsHostAccess);
  if (!kHostCopies) {
    add("`emulate` entries: ", kNeedsHostCopies);
    if (kEmulateFallback) {
      add("",
          "the emulate fallback (fallback: emulate), which runs every "
          "operator operators.yaml does not list");
    }
  }
  TORCH_CHECK(refused.empty(), kDeviceName,
              ": the host cannot address this driver's device memory "
              "(accDevAttrHostAddressable is 0), but specs/operators.yaml "
              "and specs/backend.yaml run CPU code over it: ",
              refused,
              ". Write a kernel for each (kind: kernel) or run it on the CPU "
              "(kind: fallback, or fallback: cpu); features.host_copies: true "
              "runs the `emulate` entries and the emulate fallback through "
              "the CPU fallback with copies.");
}

accFunction_t deviceFunction(const char* name) {
  TORCH_CHECK(*kDeviceModule != '\0', kDeviceName, ": ", name,
              " asked for, but the backend has no device module (device "
              "code in DEVICE_SOURCES of accgen_add_backend)");
  struct Module {
    std::mutex mutex;
    accModule_t handle = nullptr;
    std::unordered_map<std::string, accFunction_t> functions;
  };
  static Module module;
  const std::lock_guard<std::mutex> lock(module.mutex);
  if (auto it = module.functions.find(name); it != module.functions.end()) {
    return it->second;
  }
  if (module.handle == nullptr) {
    // Beside the core library, which holds this function.
    Dl_info info{};
    TORCH_CHECK(dladdr(reinterpret_cast<void*>(&deviceFunction), &info) != 0 &&
                    info.dli_fname != nullptr,
                kDeviceName, ": cannot locate the backend's library");
    std::string path = info.dli_fname;
    path = path.substr(0, path.find_last_of('/') + 1) + kDeviceModule;
    initDriver();
    const accError_t loaded = accModuleLoad(&module.handle, path.c_str());
    TORCH_CHECK(loaded == accSuccess, kDeviceName,
                ": cannot load the device module ", path, ": ",
                accGetErrorString(loaded));
  }
  accFunction_t function = nullptr;
  const accError_t found = accModuleGetFunction(&function, module.handle, name);
  TORCH_CHECK(found == accSuccess, kDeviceName, ": the device module has no ",
              "function ", name, " (", accGetErrorString(found), ")");
  module.functions.emplace(name, function);
  return function;
}

namespace {

struct LaunchCounts {
  std::mutex mutex;
  std::map<std::string, int64_t, std::less<>> calls;
};

LaunchCounts& launchCounts() {
  static auto* counts = new LaunchCounts();  // read until exit
  return *counts;
}

}  // namespace

void launchDeviceFunction(const char* name, const void* args,
                          std::size_t size) {
  accFunction_t function = deviceFunction(name);
  const accError_t launched =
      accLaunchFunction(function, args, size, currentNativeStream());
  TORCH_CHECK(launched == accSuccess, kDeviceName, ": launching ", name,
              " failed: ", accGetErrorString(launched));
  LaunchCounts& counts = launchCounts();
  const std::lock_guard<std::mutex> lock(counts.mutex);
  auto it = counts.calls.find(std::string_view(name));
  if (it == counts.calls.end()) {
    it = counts.calls.emplace(name, 0).first;
  }
  ++it->second;
}

namespace {
std::atomic<int64_t> g_host_to_device{0};
std::atomic<int64_t> g_device_to_host{0};
}  // namespace

accError_t copyAsync(void* dst, const void* src, std::size_t count,
                     accMemcpyKind kind, accStream_t stream) {
  if (kind == accMemcpyHostToDevice) {
    g_host_to_device.fetch_add(static_cast<int64_t>(count),
                               std::memory_order_relaxed);
  } else if (kind == accMemcpyDeviceToHost) {
    g_device_to_host.fetch_add(static_cast<int64_t>(count),
                               std::memory_order_relaxed);
  }
  return accMemcpyAsync(dst, src, count, kind, stream);
}

TransferBytes transferBytes() noexcept {
  return {g_host_to_device.load(std::memory_order_relaxed),
          g_device_to_host.load(std::memory_order_relaxed)};
}

std::vector<std::pair<std::string, int64_t>> deviceFunctionCounts() {
  LaunchCounts& counts = launchCounts();
  const std::lock_guard<std::mutex> lock(counts.mutex);
  return {counts.calls.begin(), counts.calls.end()};
}

c10::DeviceIndex deviceCount() noexcept {
  // The count cannot change once the driver is up, and c10 asks for it on
  // every guard construction: ask the driver once.
  static const c10::DeviceIndex count = [] {
    initDriver();
    int driver_count = 0;
    if (accGetDeviceCount(&driver_count) != accSuccess || driver_count < 0) {
      return c10::DeviceIndex{0};
    }
    return static_cast<c10::DeviceIndex>(driver_count);
  }();
  return count;
}

void checkDeviceIndex(c10::DeviceIndex device) {
  const c10::DeviceIndex count = deviceCount();
  TORCH_CHECK(count > 0, kDeviceName, ": no devices are available");
  TORCH_CHECK(device >= 0 && device < count, "Invalid device index ",
              static_cast<int>(device), " for ", kDeviceName, ": ",
              static_cast<int>(count),
              " device(s) available, valid indices are 0..",
              static_cast<int>(count) - 1);
}

c10::DeviceIndex currentDevice() {
  initDriver();
  int device = 0;
  ACCGEN_CHECK(accGetDevice(&device));
  return static_cast<c10::DeviceIndex>(device);
}

void setDevice(c10::DeviceIndex device) {
  checkDeviceIndex(device);
  ACCGEN_CHECK(accSetDevice(device));
}

c10::DeviceIndex exchangeDevice(c10::DeviceIndex device) {
  const c10::DeviceIndex previous = currentDevice();
  if (device >= 0 && device != previous) {
    setDevice(device);
  }
  return previous;
}

c10::DeviceIndex resolveDevice(c10::DeviceIndex device) {
  if (device < 0) {
    return currentDevice();
  }
  checkDeviceIndex(device);
  return device;
}

}  // namespace accgen::runtime
