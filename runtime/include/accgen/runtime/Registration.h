// How a backend's registrations reach PyTorch: only while the backend owns
// the PrivateUse1 device type of the process.
//
// --8<-- [start:one-backend-note]
// Note [One PrivateUse1 backend per process]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// PyTorch has one PrivateUse1 dispatch key, and `import torch` loads every
// installed backend through the torch.backends entry points. A second
// backend registering its kernels, fallbacks, guard and hooks would
// override the first one's or make c10 terminate the process ("Tried to
// register multiple backend fallbacks"). So nothing registers at load time
// on its own: the first registration of a backend's library claims the
// device type (ownsDevice()), and only then do the c10 registrations (name,
// device guard, allocators, hooks, serialization, profiler) and every
// ACCGEN_LIBRARY_IMPL block run. A backend that finds the device type taken
// registers nothing and leaves the first one working; its Python package
// says once which packages clash and how to choose.
// --8<-- [end:one-backend-note]
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <torch/library.h>

namespace accgen::runtime {

/// Whether this backend owns PrivateUse1 in this process. The first call
/// decides: it claims the device type and registers the runtime with c10
/// (name, device guard, device and host allocators, hooks, serialization,
/// profiler)
/// unless another backend holds it. Never throws.
bool ownsDevice() noexcept;

/// The device type name of the backend that holds PrivateUse1 when this one
/// does not ("" when this backend owns it).
std::string deviceTakenBy();

namespace detail {

/// A torch::Library created and filled only when ownsDevice(): the
/// static object behind ACCGEN_LIBRARY, ACCGEN_LIBRARY_IMPL.
class LibraryInit final {
 public:
  LibraryInit(torch::Library::Kind kind, void (*init)(torch::Library&),
              const char* ns, std::optional<c10::DispatchKey> key,
              const char* file, std::uint32_t line);

 private:
  std::optional<torch::Library> library_;
};

}  // namespace detail
}  // namespace accgen::runtime

#define ACCGEN_LIBRARY_INIT_(kind, ns, key, m, uid)                          \
  static void C10_CONCATENATE(accgen_library_init_##ns##_,                   \
                              uid)(torch::Library&);                         \
  static const ::accgen::runtime::detail::LibraryInit C10_CONCATENATE(       \
      accgen_library_static_init_##ns##_, uid)(                              \
      torch::Library::kind,                                                  \
      &C10_CONCATENATE(accgen_library_init_##ns##_, uid), C10_STRINGIZE(ns), \
      key, __FILE__, __LINE__);                                              \
  void C10_CONCATENATE(accgen_library_init_##ns##_, uid)(torch::Library & m)

// --8<-- [start:library-macros]
/// TORCH_LIBRARY_IMPL(ns, k, m), registered only while the backend owns the
/// device type (Note [One PrivateUse1 backend per process]).
#define ACCGEN_LIBRARY_IMPL(ns, k, m)                                        \
  ACCGEN_LIBRARY_INIT_(IMPL, ns, std::make_optional(c10::DispatchKey::k), m, \
                       C10_UID)

/// TORCH_LIBRARY(ns, m) under the same condition.
#define ACCGEN_LIBRARY(ns, m) \
  ACCGEN_LIBRARY_INIT_(DEF, ns, std::nullopt, m, C10_UID)
// --8<-- [end:library-macros]
