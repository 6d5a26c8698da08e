"""The example's custom operator, scaled_add(self, other, alpha) = self +
alpha * other: its device kernel, Meta kernel, autograd, and use under
torch.compile (fake-tensor tracing through the Meta kernel).
"""
import pytest
import torch


# --8<-- [start:custom-op-forward]
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16])
def test_forward_matches_cpu_math(device, scaled_add, dtype):
    a = torch.randn(4, 5).to(dtype)
    b = torch.randn(4, 5).to(dtype)
    got = scaled_add(a.to(device), b.to(device), 0.5)
    assert got.device.type == device and got.dtype == dtype
    torch.testing.assert_close(got.cpu(), a + 0.5 * b)
    # The default alpha and non-contiguous inputs.
    got = scaled_add(a.t().to(device), b.t().to(device))
    torch.testing.assert_close(got.cpu(), (a + b).t())
# --8<-- [end:custom-op-forward]


def test_errors_name_the_operator(device, scaled_add):
    a = torch.randn(3, device=device)
    with pytest.raises(RuntimeError, match="scaled_add: self and other must have one shape"):
        scaled_add(a, torch.randn(4, device=device))
    with pytest.raises(RuntimeError, match="floating-point"):
        scaled_add(a.long(), a.long())


# --8<-- [start:custom-op-backward]
def test_backward_matches_cpu_gradients(device, scaled_add):
    a = torch.randn(3, 4, dtype=torch.float64)
    b = torch.randn(3, 4, dtype=torch.float64)
    w = torch.randn(3, 4, dtype=torch.float64)
    da = a.to(device).requires_grad_()
    db = b.to(device).requires_grad_()
    (scaled_add(da, db, 2.5) * w.to(device)).sum().backward()
    ca = a.clone().requires_grad_()
    cb = b.clone().requires_grad_()
    ((ca + 2.5 * cb) * w).sum().backward()
    torch.testing.assert_close(da.grad.cpu(), ca.grad)
    torch.testing.assert_close(db.grad.cpu(), cb.grad)
# --8<-- [end:custom-op-backward]


def test_gradient_by_finite_differences(device, scaled_add):
    # The analytic gradient of a scalar function of the output agrees with
    # central differences computed on the device.
    a = torch.randn(5, dtype=torch.float64, device=device, requires_grad=True)
    b = torch.randn(5, dtype=torch.float64, device=device, requires_grad=True)
    alpha = -1.5

    def f(x, y):
        return (scaled_add(x, y, alpha) ** 2).sum()

    f(a, b).backward()
    eps = 1e-6
    for tensor, grad in ((a, a.grad), (b, b.grad)):
        numeric = torch.empty(5, dtype=torch.float64)
        with torch.no_grad():
            for i in range(5):
                tensor[i] += eps
                up = f(a, b).item()
                tensor[i] -= 2 * eps
                down = f(a, b).item()
                tensor[i] += eps
                numeric[i] = (up - down) / (2 * eps)
        torch.testing.assert_close(grad.cpu(), numeric, rtol=1e-5, atol=1e-6)


# --8<-- [start:custom-op-meta]
def test_meta_kernel_gives_shapes(device, scaled_add):
    a = torch.empty(2, 7, device="meta")
    out = scaled_add(a, a, 3.0)
    assert out.device.type == "meta" and out.shape == (2, 7)
    with pytest.raises(RuntimeError, match="one shape"):
        scaled_add(a, torch.empty(3, device="meta"))


def test_fake_tensor_tracing(device, scaled_add):
    from torch._subclasses.fake_tensor import FakeTensorMode
    with FakeTensorMode():
        a = torch.empty(3, 4, device=device)
        out = scaled_add(a, a, 1.0)
        assert out.shape == (3, 4) and out.device.type == device
# --8<-- [end:custom-op-meta]


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_under_torch_compile(device, scaled_add, backend):
    torch._dynamo.reset()

    def fn(x, y):
        return torch.relu(scaled_add(x, y, 0.25)) * 2

    compiled = torch.compile(fn, backend=backend, fullgraph=True)
    a = torch.randn(8, 3)
    b = torch.randn(8, 3)
    got = compiled(a.to(device), b.to(device))
    torch.testing.assert_close(got.cpu(), torch.relu(a + 0.25 * b) * 2)
    # And with gradients through the compiled graph.
    da = a.to(device).requires_grad_()
    compiled(da, b.to(device)).sum().backward()
    ca = a.clone().requires_grad_()
    (torch.relu(ca + 0.25 * b) * 2).sum().backward()
    torch.testing.assert_close(da.grad.cpu(), ca.grad)
