// Emulator configuration: how many devices there are, how much memory each
// has, whether device memory is guarded against host access, and how long
// threads spin before they sleep. It is resolved once, when the runtime is
// first used, from accInit's hints and then the environment, which wins.
#pragma once

#include <cstdint>
#include <optional>

namespace accgen::emulator {

inline constexpr int kDefaultDeviceCount = 2;
inline constexpr int kMaxDeviceCount = 64;
inline constexpr uint64_t kDefaultMemoryPerDevice = uint64_t{1} << 30;
/// How long a stream worker or a synchronizing host thread spins before it
/// blocks: long enough to bridge the gap between a launch and the next one,
/// short enough not to steal a core from the kernels themselves.
inline constexpr int64_t kDefaultSpinNs = 50'000;
inline constexpr int64_t kMaxSpinNs = 10'000'000;

/// The resolved configuration; immutable once the runtime exists.
struct Config {
  int device_count = kDefaultDeviceCount;
  uint64_t memory_per_device = kDefaultMemoryPerDevice;
  /// Note [Device memory access]: device memory is PROT_NONE outside work.
  /// Off by default, the release mode: with operators running inline
  /// (Note [Synchronous launch]), the guard's mprotect calls would cost
  /// more than a small operator itself. Test suites turn it on.
  bool protect = false;
  int64_t spin_ns = kDefaultSpinNs;
  /// Stream capture and graphs (accgen/driver.h, "graphs"): off, the
  /// emulator behaves as a driver without them (accErrorNotSupported).
  bool graphs = true;
  /// accDevAttrHostAddressable: 0 makes the emulator say the host cannot
  /// address device memory, so that a backend takes the paths of such a
  /// device (Note [Host access] in the runtime) on the emulator.
  bool host_addressable = true;
};

/// Resolves the configuration from accInit's hints (0 keeps the default) and
/// the environment variables ACCGEN_EMU_DEVICE_COUNT, ACCGEN_EMU_MEMORY_BYTES,
/// ACCGEN_EMU_PROTECT, ACCGEN_EMU_SPIN_US, ACCGEN_EMU_GRAPHS and
/// ACCGEN_EMU_HOST_ADDRESSABLE; invalid values are ignored.
Config resolveConfig(int device_count_hint, uint64_t memory_hint);

/// A device count in [1, kMaxDeviceCount], plain decimal; nullopt otherwise.
std::optional<int> parseDeviceCount(const char* text);
/// A positive byte count: decimal digits with an optional binary suffix
/// K, M, G or T (also KiB, MiB, GiB, TiB); nullopt otherwise or on overflow.
std::optional<uint64_t> parseMemoryBytes(const char* text);
/// "0" or "1"; nullopt otherwise.
std::optional<bool> parseFlag(const char* text);
/// Microseconds in [0, kMaxSpinNs / 1000], plain decimal; returned in ns.
std::optional<int64_t> parseSpinMicros(const char* text);

}  // namespace accgen::emulator
