// Declarations of every emitter function; the registry table in registry.cpp
// lists them. Each returns the OutputFiles of one output family.
#pragma once

#include <vector>

#include "generator/emit/emitter.h"

namespace accgen::emit {

}  // namespace accgen::emit
