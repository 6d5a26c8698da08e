// Backend metadata of the device tensors and its serialization.
//
// --8<-- [start:tensor-metadata-note]
// Note [Device tensor metadata]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// A device tensor can carry named boolean flags as its c10::BackendMeta:
// torch._utils.set_tensor_metadata(t, {"name": True}) sets them,
// get_tensor_metadata(t) reads them. They travel with the tensor through
// torch.save / torch.load onto a device device (a CPU destination has
// no backend metadata and drops them), through torch._C._copy_backend_meta
// and into FakeTensors. A backend on real hardware keeps layout or format
// facts there that its kernels need.
// --8<-- [end:tensor-metadata-note]
#include <map>
#include <string>
#include <unordered_map>

#include <ATen/core/Tensor.h>
#include <c10/core/TensorImpl.h>
#include <torch/csrc/jit/serialization/pickler_helper.h>

#include "Internal.h"
#include "accgen/runtime/Runtime.h"

namespace accgen::runtime {
namespace {

// --8<-- [start:backend-meta]
struct TensorMetadata final : public c10::BackendMeta {
  std::map<std::string, bool> flags;

  c10::intrusive_ptr<c10::BackendMeta> clone(
      const c10::intrusive_ptr<c10::BackendMeta>& /*self*/) const override {
    auto copy = c10::make_intrusive<TensorMetadata>();
    copy->flags = flags;
    return copy;
  }
};

void saveMetadata(const at::Tensor& tensor,
                  std::unordered_map<std::string, bool>& out) {
  const auto* metadata = dynamic_cast<const TensorMetadata*>(
      tensor.unsafeGetTensorImpl()->get_backend_meta());
  if (metadata == nullptr) {
    return;
  }
  for (const auto& [name, value] : metadata->flags) {
    out[name] = value;
  }
}

// `in` no longer holds "conj" and "neg": PyTorch applied those itself.
void loadMetadata(const at::Tensor& tensor,
                  std::unordered_map<std::string, bool>& in) {
  if (in.empty()) {
    return;
  }
  auto metadata = c10::make_intrusive<TensorMetadata>();
  metadata->flags.insert(in.begin(), in.end());
  tensor.unsafeGetTensorImpl()->set_backend_meta(std::move(metadata));
}
// --8<-- [end:backend-meta]

}  // namespace

// --8<-- [start:register-serialization]
void detail::registerSerialization() {
  torch::jit::TensorBackendMetaRegistry(kDeviceType, &saveMetadata,
                                        &loadMetadata);
}
// --8<-- [end:register-serialization]
}  // namespace accgen::runtime
