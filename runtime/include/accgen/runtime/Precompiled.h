// The torch headers nearly every translation unit of a backend includes,
// compiled once per backend as its precompiled header (accgen_add_backend).
// Only stable, heavy, widely used headers belong here.
#pragma once

// The CPU capabilities torch itself was built with (x86-64 wheels have AVX2
// and AVX512), which ATen/native/DispatchStub.h must see before it is first
// included in a unit (StubSupport.h); they come from torch's build, not its
// headers. Defined here as well, since a unity batch (Note [Unity batches])
// may include DispatchStub.h before StubSupport.h.
#if defined(__x86_64__) || defined(_M_X64)
#define HAVE_AVX512_CPU_DEFINITION
#define HAVE_AVX2_CPU_DEFINITION
#endif
#include <ATen/core/Tensor.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/ivalue.h>
#include <c10/core/DeviceGuard.h>
#include <c10/util/Exception.h>
#include <torch/library.h>
