"""The builtin and hook operators: checks of their own, by family."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

import pytest
import torch
from torch.utils._pytree import tree_flatten

from .compare import _assert_same
from .inputs import _tensor, seed

if TYPE_CHECKING:
    from .suite import Suite

# --------------------------------------------------------------------------
# The builtin set: allocation, copies, views and storage


def _check_empty(suite: Suite, func: Any, dtype: torch.dtype) -> None:
    for shape in ((2, 3), (0, 4), (2, 3, 4, 5)):
        t = torch.empty(shape, dtype=dtype, device=suite.device)
        assert (t.shape, t.dtype, t.device.type) == (shape, dtype, suite.device)
        assert t.stride() == torch.empty(shape).stride()
    t = torch.empty((2, 3, 4, 5), dtype=dtype, device=suite.device,
                    memory_format=torch.channels_last)
    assert t.stride() == torch.empty((2, 3, 4, 5),
                                     memory_format=torch.channels_last).stride()


def _check_empty_strided(suite: Suite, func: Any, dtype: torch.dtype) -> None:
    t = torch.empty_strided((2, 3), (1, 2), dtype=dtype, device=suite.device)
    assert (t.shape, t.stride(), t.dtype) == ((2, 3), (1, 2), dtype)


def _check_copies(suite: Suite, func: Any, dtype: torch.dtype) -> None:
    src = _tensor((4, 5), dtype, 0)
    dev = src.to(suite.device)
    _assert_same(dev, src, suite.device, "host to device copy")
    _assert_same(dev.cpu(), src, "cpu", "device to host copy")
    # Device to device, across dtypes and into a strided destination.
    wide = torch.zeros((4, 10), dtype=dtype, device=suite.device)
    wide[:, ::2].copy_(dev)
    _assert_same(wide[:, ::2], src, suite.device, "copy into a strided view")
    _assert_same(dev.t().contiguous(), src.t().contiguous(), suite.device,
                 "copy of a transposed tensor")
    other = torch.float64 if dtype != torch.float64 else torch.float32
    _assert_same(dev.to(other), src.to(other), suite.device,
                 f"conversion to {other}")
    if suite.module.device_count() > 1:
        second = dev.to(f"{suite.device}:1")
        assert second.device.index == 1
        _assert_same(second, src, suite.device, "copy to device 1")
    # A copy that resizes its destination first.
    out = torch.empty(0, dtype=dtype, device=suite.device)
    torch.ops.aten._copy_from_and_resize(dev, out)
    _assert_same(out, src, suite.device, "_copy_from_and_resize")


def _check_scalar(suite: Suite, func: Any, dtype: torch.dtype) -> None:
    src = _tensor((3,), dtype, 0)
    dev = src.to(suite.device)
    for i in range(3):
        assert dev[i].item() == src[i].item() or (
            src[i].item() != src[i].item())


def _check_resize(suite: Suite, func: Any, dtype: torch.dtype) -> None:
    src = _tensor((6,), dtype, 0)
    dev = src.to(suite.device)
    dev.resize_(2, 3)
    _assert_same(dev, src.view(2, 3), suite.device, "resize_ keeps the values")
    dev.resize_(4, 5)
    assert dev.shape == (4, 5)
    _assert_same(dev.flatten()[:6], src, suite.device, "resize_ grows in place")
    dev.resize_(0)
    assert dev.numel() == 0


def _check_set(suite: Suite, func: Any, dtype: torch.dtype) -> None:
    src = _tensor((6,), dtype, 0)
    dev = src.to(suite.device)
    t = torch.empty(0, dtype=dtype, device=suite.device)
    t.set_(dev)
    _assert_same(t, src, suite.device, "set_(tensor)")
    t = torch.empty(0, dtype=dtype, device=suite.device)
    t.set_(dev.untyped_storage(), 1, (2, 2), (2, 1))
    _assert_same(t, src[1:5].view(2, 2), suite.device,
                 "set_(storage, offset, size, stride)")
    t = torch.empty(0, dtype=dtype, device=suite.device)
    t.set_(dev.untyped_storage())
    _assert_same(t, src, suite.device, "set_(storage)")
    t.set_()
    assert t.numel() == 0 and t.device.type == suite.device


def _check_views(suite: Suite, func: Any, dtype: torch.dtype) -> None:
    src = _tensor((4, 6), dtype, 0)
    dev = src.to(suite.device)
    for what, view in (("view", lambda t: t.view(6, 4)),
                       ("as_strided", lambda t: t.as_strided((3, 3), (1, 4), 2)),
                       ("reshape of a transpose", lambda t: t.t().reshape(24)),
                       ("_reshape_alias", lambda t: torch.ops.aten._reshape_alias(
                           t, (2, 12), (12, 1)))):
        got = view(dev)
        _assert_same(got, view(src), suite.device, what)
    shared = dev.view(24)
    shared[0] = src.flatten()[1]
    assert dev[0, 0].item() == src.flatten()[1].item(), "a view shares memory"


# --------------------------------------------------------------------------
# The hook operators, through the public functions that reach them


def _compare_call(suite: Suite, dtype: torch.dtype, what: str,
                  fn: Callable, inputs: list) -> None:
    """fn(*inputs) and its gradient with respect to every floating-point
    input, on the device against the CPU."""
    def run(device: str):
        moved = [t.detach().to(device).requires_grad_(t.is_floating_point())
                 for t in inputs]
        seed(suite.device, 0)
        result = fn(*moved)
        outputs = [t for t in tree_flatten(result)[0]
                   if isinstance(t, torch.Tensor) and t.requires_grad]
        generator = torch.Generator().manual_seed(7)
        grads_out = [torch.randn(t.shape, generator=generator).to(t.dtype)
                     .to(device) for t in outputs]
        grads = torch.autograd.grad(outputs, [t for t in moved if t.requires_grad],
                                    grads_out, allow_unused=True)
        return result, grads

    try:
        want = run("cpu")
    except Exception as error:  # noqa: BLE001 - the CPU refuses this dtype
        pytest.skip(f"the CPU runs {what} on no input in {dtype}: {error}")
    # The CPU decomposes what the device runs fused: round-offs differ.
    _assert_same(run(suite.device), want, suite.device,
                 f"{what} on {suite.device}, {str(dtype)[6:]} (forward, gradient)",
                 loose=True)


def _check_convolution(suite: Suite, func: Any, dtype: torch.dtype) -> None:
    F = torch.nn.functional
    for what, fn, shapes in (
            ("conv1d", lambda x, w, b: F.conv1d(x, w, b, padding=1), ((2, 3, 7), (4, 3, 3), (4,))),
            ("conv2d, stride 2, 2 groups",
             lambda x, w, b: F.conv2d(x, w, b, stride=2, groups=2),
             ((2, 4, 6, 6), (6, 2, 3, 3), (6,))),
            ("conv3d", lambda x, w, b: F.conv3d(x, w, b), ((1, 2, 4, 4, 4), (3, 2, 2, 2, 2), (3,))),
            ("conv_transpose2d, dilation 2",
             lambda x, w, b: F.conv_transpose2d(x, w, b, dilation=2),
             ((2, 3, 5, 5), (3, 4, 3, 3), (4,)))):
        inputs = [_tensor(shape, dtype, i) for i, shape in enumerate(shapes)]
        _compare_call(suite, dtype, what, fn, inputs)


def _check_attention(suite: Suite, func: Any, dtype: torch.dtype) -> None:
    F = torch.nn.functional
    q, k, v = (_tensor((2, 3, 5, 8), dtype, i) for i in range(3))
    mask = _tensor((5, 5), dtype, 3)
    _compare_call(suite, dtype, "scaled_dot_product_attention", F.scaled_dot_product_attention,
                  [q, k, v])
    _compare_call(suite, dtype, "scaled_dot_product_attention, causal",
                  lambda a, b, c: F.scaled_dot_product_attention(a, b, c, is_causal=True),
                  [q, k, v])
    _compare_call(suite, dtype, "scaled_dot_product_attention, additive mask",
                  F.scaled_dot_product_attention, [q, k, v, mask])


def _check_rnn_cell(suite: Suite, func: Any, dtype: torch.dtype) -> None:
    lstm = "lstm" in func._schema.name
    gates = 4 if lstm else 3
    x, h, c = _tensor((3, 5), dtype, 0), _tensor((3, 6), dtype, 1), _tensor((3, 6), dtype, 2)
    w_ih, w_hh = _tensor((gates * 6, 5), dtype, 3), _tensor((gates * 6, 6), dtype, 4)
    b_ih, b_hh = _tensor((gates * 6,), dtype, 5), _tensor((gates * 6,), dtype, 6)
    if lstm:
        _compare_call(suite, dtype, "lstm_cell",
                      lambda *t: torch.lstm_cell(t[0], (t[1], t[2]), *t[3:]),
                      [x, h, c, w_ih, w_hh, b_ih, b_hh])
    else:
        _compare_call(suite, dtype, "gru_cell", torch.gru_cell,
                      [x, h, w_ih, w_hh, b_ih, b_hh])


_HOOK_CHECKS: dict[str, Callable] = {
    "convolution_overrideable": _check_convolution,
    "convolution_backward_overrideable": _check_convolution,
    "_scaled_dot_product_fused_attention_overrideable": _check_attention,
    "_scaled_dot_product_fused_attention_overrideable_backward": _check_attention,
    "_thnn_fused_lstm_cell": _check_rnn_cell,
    "_thnn_fused_lstm_cell_backward_impl": _check_rnn_cell,
    "_thnn_fused_gru_cell": _check_rnn_cell,
    "_thnn_fused_gru_cell_backward": _check_rnn_cell,
}


_BUILTIN_CHECKS: dict[str, Callable] = {
    "empty.memory_format": _check_empty,
    "empty_strided": _check_empty_strided,
    "_copy_from": _check_copies,
    "_copy_from_and_resize": _check_copies,
    "_local_scalar_dense": _check_scalar,
    "resize_": _check_resize,
    "set_.source_Storage": _check_set,
    "set_.source_Storage_storage_offset": _check_set,
    "set_.source_Tensor": _check_set,
    "set_": _check_set,
    "view": _check_views,
    "as_strided": _check_views,
    "_reshape_alias": _check_views,
}


