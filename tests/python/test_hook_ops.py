"""The hook operators every backend registers (Note [Hook operators] in
runtime/include/accgen/runtime/HookOps.h): convolutions of every shape run
on the device through convolution_overrideable and its backward, with the
contiguous results torch.compile's meta kernels expect; scaled dot product
attention takes the device's fused kernel where it applies, and math
elsewhere, with the same values and gradients as the CPU.
"""
import pytest
import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

OVERRIDEABLE = SDPBackend.OVERRIDEABLE.value
MATH = SDPBackend.MATH.value

CONVOLUTIONS = {
    "conv1d": (lambda: torch.nn.Conv1d(4, 6, 3, padding=1), (2, 4, 9)),
    "conv2d": (lambda: torch.nn.Conv2d(3, 8, 3, stride=2, padding=1),
               (2, 3, 10, 11)),
    "conv3d": (lambda: torch.nn.Conv3d(2, 4, 3), (1, 2, 5, 6, 7)),
    "grouped": (lambda: torch.nn.Conv2d(4, 8, 3, groups=2), (2, 4, 7, 7)),
    "dilated": (lambda: torch.nn.Conv2d(3, 5, 3, dilation=2, bias=False),
                (2, 3, 9, 9)),
    "depthwise": (lambda: torch.nn.Conv2d(4, 4, 3, groups=4, padding=1),
                  (1, 4, 6, 6)),
    "transposed1d": (lambda: torch.nn.ConvTranspose1d(4, 3, 3, stride=2),
                     (2, 4, 5)),
    "transposed2d": (lambda: torch.nn.ConvTranspose2d(
        4, 6, 3, stride=2, padding=1, output_padding=1, groups=2),
        (2, 4, 5, 5)),
    "transposed3d": (lambda: torch.nn.ConvTranspose3d(2, 3, 2, stride=2),
                     (1, 2, 3, 3, 3)),
}


@pytest.mark.parametrize("kind", sorted(CONVOLUTIONS))
def test_convolution_forward_and_backward_match_the_cpu(device, kind):
    make, shape = CONVOLUTIONS[kind]
    torch.manual_seed(0)
    cpu = make()
    dev = make().to(device)
    dev.load_state_dict(cpu.state_dict())
    x = torch.randn(shape, requires_grad=True)
    dx = x.detach().to(device).requires_grad_()
    want = cpu(x)
    got = dev(dx)
    assert got.device.type == device
    assert got.is_contiguous()
    torch.testing.assert_close(got.cpu(), want, atol=1e-5, rtol=1e-4)
    grad = torch.randn_like(want)
    want.backward(grad)
    got.backward(grad.to(device))
    torch.testing.assert_close(dx.grad.cpu(), x.grad, atol=1e-5, rtol=1e-4)
    for name, p in cpu.named_parameters():
        torch.testing.assert_close(dict(dev.named_parameters())[name].grad.cpu(),
                                   p.grad, atol=1e-4, rtol=1e-4)


def test_convolution_of_channels_last_input_is_contiguous(device):
    conv = torch.nn.Conv2d(3, 4, 3).to(device)
    x = torch.randn(2, 3, 8, 8).to(memory_format=torch.channels_last)
    out = conv(x.to(device))
    assert out.is_contiguous()
    torch.testing.assert_close(out.cpu(), conv.cpu()(x))


def test_convolution_double_backward(device):
    x = torch.randn(1, 2, 5, 5, dtype=torch.double, requires_grad=True)
    w = torch.randn(3, 2, 3, 3, dtype=torch.double, requires_grad=True)

    def grads(x, w):
        out = F.conv2d(x, w)
        (gx,) = torch.autograd.grad(out.pow(2).sum(), x, create_graph=True)
        return torch.autograd.grad(gx.sum(), w)[0]

    dx = x.detach().to(device).requires_grad_()
    dw = w.detach().to(device).requires_grad_()
    torch.testing.assert_close(grads(dx, dw).cpu(), grads(x, w))


def _qkv(device, *shape, dtype=torch.float32):
    torch.manual_seed(1)
    cpu = [torch.randn(shape, dtype=dtype, requires_grad=True)
           for _ in range(3)]
    dev = [t.detach().to(device).requires_grad_() for t in cpu]
    return cpu, dev


def test_sdpa_choice_reads_metadata(device):
    _, (q, k, v) = _qkv(device, 2, 3, 5, 8)
    assert torch._fused_sdp_choice(q, k, v) == OVERRIDEABLE
    assert torch._fused_sdp_choice(q, k, v, dropout_p=0.1) == MATH
    assert torch._fused_sdp_choice(q[0], k[0], v[0]) == MATH
    with sdpa_kernel([SDPBackend.MATH]):
        assert torch._fused_sdp_choice(q, k, v) == MATH
    # Traced with fake tensors, as torch.compile traces, SDPA still takes
    # the fused kernel: the choice reads nothing but metadata.
    from torch.fx.experimental.proxy_tensor import make_fx
    graph = make_fx(F.scaled_dot_product_attention, tracing_mode="fake")(
        q.detach(), k.detach(), v.detach())
    assert "_scaled_dot_product_fused_attention_overrideable" in graph.code
    kv_heads = torch.randn(2, 1, 5, 8, device=device)
    assert torch._fused_sdp_choice(q, kv_heads, kv_heads,
                                   enable_gqa=True) == MATH


@pytest.mark.parametrize("mask", ["none", "causal", "float", "bool"])
def test_sdpa_fused_matches_the_cpu(device, mask):
    (q, k, v), (dq, dk, dv) = _qkv(device, 2, 4, 6, 8)
    kwargs, dkwargs = {}, {}
    if mask == "causal":
        kwargs = dkwargs = {"is_causal": True}
    elif mask == "float":
        m = torch.randn(6, 6)
        kwargs, dkwargs = {"attn_mask": m}, {"attn_mask": m.to(device)}
    elif mask == "bool":
        m = torch.rand(2, 1, 6, 6) > 0.3
        m[..., 0] = True
        kwargs, dkwargs = {"attn_mask": m}, {"attn_mask": m.to(device)}
    want = F.scaled_dot_product_attention(q, k, v, **kwargs)
    got = F.scaled_dot_product_attention(dq, dk, dv, **dkwargs)
    assert "FusedAttentionOverrideable" in type(got.grad_fn).__name__
    torch.testing.assert_close(got.cpu(), want, atol=1e-5, rtol=1e-4)
    grad = torch.randn_like(want)
    want.backward(grad)
    got.backward(grad.to(device))
    for d, c in ((dq, q), (dk, k), (dv, v)):
        torch.testing.assert_close(d.grad.cpu(), c.grad, atol=1e-5, rtol=1e-4)


def test_sdpa_mask_gradient(device):
    (q, k, v), (dq, dk, dv) = _qkv(device, 1, 2, 4, 8)
    m = torch.randn(1, 2, 4, 4, requires_grad=True)
    dm = m.detach().to(device).requires_grad_()
    F.scaled_dot_product_attention(q, k, v, attn_mask=m).sum().backward()
    F.scaled_dot_product_attention(dq, dk, dv, attn_mask=dm).sum().backward()
    torch.testing.assert_close(dm.grad.cpu(), m.grad, atol=1e-5, rtol=1e-4)
    # A broadcast mask gets its gradient summed to its own shape.
    m2 = torch.randn(4, 4, requires_grad=True)
    dm2 = m2.detach().to(device).requires_grad_()
    F.scaled_dot_product_attention(q, k, v, attn_mask=m2).sum().backward()
    F.scaled_dot_product_attention(dq, dk, dv, attn_mask=dm2).sum().backward()
    torch.testing.assert_close(dm2.grad.cpu(), m2.grad, atol=1e-5, rtol=1e-4)


def test_sdpa_where_the_fused_kernel_does_not_apply(device):
    # 3-D inputs and dropout take the math path, which computes the same.
    (q, k, v), (dq, dk, dv) = _qkv(device, 3, 5, 8)
    torch.testing.assert_close(
        F.scaled_dot_product_attention(dq, dk, dv).cpu(),
        F.scaled_dot_product_attention(q, k, v), atol=1e-5, rtol=1e-4)
    (q, k, v), (dq, dk, dv) = _qkv(device, 1, 2, 4, 8)
    out = F.scaled_dot_product_attention(dq, dk, dv, dropout_p=0.5)
    assert "FusedAttentionOverrideable" not in type(out.grad_fn).__name__
    assert out.shape == q.shape
    with sdpa_kernel([SDPBackend.MATH]):
        got = F.scaled_dot_product_attention(dq, dk, dv)
    assert "FusedAttentionOverrideable" not in type(got.grad_fn).__name__
    torch.testing.assert_close(
        got.cpu(), F.scaled_dot_product_attention(q, k, v),
        atol=1e-5, rtol=1e-4)


def test_sdpa_output_layouts_follow_the_meta_kernel(device):
    # The query's layout (batch and heads transposed) carries to the output;
    # the log-sum-exp is contiguous float.
    fused = torch.ops.aten._scaled_dot_product_fused_attention_overrideable
    q = torch.randn(3, 5, 2, 8).transpose(1, 2).to(device)
    out, lse, *_ = fused(q, q, q)
    meta = torch.empty_strided(q.shape, q.stride(), device="meta")
    meta_out, meta_lse, *_ = fused(meta, meta, meta)
    assert out.stride() == meta_out.stride()
    assert lse.shape == meta_lse.shape
    assert lse.is_contiguous() and lse.dtype == torch.float32


RECURRENT = {
    "lstm": lambda bias: torch.nn.LSTM(5, 7, num_layers=2, bias=bias,
                                       batch_first=True),
    "gru": lambda bias: torch.nn.GRU(5, 7, num_layers=2, bias=bias),
    "lstm_cell": lambda bias: torch.nn.LSTMCell(5, 7, bias=bias),
    "gru_cell": lambda bias: torch.nn.GRUCell(5, 7, bias=bias),
}


@pytest.mark.parametrize("bias", [True, False], ids=["bias", "no_bias"])
@pytest.mark.parametrize("kind", sorted(RECURRENT))
def test_recurrent_cells_match_the_cpu(device, kind, bias):
    # On the device the cells run the fused cell operators (as on CUDA),
    # on the CPU their composite forms: the same function.
    torch.manual_seed(2)
    cpu = RECURRENT[kind](bias).double()
    dev = RECURRENT[kind](bias).double().to(device)
    dev.load_state_dict(cpu.state_dict())
    shape = (3, 5) if kind.endswith("cell") else (3, 4, 5)
    x = torch.randn(shape, dtype=torch.double, requires_grad=True)
    dx = x.detach().to(device).requires_grad_()

    def first(out):
        out = out[0] if isinstance(out, tuple) else out
        return out

    want, got = first(cpu(x)), first(dev(dx))
    torch.testing.assert_close(got.cpu(), want)
    grad = torch.randn_like(want)
    want.backward(grad)
    got.backward(grad.to(device))
    torch.testing.assert_close(dx.grad.cpu(), x.grad)
    for name, p in cpu.named_parameters():
        torch.testing.assert_close(
            dict(dev.named_parameters())[name].grad.cpu(), p.grad)
