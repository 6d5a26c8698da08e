// A cache of what accgen learns about the installed torch (its location,
// version and declared DispatchStubs), so that a regeneration does not start
// a Python interpreter or scan ATen's headers every time.
#pragma once

#include <set>
#include <string>

#include "generator/schema/schema.h"

namespace accgen::cli {

/// The installed torch and its DispatchStubs.
struct TorchFacts {
  schema::TorchInstall install;
  schema::DispatchStubs dispatch_stubs;
};

// Note [Torch cache]
// ~~~~~~~~~~~~~~~~~~
// What findTorch() and findDispatchStubs() find is remembered in
// $XDG_CACHE_HOME/accgen (default ~/.cache/accgen) per Python command and
// PATH. An entry is used only while torch/version.py and
// native_functions.yaml have the size and mtime it recorded, so a
// reinstalled or upgraded torch is noticed; ACCGEN_NO_CACHE=1 disables it.

/// findTorch() and findDispatchStubs(), remembered (Note [Torch cache]).
TorchFacts findTorchCached();

}  // namespace accgen::cli
