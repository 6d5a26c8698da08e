// The backend's configuration as the runtime sees it.
//
// Every backend carries a generated accgen_config.h (csrc/accgen_config.h in
// its tree, written by `accgen generate` from specs/backend.yaml). One unit
// of the runtime reads it, src/Config.cpp, which accgen_add_backend compiles
// with the backend's own sources; every other unit sees the settings
// through the declarations below (Note [The runtime does not read the
// backend's configuration]).
#pragma once

#include <cstdint>

#include <torch/version.h>

// Note [Torch versions]
// ~~~~~~~~~~~~~~~~~~~~~
// A difference between torch releases is handled in one place, as
// `#if ACCGEN_TORCH_AT_LEAST(2, 14)`, with a comment naming the torch change
// it follows and a test showing the older branch is still needed while
// accgen supports that release.

/// Whether the torch the runtime is compiled against is release major.minor
/// or newer (Note [Torch versions]).
#define ACCGEN_TORCH_AT_LEAST(major, minor) \
  (TORCH_VERSION_MAJOR > (major) ||         \
   (TORCH_VERSION_MAJOR == (major) && TORCH_VERSION_MINOR >= (minor)))

namespace accgen::runtime {

/// The device type's name: torch.device("<name>"), torch.<name>.
extern const char* const kDeviceName;

/// The Python package of the backend ("torch_<name>" by default).
extern const char* const kPackageName;

/// Prefix of the backend's environment variables ("ACCEL" for
/// ACCEL_WARN_FALLBACK).
extern const char* const kEnvPrefix;

/// Defaults from the backend spec, handed to the driver by accInit; the
/// emulator lets ACCGEN_EMU_DEVICE_COUNT / ACCGEN_EMU_MEMORY_BYTES override
/// them.
extern const int kDefaultDeviceCount;
extern const std::uint64_t kDefaultMemoryBytes;

/// features.pinned_memory: a pinned host allocator is registered.
extern const bool kPinnedMemory;

/// features.autocast: torch.autocast("<name>") is offered.
extern const bool kAutocast;

/// features.host_copies: on a device whose memory the host cannot address,
/// the operators that compute on the host (kind emulate, the emulate
/// fallback) run through the CPU fallback, copying their arguments (Note
/// [Host access] in Driver.cpp); without it they are refused.
extern const bool kHostCopies;

/// The operators.yaml entries that run CPU code over device memory,
/// space-separated: `stub` entries (kNeedsHostAccess) and `emulate` entries
/// (kNeedsHostCopies, which features.host_copies runs through the CPU
/// fallback); kEmulateFallback for `fallback: emulate`. Where the host
/// cannot address device memory, the device refuses to initialize while
/// any of them would run there (refuseHostCode in Driver.cpp).
extern const char* const kNeedsHostAccess;
extern const char* const kNeedsHostCopies;
extern const bool kEmulateFallback;

/// The file name of the backend's device code module (accgen_add_backend's
/// DEVICE_SOURCES), loaded from beside the core library; empty when the
/// backend has none.
extern const char* const kDeviceModule;

}  // namespace accgen::runtime
