"""Sparse and quantized tensors on the device against the same on the CPU.

The runtime registers them on the SparsePrivateUse1, SparseCsrPrivateUse1
and QuantizedPrivateUse1 keys (runtime/src/Sparse.cpp, Quantized.cpp; Note
[Sparse tensors on the device], Note [Quantized tensors on the device]).
Every case runs the same operation on CPU tensors and on copies of them on
the device and compares values, dtype, layout and device; operators the
runtime does not support raise errors that name the operator and the device.
"""
import pytest
import torch

# Quantized tensor creation warns of its deprecation, and sparse ones of
# their beta state and disabled invariant checks, on the CPU as well.
pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")


def dense():
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(4, 5, generator=gen)
    return x * (torch.rand(4, 5, generator=gen) > 0.5)


def coo():
    """An uncoalesced COO tensor: (0, 2) appears twice."""
    indices = torch.tensor([[0, 1, 1, 0, 3], [2, 0, 4, 2, 3]])
    values = torch.tensor([3.0, 4.0, 5.0, 1.0, -2.0])
    return torch.sparse_coo_tensor(indices, values, (4, 5))


def assert_on(got, want, device):
    """`got` lives on the device and equals `want` (a CPU tensor)."""
    assert got.device.type == device
    assert got.layout == want.layout
    assert got.dtype == want.dtype
    host = got.cpu()
    if want.layout == torch.sparse_coo:
        assert host.is_coalesced() == want.is_coalesced()
        torch.testing.assert_close(host.to_dense(), want.to_dense())
        if want.is_coalesced():
            torch.testing.assert_close(host.indices(), want.indices())
            torch.testing.assert_close(host.values(), want.values())
    elif want.layout == torch.sparse_csr:
        torch.testing.assert_close(host.crow_indices(), want.crow_indices())
        torch.testing.assert_close(host.col_indices(), want.col_indices())
        torch.testing.assert_close(host.values(), want.values())
    elif want.is_quantized:
        assert host.qscheme() == want.qscheme()
        torch.testing.assert_close(host.int_repr(), want.int_repr())
        torch.testing.assert_close(host.dequantize(), want.dequantize())
    else:
        torch.testing.assert_close(host, want)


# ---------------------------------------------------------------- sparse


def test_to_sparse(device):
    x = dense()
    assert_on(x.to(device).to_sparse(), x.to_sparse(), device)
    assert_on(x.to(device).to_sparse(1), x.to_sparse(1), device)


def test_to_sparse_csr(device):
    x = dense()
    assert_on(x.to(device).to_sparse_csr(), x.to_sparse_csr(), device)


@pytest.mark.parametrize("layout", ["coo", "csr"])
def test_to_dense(device, layout):
    x = dense()
    convert = {"coo": torch.Tensor.to_sparse, "csr": torch.Tensor.to_sparse_csr}
    s = convert[layout](x)
    assert_on(s.to(device).to_dense(), s.to_dense(), device)


def test_sparse_coo_tensor_on_device(device):
    s = coo()
    got = torch.sparse_coo_tensor(s._indices(), s._values(), (4, 5),
                                  device=device)
    assert_on(got, s, device)
    assert got._nnz() == s._nnz()
    assert (got.sparse_dim(), got.dense_dim()) == (2, 0)
    # From indices and values already on the device.
    got = torch.sparse_coo_tensor(s._indices().to(device),
                                  s._values().to(device), (4, 5))
    assert_on(got, s, device)
    assert got._values().device.type == device


def test_coalesce(device):
    s = coo()
    got = s.to(device).coalesce()
    assert got.is_coalesced()
    assert_on(got, s.coalesce(), device)


def test_sparse_add(device):
    a, b = coo(), dense().to_sparse()
    assert_on(a.to(device) + b.to(device), a + b, device)
    assert_on(torch.add(a.to(device), b.to(device), alpha=2),
              torch.add(a, b, alpha=2), device)


def test_sparse_add_out(device):
    a, b = coo(), dense().to_sparse()
    want = torch.add(a, b, out=torch.sparse_coo_tensor(size=(4, 5)))
    out = torch.sparse_coo_tensor(size=(4, 5), device=device)
    got = torch.add(a.to(device), b.to(device), out=out)
    assert got is out
    assert_on(out, want, device)


def test_sparse_add_in_place(device):
    a, b = coo(), dense().to_sparse()
    got = a.to(device)
    got.add_(b.to(device))
    assert_on(got, a.add_(b), device)


def test_sparse_add_dense(device):
    s, d = coo(), dense()
    assert_on(d.to(device) + s.to(device), d + s, device)


def test_sparse_mm(device):
    s = coo()
    d = torch.randn(5, 3, generator=torch.Generator().manual_seed(1))
    assert_on(torch.sparse.mm(s.to(device), d.to(device)), torch.sparse.mm(s, d),
              device)
    assert_on(torch.mm(s.to(device), d.to(device)), torch.mm(s, d), device)


@pytest.mark.parametrize("reduce", ["sum", "amax", "amin"])
def test_sparse_mm_reduce_gradients_match_the_cpu(device, reduce):
    # The CPU kernel records the indices amax/amin's backward reads only for
    # arguments that require grad; the host copies must say they do.
    crow = torch.tensor([0, 2, 3, 5])
    col = torch.tensor([0, 2, 1, 0, 2])
    values = torch.tensor([1.0, -2.0, 3.0, 0.5, 4.0])
    other = torch.randn(3, 4, generator=torch.Generator().manual_seed(2))
    grads = []
    for where in ("cpu", device):
        a = torch.sparse_csr_tensor(crow, col, values, (3, 3)).to(where)
        b = other.clone().to(where).requires_grad_()
        out = torch.sparse.mm(a.requires_grad_(), b, reduce)
        grad_a, grad_b = torch.autograd.grad(out.sum(), [a, b], allow_unused=True)
        grads.append([out.detach().cpu(), a.clone().cpu().to_dense()]
                     + [None if g is None else g.cpu().to_dense()
                        for g in (grad_a, grad_b)])
    torch.testing.assert_close(grads[1], grads[0])


@pytest.mark.parametrize("call", ["sparse.mm", "dense + sparse", "sparse + sparse",
                                  "sparse.mm out="])
def test_sparse_operators_refuse_a_cpu_tensor(device, call):
    # Note [Device misuse]: as CUDA does; the host copies hid the mix.
    s, d = coo(), dense()
    m = torch.randn(5, 3)
    run = {"sparse.mm": lambda: torch.sparse.mm(s.to(device), m),
           "dense + sparse": lambda: d.to(device) + s,
           "sparse + sparse": lambda: s.to(device) + s,
           "sparse.mm out=": lambda: torch.mm(s.to(device), m.to(device),
                                              out=torch.empty(4, 3))}[call]
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
        run()


def test_sparse_clone_and_copy(device):
    s = coo().coalesce()
    assert_on(s.to(device).clone(), s.clone(), device)
    target = torch.sparse_coo_tensor(size=(4, 5), device=device)
    target.copy_(s.to(device))
    assert_on(target, s, device)


def test_sparse_on_second_device(device, two_devices):
    s = coo()
    got = s.to(f"{device}:1").coalesce()
    assert got.device == torch.device(f"{device}:1")
    assert_on(got, s.coalesce(), device)


def test_unsupported_sparse_operator_names_it(device):
    s = coo()
    with pytest.raises(NotImplementedError) as cpu_error:
        torch.cumsum(s, 0)
    with pytest.raises(NotImplementedError,
                       match=rf"aten::cumsum .*device '{device}'"):
        torch.cumsum(s.to(device), 0)
    assert "cumsum" in str(cpu_error.value)


# ---------------------------------------------------------------- quantized


def floats():
    return torch.randn(3, 4, 5, generator=torch.Generator().manual_seed(2))


@pytest.mark.parametrize("dtype", [torch.qint8, torch.quint8, torch.qint32])
def test_quantize_per_tensor(device, dtype):
    x = floats()
    want = torch.quantize_per_tensor(x, 0.05, 3, dtype)
    got = torch.quantize_per_tensor(x.to(device), 0.05, 3, dtype)
    assert_on(got, want, device)
    assert got.q_scale() == want.q_scale()
    assert got.q_zero_point() == want.q_zero_point()
    assert got.qscheme() == torch.per_tensor_affine


def test_quantize_per_tensor_tensor_qparams(device):
    x = floats()
    scale, zero_point = torch.tensor(0.1), torch.tensor(4)
    want = torch.quantize_per_tensor(x, scale, zero_point, torch.quint8)
    got = torch.quantize_per_tensor(x.to(device), scale.to(device),
                                    zero_point.to(device), torch.quint8)
    assert_on(got, want, device)


def test_quantize_strided_input(device):
    x = floats().transpose(0, 2)
    want = torch.quantize_per_tensor(x, 0.1, 0, torch.qint8)
    assert_on(torch.quantize_per_tensor(x.to(device), 0.1, 0, torch.qint8),
              want, device)


@pytest.mark.parametrize("params_on_device", [False, True])
def test_quantize_per_channel(device, params_on_device):
    x = floats()
    scales = torch.tensor([0.1, 0.2, 0.05, 0.4])
    zero_points = torch.tensor([0, 1, 2, 3])
    want = torch.quantize_per_channel(x, scales, zero_points, 1, torch.quint8)
    if params_on_device:
        scales, zero_points = scales.to(device), zero_points.to(device)
    got = torch.quantize_per_channel(x.to(device), scales, zero_points, 1,
                                     torch.quint8)
    assert_on(got, want, device)
    assert got.qscheme() == torch.per_channel_affine
    assert got.q_per_channel_axis() == want.q_per_channel_axis()
    assert_on(got.q_per_channel_scales(), want.q_per_channel_scales(), device)
    assert_on(got.q_per_channel_zero_points(), want.q_per_channel_zero_points(),
              device)


def test_dequantize_and_int_repr(device):
    x = floats()
    want = torch.quantize_per_tensor(x, 0.1, 10, torch.qint8)
    got = torch.quantize_per_tensor(x.to(device), 0.1, 10, torch.qint8)
    assert_on(got.int_repr(), want.int_repr(), device)
    assert_on(got.dequantize(), want.dequantize(), device)
    assert_on(torch.dequantize(got), torch.dequantize(want), device)


def test_quantized_to_device_and_back(device):
    want = torch.quantize_per_tensor(floats(), 0.1, 10, torch.quint8)
    got = want.to(device)
    assert_on(got, want, device)
    assert got.q_scale() == want.q_scale()
    assert_on(got.clone(), want.clone(), device)


def test_quantize_on_second_device(device, two_devices):
    x = floats()
    want = torch.quantize_per_tensor(x, 0.1, 10, torch.qint8)
    got = torch.quantize_per_tensor(x.to(f"{device}:1"), 0.1, 10, torch.qint8)
    assert got.device == torch.device(f"{device}:1")
    assert got.int_repr().device == got.device
    assert got.dequantize().device == got.device
    assert_on(got, want, device)


def test_quantize_errors_as_on_cpu(device):
    x = floats().double()
    with pytest.raises(RuntimeError) as cpu_error:
        torch.quantize_per_tensor(x, 0.1, 0, torch.qint8)
    with pytest.raises(RuntimeError) as device_error:
        torch.quantize_per_tensor(x.to(device), 0.1, 0, torch.qint8)
    first_line = str(cpu_error.value).splitlines()[0]
    assert first_line == str(device_error.value).splitlines()[0]


@pytest.mark.parametrize("name,op", [
    ("view", lambda t: t.view(3, 20)),
    ("reshape", lambda t: t.reshape(12, 5)),
    ("transpose", lambda t: t.transpose(0, 2)),
    ("select", lambda t: t[1]),
    ("flip", lambda t: t.flip(0)),
    ("relu", torch.relu),
    ("max_pool2d", lambda t: torch.nn.functional.max_pool2d(t, 2)),
    ("cat", lambda t: torch.cat([t, t], 1)),
    ("add", lambda t: torch.ops.quantized.add(t, t, 0.2, 3)),
    ("mean", lambda t: t.mean(2)),
], ids=lambda v: v if isinstance(v, str) else "")
def test_quantized_operators_match_the_cpu(device, name, op):
    # Views are ATen's own; the rest runs on the host (Note [Quantized
    # tensors on the device]).
    q = torch.quantize_per_tensor(floats(), 0.1, 10, torch.quint8)
    want = op(q)
    got = op(q.to(device))
    assert_on(got, want, device)
    assert got.q_scale() == want.q_scale()
    assert got.q_zero_point() == want.q_zero_point()


def test_quantized_views_share_the_device_memory(device):
    q = torch.quantize_per_tensor(floats(), 0.1, 10, torch.qint8).to(device)
    for view in (q.view(3, 20), q.transpose(0, 1), q[1:]):
        assert view.device == q.device
        assert (view.untyped_storage().data_ptr()
                == q.untyped_storage().data_ptr())
        assert view.q_scale() == q.q_scale()


def test_unsupported_quantized_operator_names_it(device):
    q = torch.quantize_per_tensor(floats(), 0.1, 10, torch.qint8)
    with pytest.raises(NotImplementedError):
        torch.exp(q)  # the CPU has none either
    with pytest.raises(NotImplementedError,
                       match=rf"aten::exp.*quantized tensors on device "
                       rf"'{device}'"):
        torch.exp(q.to(device))
