// The one unit of the runtime that reads the backend's accgen_config.h.
//
// --8<-- [start:config-note]
// Note [The runtime does not read the backend's configuration]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// The runtime's sources are compiled into every backend
// (accgen_add_backend), and every unit but this one is the same bytes with
// the same flags in every backend built against the same accgen, torch and
// driver: the settings of accgen_config.h reach them as the constants
// Config.h declares, defined here. So a compiler cache (ccache) serves the
// runtime's objects, its heaviest part, to every backend after the first,
// and a change of the spec recompiles this unit alone. The settings are
// read at run time, never in a constant expression; nothing on an
// operator's path reads them.
// --8<-- [end:config-note]
#include "accgen/runtime/Config.h"

#include <accgen_config.h>

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
// Set by accgen_add_backend for a backend with DEVICE_SOURCES.
#ifndef ACCGEN_DEVICE_MODULE
#define ACCGEN_DEVICE_MODULE ""
#endif

namespace accgen::runtime {

const char* const kDeviceName = ACCGEN_DEVICE_NAME;
const char* const kPackageName = ACCGEN_PACKAGE_NAME;
const char* const kEnvPrefix = ACCGEN_ENV_PREFIX;
const int kDefaultDeviceCount = ACCGEN_DEVICE_COUNT;
const std::uint64_t kDefaultMemoryBytes = ACCGEN_MEMORY_BYTES;
const bool kPinnedMemory = ACCGEN_PINNED_MEMORY != 0;
const bool kAutocast = ACCGEN_AUTOCAST != 0;
const bool kHostCopies = ACCGEN_HOST_COPIES != 0;
const char* const kNeedsHostAccess = ACCGEN_NEEDS_HOST_ACCESS;
const char* const kNeedsHostCopies = ACCGEN_NEEDS_HOST_COPIES;
const bool kEmulateFallback = ACCGEN_EMULATE_FALLBACK != 0;
const char* const kDeviceModule = ACCGEN_DEVICE_MODULE;

}  // namespace accgen::runtime
