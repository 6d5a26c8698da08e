/*
 * Device code for the accgen drivers.
 *
 * A module of device code is a shared library whose functions are declared
 * with ACC_DEVICE_FUNCTION. The host loads it (accModuleLoad), looks its
 * functions up by name (accModuleGetFunction) and launches them on a stream
 * with an argument block (accLaunchFunction). The emulator runs them in the
 * host process; the remote driver runs them in its device process, where
 * device pointers address device memory and host memory is out of reach.
 * Device code includes nothing of torch: it sees bytes, sizes and pointers.
 */
#pragma once

#include <stddef.h>

#include <accgen/driver.h>

#ifdef __cplusplus
#define ACC_DEVICE_EXTERN_C extern "C"
#else
#define ACC_DEVICE_EXTERN_C
#endif

/* A device function: reads its argument block, returns accSuccess or the
 * error that becomes sticky on its stream. */
typedef accError_t (*accDeviceFn_t)(const void* args, size_t args_size);

#ifdef __cplusplus
#include <cstring>

/* The argument block as an `Args` (a struct of device pointers, sizes and
 * scalars, laid out as the launching side wrote it): false unless the
 * block has exactly its size. */
template <class Args>
inline bool accUnpackArgs(const void* args, size_t args_size, Args& out) {
  if (args == nullptr || args_size != sizeof(Args)) {
    return false;
  }
  std::memcpy(&out, args, sizeof(Args));
  return true;
}
#endif

/* Declares (and, followed by a body, defines) the device function `name`. */
#define ACC_DEVICE_FUNCTION(name)                                             \
  ACC_DEVICE_EXTERN_C __attribute__((visibility("default"))) accError_t name( \
      const void* args, size_t args_size)
