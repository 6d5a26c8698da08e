"""The builtin operators of a generated backend: allocation, copies in every
direction and layout, views and aliasing, resizing, set_, item()."""

import pytest
import torch


def test_arithmetic_runs(device):
    x = torch.ones(3, device=device) + 1
    assert x.device.type == device
    assert x.to("cpu").tolist() == [2.0, 2.0, 2.0]


def test_empty_and_empty_strided(device):
    x = torch.empty(2, 3, device=device)
    assert x.shape == (2, 3) and x.stride() == (3, 1)
    y = torch.empty_strided((2, 3), (1, 2), device=device)
    assert y.stride() == (1, 2)
    c = torch.empty(1, 2, 3, 4, device=device, memory_format=torch.channels_last)
    assert c.is_contiguous(memory_format=torch.channels_last)
    assert torch.empty(0, device=device).numel() == 0
    with pytest.raises(RuntimeError):
        torch.empty(2, device=device, pin_memory=True)


@pytest.mark.parametrize(
    "dtype",
    [torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int8,
     torch.uint8, torch.int32, torch.int64, torch.bool, torch.complex64],
)
def test_round_trip_every_dtype(device, dtype):
    source = (torch.arange(24) % 7).to(dtype).reshape(2, 3, 4)
    on_device = source.to(device)
    assert on_device.dtype == dtype
    assert torch.equal(on_device.cpu(), source)


def test_host_to_device_non_contiguous_source(device):
    source = torch.arange(12.0).reshape(3, 4).t()
    assert not source.is_contiguous()
    assert torch.equal(source.to(device).cpu(), source)


def test_host_to_device_non_contiguous_destination(device):
    base = torch.zeros(4, 6, device=device)
    view = base[1:3, ::2]
    view.copy_(torch.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]))
    expected = torch.zeros(4, 6)
    expected[1:3, ::2] = torch.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    assert torch.equal(base.cpu(), expected)


def test_device_to_host_non_contiguous(device):
    base = torch.arange(24.0).reshape(4, 6)
    on_device = base.to(device)
    assert torch.equal(on_device[:, 1::2].cpu(), base[:, 1::2])
    assert torch.equal(on_device.t().cpu(), base.t())
    out = torch.zeros(6, 4).t()  # non-contiguous host destination
    out.copy_(on_device)
    assert torch.equal(out, base)


def test_dtype_converting_copies(device):
    values = torch.tensor([1.5, -2.25, 3.0])
    # host float -> device int, device int -> host double
    ints = torch.empty(3, dtype=torch.int32, device=device)
    ints.copy_(values)
    assert ints.cpu().tolist() == [1, -2, 3]
    doubles = torch.empty(3, dtype=torch.float64)
    doubles.copy_(ints)
    assert doubles.tolist() == [1.0, -2.0, 3.0]
    # device -> device with conversion, same device
    halves = values.to(device).to(torch.float16)
    assert halves.dtype == torch.float16 and halves.device.type == device
    assert halves.cpu().tolist() == [1.5, -2.25, 3.0]


def test_device_to_device_same_device(device):
    a = torch.arange(20.0).reshape(4, 5).to(device)
    b = a.clone()
    assert b.data_ptr() != a.data_ptr()
    assert torch.equal(b.cpu(), a.cpu())
    strided = torch.empty(5, 4, device=device).t()
    strided.copy_(a)
    assert torch.equal(strided.cpu(), a.cpu())
    assert torch.equal(a.t().contiguous().cpu(), a.cpu().t())


def test_broadcasting_copy(device):
    target = torch.zeros(3, 4, device=device)
    target.copy_(torch.arange(4.0))
    assert torch.equal(target.cpu(), torch.arange(4.0).expand(3, 4))
    target.copy_(torch.tensor([[1.0], [2.0], [3.0]], device=device))
    assert target.cpu()[:, 0].tolist() == [1.0, 2.0, 3.0]
    assert target.cpu()[:, 3].tolist() == [1.0, 2.0, 3.0]


def test_cross_device_copies(device, two_devices):
    source = torch.arange(12.0).reshape(3, 4)
    on0 = source.to(f"{device}:0")
    on1 = on0.to(f"{device}:1")
    assert on1.device == torch.device(device, 1)
    assert torch.equal(on1.cpu(), source)
    back = on1.to(f"{device}:0")
    assert back.device == torch.device(device, 0)
    assert torch.equal(back.cpu(), source)
    # strided source, converting dtype, into a strided destination
    target = torch.zeros(4, 3, dtype=torch.float64, device=f"{device}:1").t()
    target.copy_(on0[:, :])
    assert torch.equal(target.cpu(), source.double())
    transposed = on0.t().to(f"{device}:1")
    assert torch.equal(transposed.cpu(), source.t())


def test_conjugate_and_negative_views(device):
    z = torch.tensor([1 + 2j, 3 - 4j], dtype=torch.complex64)
    on_device = z.to(device)
    assert torch.equal(on_device.conj().cpu(), z.conj())
    target = torch.zeros(2, dtype=torch.complex64, device=device)
    target.copy_(z.conj())
    assert torch.equal(target.cpu(), z.conj().resolve_conj())
    assert torch.equal(on_device.conj().to(device).resolve_conj().cpu(), z.conj())


def test_views_alias_their_base(device):
    base = torch.zeros(2, 3, device=device)
    view = base.view(3, 2)
    assert view.data_ptr() == base.data_ptr()
    view[0, 1] = 7.0
    assert base.cpu()[0, 1].item() == 7.0
    row = base[1]
    row.fill_(5.0)
    assert base.cpu()[1].tolist() == [5.0, 5.0, 5.0]
    strided = base.as_strided((2,), (3,), 1)
    assert strided.cpu().tolist() == [7.0, 5.0]
    reshaped = base.t().reshape(6)  # not viewable: copies
    assert reshaped.cpu().tolist() == base.cpu().t().reshape(6).tolist()
    assert base.reshape(3, 2).data_ptr() == base.data_ptr()


def test_resize_keeps_data(device):
    x = torch.arange(4.0).to(device)
    x.resize_(8)
    assert x.shape == (8,)
    assert x.cpu()[:4].tolist() == [0.0, 1.0, 2.0, 3.0]
    x.resize_(2, 2)
    assert x.cpu().tolist() == [[0.0, 1.0], [2.0, 3.0]]
    y = torch.empty(0, device=device)
    y.resize_(3, 4, memory_format=torch.contiguous_format)
    assert y.shape == (3, 4)


def test_out_argument_is_resized(device):
    out = torch.empty(0, device=device)
    torch.add(torch.ones(3, device=device), 1, out=out)
    assert out.cpu().tolist() == [2.0, 2.0, 2.0]


def test_storage_resize(device):
    storage = torch.UntypedStorage(8, device=device)
    storage.copy_(torch.UntypedStorage(bytearray(range(8))))
    storage.resize_(16)
    assert storage.nbytes() == 16
    assert list(storage.cpu())[:8] == list(range(8))


def test_set_shares_storage(device):
    a = torch.arange(6.0).to(device)
    b = torch.empty(0, device=device)
    b.set_(a)
    assert b.data_ptr() == a.data_ptr() and b.shape == a.shape
    c = torch.empty(0, device=device)
    c.set_(a.untyped_storage(), 2, (2, 2), (2, 1))
    assert c.cpu().tolist() == [[2.0, 3.0], [4.0, 5.0]]
    d = torch.empty(0, device=device)
    d.set_(a.untyped_storage())
    assert d.shape == (6,)
    c.set_()
    assert c.numel() == 0
    with pytest.raises(RuntimeError):
        c.set_(torch.ones(2).untyped_storage())


@pytest.mark.parametrize(
    "value,dtype",
    [(3.5, torch.float32), (-7, torch.int64), (True, torch.bool),
     (2 - 1j, torch.complex128), (0.5, torch.float16)],
)
def test_item(device, value, dtype):
    x = torch.tensor([value], dtype=dtype).to(device)
    assert x.item() == value
    assert x[0].item() == value


def test_item_rejects_many_elements(device):
    with pytest.raises(RuntimeError):
        torch.ones(2, device=device).item()


def test_zero_dim_and_empty(device):
    scalar = torch.tensor(4.0).to(device)
    assert scalar.dim() == 0 and scalar.item() == 4.0
    empty = torch.empty(0, 3, device=device)
    assert empty.cpu().shape == (0, 3)
    empty.copy_(torch.empty(0, 3))


def test_autograd_through_the_device(device):
    w = torch.tensor([1.0, 2.0, 3.0], device=device, requires_grad=True)
    loss = (w * w).sum()
    loss.backward()
    assert w.grad.device.type == device
    assert w.grad.cpu().tolist() == [2.0, 4.0, 6.0]
