"""The derived forms of the example's `kernel` groups (add.Tensor from the
vendor's add.out, fill.Scalar from fill_.Scalar): their results take the
shapes, strides and dtypes of the Meta computation, which each wrapper keeps
for the last few distinct argument keys (Note [Shape cache]). Whatever the
order of calls, a kept answer must be the one the Meta computation gives:
results match the CPU's in values, dtype and strides, and an invalid call
raises every time.
"""
import pytest
import torch


def check(dev, got, want):
    assert got.device.type == dev.type
    assert got.dtype == want.dtype
    assert got.shape == want.shape
    assert got.stride() == want.stride()
    torch.testing.assert_close(got.cpu(), want)


# Arguments of add, in an order that repeats keys, changes one property at a
# time (shape, broadcast, dtype, scalar value and kind, layout) and passes
# the cache's capacity, so that a wrong key would hand out a wrong answer.
def add_cases():
    g = torch.Generator().manual_seed(0)
    f = torch.randn(4, 5, generator=g)
    i = torch.randint(-5, 5, (4, 5), generator=g)
    cl = torch.randn(2, 3, 4, 5, generator=g).to(
        memory_format=torch.channels_last)
    return [
        (f, f, 1),
        (f, f, 1),
        (f, f[0], 1),             # broadcast
        (f[0], f, 1),
        (f, f, 2.5),              # alpha
        (i, i, 1),                # integer result
        (i, f, 1),                # promotion to float
        (i, 2, 1),                # wrapped int: stays integer
        (i, 2.5, 1),              # wrapped float: promotes
        (f.t(), f.t(), 1),        # transposed inputs keep their layout
        (cl, cl, 1),              # channels_last
        (cl.contiguous(), cl.contiguous(), 1),  # the same, but for strides
        (f, f.double(), 1),
        (f.half(), f.half(), 1),
        (f.unsqueeze(0), f, 1),
        (f, f, 1),                # back to the first key after eviction
        (i, 2, 1),
    ]


def test_add_results_follow_the_meta_computation(device):
    dev = torch.device(device)
    for a, b, alpha in add_cases():
        want = torch.add(a, b, alpha=alpha)
        da = a.to(dev)
        db = b.to(dev) if isinstance(b, torch.Tensor) else b
        check(dev, torch.add(da, db, alpha=alpha), want)


def test_invalid_add_raises_after_a_valid_one_was_kept(device):
    dev = torch.device(device)
    a = torch.randn(4, 5, device=dev)
    b = torch.randn(4, 5, device=dev)
    for _ in range(3):
        torch.testing.assert_close((a + b).cpu(), a.cpu() + b.cpu())
        with pytest.raises(RuntimeError, match="must match the size"):
            a + torch.randn(3, 5, device=dev)
        # An integer alpha is refused for a float result every time.
        with pytest.raises(RuntimeError, match="alpha"):
            torch.add(torch.ones(2, 2, dtype=torch.bool, device=dev),
                      torch.ones(2, 2, dtype=torch.bool, device=dev),
                      alpha=2.5)


def test_fill_results_follow_the_meta_computation(device):
    dev = torch.device(device)
    g = torch.Generator().manual_seed(1)
    for t, value in [(torch.randn(3, 4, generator=g), 1.5),
                     (torch.randn(3, 4, generator=g), 1.5),
                     (torch.randn(3, 4, generator=g).t(), -2),
                     (torch.arange(6).view(2, 3), 7),
                     (torch.randn(2, 3, 4, 5, generator=g).to(
                         memory_format=torch.channels_last), 0.25)]:
        want = torch.fill(t, value)
        check(dev, torch.fill(t.to(dev), value), want)
