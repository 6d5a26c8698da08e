// Entry points for device code: the host-addressable attribute, modules of
// device functions (shared libraries loaded into this process) and
// accLaunchFunction, which queues a device function as an owned kernel.
//
// Note [Device functions on the emulator]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// The emulator's device is the host, so a module is loaded with dlopen and
// its functions run on the stream's worker like any kernel. The access
// guard (ACCGEN_EMU_PROTECT) opens to a kernel the allocations it declares;
// a device function declares none, since real device code reaches any
// device pointer it is given. The emulator reads the argument block as
// aligned 64-bit words and opens every allocation a word points into: a
// block carries its pointers at their natural alignment, and a word that
// only looks like a pointer opens memory the function could reach anyway.
#include <dlfcn.h>

#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_set>
#include <vector>

#include <accgen/device.h>

#include "runtime.h"

struct accModule_st {
  void* handle = nullptr;
};

struct accFunction_st {
  accDeviceFn_t fn = nullptr;
  accModule_t module = nullptr;
};

namespace {

// Live modules and functions: a handle is checked before it is used.
struct ModuleTable {
  std::mutex mutex;
  std::unordered_set<accModule_t> modules;
  std::unordered_set<accFunction_t> functions;
};

ModuleTable& moduleTable() {
  static auto* table = new ModuleTable();  // outlives exiting kernels
  return *table;
}

struct FunctionLaunch {
  accDeviceFn_t fn;
  std::vector<unsigned char> args;
};

// The device allocations the words of `args` point into.
std::vector<const void*> pointedBuffers(
    const std::vector<unsigned char>& args) {
  std::vector<const void*> buffers;
  for (size_t at = 0; at + sizeof(uint64_t) <= args.size();
       at += sizeof(uint64_t)) {
    uint64_t word = 0;
    std::memcpy(&word, args.data() + at, sizeof(word));
    if (word == 0) {
      continue;
    }
    const void* ptr = reinterpret_cast<const void*>(word);
    accPointerAttributes attributes{};
    if (accPointerGetAttributes(&attributes, ptr) == accSuccess &&
        attributes.type == accMemoryTypeDevice) {
      buffers.push_back(ptr);
    }
  }
  return buffers;
}

}  // namespace

extern "C" {

accError_t accDeviceGetAttribute(int* value, accDeviceAttr attribute,
                                 int device) {
  if (value == nullptr) {
    return accErrorInvalidValue;
  }
  return accgen::emulator::guarded([&](accgen::emulator::Runtime& rt) {
    if (!rt.validDevice(device)) {
      return accErrorInvalidDevice;
    }
    switch (attribute) {
      case accDevAttrHostAddressable:
        *value = rt.config().host_addressable ? 1 : 0;  // Config
        return accSuccess;
    }
    return accErrorInvalidValue;
  });
}

accError_t accModuleLoad(accModule_t* module, const char* path) {
  if (module == nullptr || path == nullptr) {
    return accErrorInvalidValue;
  }
  void* handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    return accErrorInvalidValue;
  }
  try {
    auto loaded = std::make_unique<accModule_st>();
    loaded->handle = handle;
    ModuleTable& table = moduleTable();
    const std::lock_guard<std::mutex> lock(table.mutex);
    table.modules.insert(loaded.get());
    *module = loaded.release();
    return accSuccess;
  } catch (...) {
    dlclose(handle);
    return accErrorMemoryAllocation;
  }
}

accError_t accModuleUnload(accModule_t module) {
  ModuleTable& table = moduleTable();
  {
    const std::lock_guard<std::mutex> lock(table.mutex);
    if (table.modules.erase(module) == 0) {
      return accErrorInvalidHandle;
    }
    for (auto it = table.functions.begin(); it != table.functions.end();) {
      if ((*it)->module == module) {
        delete *it;
        it = table.functions.erase(it);
      } else {
        ++it;
      }
    }
  }
  // Work launched from the module may still be queued on any device.
  int count = 0;
  int current = 0;
  if (accGetDeviceCount(&count) == accSuccess &&
      accGetDevice(&current) == accSuccess) {
    for (int device = 0; device < count; ++device) {
      (void)accSetDevice(device);
      (void)accDeviceSynchronize();
    }
    (void)accSetDevice(current);
  }
  dlclose(module->handle);
  delete module;
  return accSuccess;
}

accError_t accModuleGetFunction(accFunction_t* function, accModule_t module,
                                const char* name) {
  if (function == nullptr || name == nullptr) {
    return accErrorInvalidValue;
  }
  ModuleTable& table = moduleTable();
  const std::lock_guard<std::mutex> lock(table.mutex);
  if (table.modules.count(module) == 0) {
    return accErrorInvalidHandle;
  }
  void* symbol = dlsym(module->handle, name);
  if (symbol == nullptr) {
    return accErrorInvalidValue;
  }
  try {
    auto found = std::make_unique<accFunction_st>();
    found->fn = reinterpret_cast<accDeviceFn_t>(symbol);
    found->module = module;
    table.functions.insert(found.get());
    *function = found.release();
    return accSuccess;
  } catch (...) {
    return accErrorMemoryAllocation;
  }
}

accError_t accLaunchFunction(accFunction_t function, const void* args,
                             size_t args_size, accStream_t stream) {
  if (args == nullptr && args_size != 0) {
    return accErrorInvalidValue;
  }
  try {
    auto launch = std::make_unique<FunctionLaunch>();
    {
      ModuleTable& table = moduleTable();
      const std::lock_guard<std::mutex> lock(table.mutex);
      if (table.functions.count(function) == 0) {
        return accErrorInvalidHandle;
      }
      launch->fn = function->fn;
    }
    const auto* bytes = static_cast<const unsigned char*>(args);
    launch->args.assign(bytes, bytes + args_size);
    // Note [Device functions on the emulator].
    const std::vector<const void*> buffers = pointedBuffers(launch->args);
    // The driver owns the launch from here on, also when it fails.
    return accLaunchKernelOwned(
        stream,
        [](void* data) {
          auto* run = static_cast<FunctionLaunch*>(data);
          return run->fn(run->args.data(), run->args.size());
        },
        launch.release(),
        [](void* data) { delete static_cast<FunctionLaunch*>(data); },
        buffers.data(), buffers.size());
  } catch (...) {
    return accErrorMemoryAllocation;
  }
}

}  // extern "C"
