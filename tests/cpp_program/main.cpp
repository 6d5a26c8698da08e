// Puts tensors on a generated backend's device from C++ alone and checks
// what it computes against the CPU: factories, copies both ways, emulated
// and fallback operators, a matrix product, autograd, and the device
// runtime's API (device count, streams). Prints "ok" and exits 0 when all
// match; otherwise names the first mismatch and exits 1.
#include <cstdio>
#include <string>

#include <ATen/ATen.h>

#include <accgen/runtime/Registration.h>
#include <accgen/runtime/Runtime.h>

namespace {

int fail(const std::string& what) {
  std::fprintf(stderr, "mismatch: %s\n", what.c_str());
  return 1;
}

}  // namespace

int main() {
  // The core library registered the device when the program started.
  if (!accgen::runtime::ownsDevice()) {
    return fail("the backend does not own the device type");
  }
  const c10::Device device(DEVICE_NAME ":0");
  if (device.type() != c10::DeviceType::PrivateUse1) {
    return fail("device type");
  }
  const auto on_device = at::TensorOptions().device(device);

  at::manual_seed(0);
  const at::Tensor a = at::randn({16, 8});
  const at::Tensor b = at::randn({8, 4});
  const at::Tensor da = a.to(device);
  const at::Tensor db = b.to(device);
  if (!da.is_privateuseone() || da.device() != device) {
    return fail("to(device) left the tensor elsewhere");
  }
  if (!at::allclose(at::mm(da, db).cpu(), at::mm(a, b), 1e-5, 1e-5)) {
    return fail("mm");
  }
  if (!at::allclose((da * 2 + 1).relu().sum(0).cpu(),
                    (a * 2 + 1).relu().sum(0))) {
    return fail("elementwise and reduction");
  }
  if (!at::equal(at::arange(10, on_device).cpu(), at::arange(10))) {
    return fail("arange on the device");
  }

  // Autograd through device operators.
  const at::Tensor w = at::randn({8, 4}).to(device).requires_grad_(true);
  at::mm(da, w).pow(2).sum().backward();
  const at::Tensor w_cpu = w.detach().cpu().requires_grad_(true);
  at::mm(a, w_cpu).pow(2).sum().backward();
  if (!at::allclose(w.grad().cpu(), w_cpu.grad(), 1e-4, 1e-4)) {
    return fail("gradient of mm");
  }

  // The runtime's own API: devices and streams.
  if (accgen::runtime::deviceCount() < 1) {
    return fail("device count");
  }
  const c10::Stream stream = accgen::runtime::getStreamFromPool(0);
  if (stream.device() != device) {
    return fail("stream from the pool");
  }
  std::printf("ok: %d devices of type '%s'\n",
              static_cast<int>(accgen::runtime::deviceCount()),
              c10::get_privateuse1_backend().c_str());
  return 0;
}
