// What a vendor tunes when porting the runtime to hardware: the caching
// allocators' block policy, the stream pools and the device properties.
//
// Note [Runtime tuning]
// ~~~~~~~~~~~~~~~~~~~~~
// The runtime reads a RuntimeTuning once, on first use, after handing the
// defaults below to tuneRuntime(). Every backend defines tuneRuntime in a
// file of its own (csrc/tuning.cpp of its tree, created once by `accgen
// generate` and never touched again, like the kernel files), so a vendor
// changes these values without editing any generated file. Values outside
// their documented range are refused with a c10::Error when the runtime
// first reads them.
#pragma once

#include <cstddef>
#include <functional>

#include <accgen/driver.h>

#include <c10/core/Device.h>

namespace accgen::runtime {

// --8<-- [start:runtime-tuning]
struct RuntimeTuning {
  /// The caching device allocator (Note [Device caching allocator]).
  struct DeviceAllocator {
    /// Requests are rounded up to a multiple of this (a power of two).
    std::size_t round_bytes = 512;
    /// Blocks up to this size count in the small pool of the statistics.
    std::size_t small_block_bytes = std::size_t{1} << 20;
    /// A cached block serves a request of at least 1/reuse_ratio its size.
    std::size_t reuse_ratio = 2;
    /// false: freed blocks go back to the driver at once (no cache).
    bool caching = true;
  } device_allocator;

  /// The pinned host allocator (features.pinned_memory).
  struct HostAllocator {
    /// Requests are rounded up to a multiple of this (a power of two).
    std::size_t round_bytes = 512;
  } host_allocator;

  /// The stream pools of each device (Note [Device stream pools]).
  struct Streams {
    /// Streams per pool, 1 to 32; there is a pool per priority.
    int per_pool = 4;
  } streams;

  /// Adjusts the properties the driver reports for a device before torch
  /// sees them (torch.<device>.get_device_properties): e.g. a marketing
  /// name. Empty: the driver's values as they are.
  std::function<void(c10::DeviceIndex, accDeviceProp&)> device_properties;
};

/// Defined by each backend (csrc/tuning.cpp): adjusts `tuning`, which holds
/// the defaults above when it is called, once, on the runtime's first use.
void tuneRuntime(RuntimeTuning& tuning);
// --8<-- [end:runtime-tuning]

/// The tuning in force: the defaults as tuneRuntime() left them, checked.
const RuntimeTuning& tuning();

/// Throws a c10::Error naming the first field of `tuning` outside its range.
void checkTuning(const RuntimeTuning& tuning);

/// The properties of `device` as torch sees them: the driver's, passed
/// through RuntimeTuning::device_properties.
accDeviceProp deviceProperties(c10::DeviceIndex device);

}  // namespace accgen::runtime
