// CPU stand-ins for the device generators, for operators that run their CPU
// kernel on the device's behalf (the CPU fallback, emulated kernels).
//
// --8<-- [start:device-generators-note]
// Note [Device generators on CPU kernels]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// CPU kernels accept CPU generators only. While such a kernel runs for
// the device, a CpuGeneratorScope gives it a CPU generator holding the
// engine state of the device generator it stands for (the one passed, or the
// device's default generator when none was), holding that generator's lock,
// and moves the device generator to its next offset when the scope ends
// (Note [Device generator state], runtime/src/Generator.cpp). Seeding
// through torch.<device> therefore behaves as on any device, independently
// of the CPU generator.
// --8<-- [end:device-generators-note]
#pragma once

#include <mutex>
#include <optional>

#include <ATen/core/Generator.h>
#include <c10/core/Device.h>

namespace accgen::runtime {

/// Lends a CPU generator to a CPU kernel in place of a device generator.
class CpuGeneratorScope {
 public:
  /// `generator`: a generator of the device; nullopt (or an undefined
  /// generator) means the default generator of `device` (-1: current).
  CpuGeneratorScope(const std::optional<at::Generator>& generator,
                    c10::DeviceIndex device);
  ~CpuGeneratorScope();
  CpuGeneratorScope(const CpuGeneratorScope&) = delete;
  CpuGeneratorScope& operator=(const CpuGeneratorScope&) = delete;

  /// The CPU generator to pass to the kernel.
  const at::Generator& cpu() const { return cpu_; }

  /// The device generator it stands for.
  const at::Generator& device() const { return device_; }

 private:
  at::Generator device_;
  std::unique_lock<std::mutex> lock_;
  at::Generator cpu_;
};

}  // namespace accgen::runtime
