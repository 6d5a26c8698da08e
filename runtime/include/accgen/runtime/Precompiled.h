// The torch headers nearly every translation unit of a backend includes,
// compiled once per backend as its precompiled header (accgen_add_backend).
// Only stable, heavy, widely used headers belong here.
#pragma once

#include <ATen/core/Tensor.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/ivalue.h>
#include <c10/core/DeviceGuard.h>
#include <c10/util/Exception.h>
#include <torch/library.h>
