// The configuration of the runtime's test backend "rtest" (what `accgen
// generate` writes as csrc/accgen_config.h for a backend).
#pragma once

#define ACCGEN_DEVICE_NAME "rtest"
#define ACCGEN_PACKAGE_NAME "torch_rtest"
#define ACCGEN_ENV_PREFIX "RTEST"
#define ACCGEN_DEVICE_COUNT 2
#define ACCGEN_MEMORY_BYTES 268435456ULL
#define ACCGEN_PINNED_MEMORY 1
#define ACCGEN_AUTOCAST 1
