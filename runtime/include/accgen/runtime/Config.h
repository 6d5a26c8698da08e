// The backend's configuration as the runtime sees it.
//
// Every backend carries a generated accgen_config.h (csrc/accgen_config.h in
// its tree, written by `accgen generate` from specs/backend.yaml) on the
// include path of the runtime sources; this header turns its macros into
// typed constants. The runtime is compiled once per backend
// (accgen_add_backend), so these are compile-time constants of that build.
#pragma once

#include <cstdint>

#include <accgen_config.h>
#include <torch/version.h>

#if !defined(ACCGEN_DEVICE_NAME) || !defined(ACCGEN_PACKAGE_NAME) ||   \
    !defined(ACCGEN_ENV_PREFIX) || !defined(ACCGEN_DEVICE_COUNT) ||    \
    !defined(ACCGEN_MEMORY_BYTES) || !defined(ACCGEN_PINNED_MEMORY) || \
    !defined(ACCGEN_AUTOCAST)
#error "accgen_config.h must define every ACCGEN_* setting; regenerate it"
#endif
// Optional: configurations generated before the setting existed leave it
// out.
#ifndef ACCGEN_HOST_COPIES
#define ACCGEN_HOST_COPIES 0
#endif
#ifndef ACCGEN_NEEDS_HOST_ACCESS
#define ACCGEN_NEEDS_HOST_ACCESS ""
#define ACCGEN_NEEDS_HOST_COPIES ""
#define ACCGEN_EMULATE_FALLBACK 0
#endif

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
inline constexpr const char* kDeviceName = ACCGEN_DEVICE_NAME;

/// The Python package of the backend ("torch_<name>" by default).
inline constexpr const char* kPackageName = ACCGEN_PACKAGE_NAME;

/// Prefix of the backend's environment variables ("ACCEL" for
/// ACCEL_WARN_FALLBACK).
inline constexpr const char* kEnvPrefix = ACCGEN_ENV_PREFIX;

/// Defaults from the backend spec, handed to the driver by accInit; the
/// emulator lets ACCGEN_EMU_DEVICE_COUNT / ACCGEN_EMU_MEMORY_BYTES override
/// them.
inline constexpr int kDefaultDeviceCount = ACCGEN_DEVICE_COUNT;
inline constexpr std::uint64_t kDefaultMemoryBytes = ACCGEN_MEMORY_BYTES;

/// features.pinned_memory: a pinned host allocator is registered.
inline constexpr bool kPinnedMemory = ACCGEN_PINNED_MEMORY != 0;

/// features.autocast: torch.autocast("<name>") is offered.
inline constexpr bool kAutocast = ACCGEN_AUTOCAST != 0;

/// features.host_copies: on a device whose memory the host cannot address,
/// the operators that compute on the host (kind emulate, the emulate
/// fallback) run through the CPU fallback, copying their arguments (Note
/// [Host access] in Driver.cpp); without it they are refused.
inline constexpr bool kHostCopies = ACCGEN_HOST_COPIES != 0;

/// The operators.yaml entries that run CPU code over device memory,
/// space-separated: `stub` entries (kNeedsHostAccess) and `emulate` entries
/// (kNeedsHostCopies, which features.host_copies runs through the CPU
/// fallback); kEmulateFallback for `fallback: emulate`. Where the host
/// cannot address device memory, the device refuses to initialize while
/// any of them would run there (refuseHostCode in Driver.cpp).
inline constexpr const char* kNeedsHostAccess = ACCGEN_NEEDS_HOST_ACCESS;
inline constexpr const char* kNeedsHostCopies = ACCGEN_NEEDS_HOST_COPIES;
inline constexpr bool kEmulateFallback = ACCGEN_EMULATE_FALLBACK != 0;

}  // namespace accgen::runtime
