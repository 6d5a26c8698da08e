"""Where PyTorch's own device-generic tests found the device behaving unlike
CUDA, it now behaves like it: each test is one such class of failure, run on
the device and compared with the CPU.
"""
import pytest
import torch


def test_mode_with_out_matches_the_cpu(device):
    # mode.values is a composite kernel that refuses every device but CPU,
    # CUDA and XPU; the backend emulates it (Note [The runtime's operator
    # sets]).
    x = torch.randint(0, 3, (4, 7)).float()
    want = torch.mode(x, 1)
    values = torch.empty(0, device=device)
    indices = torch.empty(0, dtype=torch.long, device=device)
    got = torch.mode(x.to(device), 1, out=(values, indices))
    assert got.values is values and got.indices is indices
    torch.testing.assert_close(values.cpu(), want.values)
    torch.testing.assert_close(indices.cpu(), want.indices)


@pytest.mark.parametrize("call", [
    lambda x, out: torch.sum(x, 0, out=out),
    lambda x, out: torch.add(x, x, out=out),
    lambda x, out: torch.cumsum(x, 0, out=out),
    lambda x, out: torch.amax(x, 0, out=out),
], ids=["sum", "add", "cumsum", "amax"])
def test_cpu_out_arguments_are_refused_even_zero_dim(device, call):
    # A 0-dim CPU tensor passes among device tensors as a scalar input, but
    # never as a result the operator writes, as on CUDA.
    x = torch.ones(4, device=device)
    out = torch.empty(())
    with pytest.raises(RuntimeError, match="same device"):
        call(x, out)


def test_fill_takes_any_number_of_dimensions(device):
    for dims in (25, 26, 40):
        t = torch.empty([1] * (dims - 2) + [2, 3], device=device)
        t.fill_(2.5)
        torch.testing.assert_close(t.cpu(), torch.full(t.shape, 2.5))
    strided = torch.zeros(4, 6, device=device)[:, ::2].unsqueeze(0)
    strided.fill_(1.0)
    torch.testing.assert_close(strided.cpu(), torch.ones(1, 4, 3))


@pytest.fixture
def deterministic():
    saved = (torch.are_deterministic_algorithms_enabled(),
             torch.utils.deterministic.fill_uninitialized_memory)
    torch.use_deterministic_algorithms(True)
    torch.utils.deterministic.fill_uninitialized_memory = True
    yield
    torch.use_deterministic_algorithms(saved[0])
    torch.utils.deterministic.fill_uninitialized_memory = saved[1]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16,
                                   torch.complex64, torch.int64, torch.int8,
                                   torch.bool])
def test_deterministic_mode_fills_new_memory_like_the_cpu(
        device, deterministic, dtype):
    def same(got, want):
        assert got.dtype == want.dtype and got.shape == want.shape
        # NaN where the CPU has NaN.
        torch.testing.assert_close(got.cpu(), want, equal_nan=True)

    same(torch.empty(3, 2, dtype=dtype, device=device),
         torch.empty(3, 2, dtype=dtype))
    same(torch.empty_strided((2, 3), (1, 2), dtype=dtype, device=device),
         torch.empty_strided((2, 3), (1, 2), dtype=dtype))
    same(torch.ones(2, dtype=dtype, device=device).new_empty(5),
         torch.ones(2, dtype=dtype).new_empty(5))
    # resize_ fills what the storage gained, and keeps what it had.
    same(torch.ones(2, dtype=dtype, device=device).resize_(6),
         torch.ones(2, dtype=dtype).resize_(6))
    same(torch.ones(4, dtype=dtype, device=device).resize_(2).resize_(4),
         torch.ones(4, dtype=dtype).resize_(2).resize_(4))


@torch.jit.script
def _scripted_mask_assign(x: torch.Tensor, mask: torch.Tensor, index: torch.Tensor):
    x[mask] = 0.0
    x[index] = -1.0
    return x[index], x


def test_torchscript_lists_reach_boxed_kernels(device):
    # TorchScript passes index_put_'s and index's Tensor?[] as a generic list;
    # the boxed emulation read it as a typed list and failed an internal
    # assert ("isOptionalTensorList").
    x = torch.arange(6.0)
    mask = x > 2
    index = torch.tensor([0, 1])
    want = _scripted_mask_assign(x.clone(), mask, index)
    got = _scripted_mask_assign(x.to(device), mask.to(device), index.to(device))
    for g, w in zip(got, want):
        assert g.device.type == device
        torch.testing.assert_close(g.cpu(), w)
