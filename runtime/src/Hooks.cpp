// The PrivateUse1 hooks of the device: how device-generic ATen code (lazy
// initialisation, pinned memory, generators, storage resizing, the
// torch.accelerator API) reaches this backend. Registered when the
// extension is loaded.
#include <ATen/core/Generator.h>
#include <ATen/detail/PrivateUse1HooksInterface.h>
#include <c10/core/Storage.h>
#include <c10/core/StorageImpl.h>
#include <c10/util/Exception.h>

#include "Internal.h"
#include "accgen/runtime/Driver.h"
#include "accgen/runtime/Runtime.h"

namespace accgen::runtime {
namespace {

// --8<-- [start:hooks]
struct Hooks final : public at::PrivateUse1HooksInterface {
  void init() const override {
    initDriver();
    TORCH_CHECK(deviceCount() > 0, kDeviceName,
                ": the driver reports no devices");
    refuseHostCode();
  }

  bool isBuilt() const override { return true; }

  bool isAvailable() const override { return deviceCount() > 0; }

  bool hasPrimaryContext(c10::DeviceIndex device_index) const override {
    // The driver has no per-device context to create.
    return device_index >= 0 && device_index < deviceCount();
  }

  c10::DeviceIndex deviceCount() const override {
    return accgen::runtime::deviceCount();
  }

  void setCurrentDevice(c10::DeviceIndex device) const override {
    setDevice(device);
  }

  c10::DeviceIndex getCurrentDevice() const override { return currentDevice(); }

  c10::DeviceIndex exchangeDevice(c10::DeviceIndex device) const override {
    return accgen::runtime::exchangeDevice(device);
  }

  c10::DeviceIndex maybeExchangeDevice(c10::DeviceIndex device) const override {
    return accgen::runtime::exchangeDevice(device);
  }

  bool isPinnedPtr(const void* data) const override {
    return accgen::runtime::isPinnedPtr(data);
  }

  at::Allocator* getPinnedMemoryAllocator() const override {
    return accgen::runtime::getPinnedMemoryAllocator();
  }

  at::Device getDeviceFromPtr(void* data) const override {
    accPointerAttributes attributes{};
    ACCGEN_CHECK(accPointerGetAttributes(&attributes, data));
    TORCH_CHECK(attributes.type == accMemoryTypeDevice, kDeviceName,
                ": the pointer is not device memory");
    return {kDeviceType, static_cast<c10::DeviceIndex>(attributes.device)};
  }

  const at::Generator& getDefaultGenerator(
      c10::DeviceIndex device_index) const override {
    return accgen::runtime::getDefaultGenerator(device_index);
  }

  at::Generator getNewGenerator(c10::DeviceIndex device_index) const override {
    return makeGenerator(device_index);
  }

  void resizePrivateUse1Bytes(const c10::Storage& storage,
                              size_t new_size) const override {
    resizeStorageBytes(storage.unsafeGetStorageImpl(), new_size);
  }
};
// --8<-- [end:hooks]

}  // namespace

at::PrivateUse1HooksInterface* detail::hooks() {
  static Hooks hooks;
  return &hooks;
}
}  // namespace accgen::runtime
