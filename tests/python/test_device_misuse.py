"""The device refuses what real hardware refuses (Note [Device misuse] in
runtime/src/emulate/Aliases.cpp): a CPU tensor among an operator's device tensors,
and a tensor whose view reaches past the end of its storage, raise before
any kernel touches device memory, in every emulated path (listed
`emulate` entries, the emulate fallback, the CPU fallback and copies).
What CUDA allows still works: CPU scalars, CPU indices of advanced
indexing, and the CPU split points of tensor_split. set_rng_state refuses
what is not a state at once, and complex tensors compute as on the CPU.
"""
import pytest
import torch

SAME_DEVICE = "Expected all tensors to be on the same device"


def _mixes(device):
    a = torch.randn(3, 3, device=device)
    c = torch.randn(3, 3)
    return {
        "mm": lambda: torch.mm(a, c),
        "cat": lambda: torch.cat([a, c]),
        "where": lambda: torch.where(a > 0, a, c),
        "mul out= on the cpu": lambda: torch.mul(a, a, out=torch.empty(3, 3)),
        "index_select": lambda: a.index_select(0, torch.tensor([0, 1])),
        "dot": lambda: torch.dot(a[0], c[0]),
        "masked_fill": lambda: a.masked_fill(c > 0, 1.0),
        # Not in the example's spec: the emulate fallback.
        "lgamma out= on the cpu": lambda: torch.lgamma(a, out=torch.empty(3, 3)),
        # kind: fallback in the example's spec: the CPU fallback.
        "logcumsumexp out= on the cpu": lambda: torch.logcumsumexp(
            a, 0, out=torch.empty(3, 3)),
        # kind: kernel and kind: stub in the example's spec (on an init
        # backend, whatever registers them).
        "add": lambda: a + c,
        "abs out= on the cpu": lambda: torch.abs(a, out=torch.empty(3, 3)),
        "addr": lambda: torch.addr(a, a[0], c[0]),
    }


@pytest.mark.parametrize("case", sorted(_mixes("cpu")))
def test_cpu_tensors_among_device_tensors_raise(device, case):
    with pytest.raises(RuntimeError, match=SAME_DEVICE) as info:
        _mixes(device)[case]()
    assert f"{device}:0 and cpu" in str(info.value)


def test_what_cuda_allows_still_works(device):
    a = torch.arange(6.0).reshape(2, 3)
    d = a.to(device)
    # A 0-dim CPU tensor is a scalar.
    torch.testing.assert_close((d * torch.tensor(2.0)).cpu(), a * 2)
    # Advanced indexing takes CPU indices.
    index = torch.tensor([1, 0])
    torch.testing.assert_close(d[index].cpu(), a[index])
    d[index] = torch.zeros(2, 3, device=device)
    assert d.abs().sum().item() == 0
    # tensor_split takes its split points on the CPU.
    parts = torch.tensor_split(torch.arange(6.0, device=device), torch.tensor([2, 4]))
    assert [p.cpu().tolist() for p in parts] == [[0, 1], [2, 3], [4, 5]]


def _shrunk(device, nbytes):
    t = torch.randn(4, device=device)
    t.untyped_storage().resize_(nbytes)
    return t


@pytest.mark.parametrize("nbytes", [0, 8])
@pytest.mark.parametrize("use", ["mul", "copy to the cpu", "logcumsumexp",
                                 "add", "relu", "abs"])
def test_views_past_their_storage_raise(device, nbytes, use):
    # In the example: mul emulated, logcumsumexp through the CPU fallback,
    # add and relu user kernels, abs a DispatchStub.
    t = _shrunk(device, nbytes)
    run = {"mul": lambda: t * 2,
           "copy to the cpu": lambda: t.cpu(),
           "logcumsumexp": lambda: torch.logcumsumexp(t, 0),
           "add": lambda: t + t,
           "relu": lambda: torch.relu(t),
           "abs": lambda: torch.abs(t)}[use]
    with pytest.raises(RuntimeError, match="needs a storage of 16 bytes") as info:
        run()
    assert f"its storage holds {nbytes}" in str(info.value)


@pytest.mark.parametrize("numel", [0, 4])
def test_a_negative_storage_size_raises_and_changes_nothing(device, numel):
    # As on the CPU: the size is refused before any arithmetic on it, which
    # would wrap into a storage claiming 2**64 - 1 bytes on no memory.
    t = torch.arange(float(numel), device=device)
    storage = t.untyped_storage()
    with pytest.raises(RuntimeError, match="negative size, -1 bytes"):
        storage.resize_(-1)
    assert storage.nbytes() == 4 * numel
    torch.testing.assert_close((t[1:] * 2).cpu(), torch.arange(float(numel))[1:] * 2)


@pytest.mark.parametrize("state, error", [
    (torch.zeros(3), TypeError),
    (torch.zeros(3, dtype=torch.uint8), RuntimeError),
])
def test_set_rng_state_refuses_what_is_not_a_state(mod, state, error):
    before = mod.get_rng_state()
    with pytest.raises(error, match="RNG state"):
        mod.set_rng_state(state)
    # Nothing was queued or applied: the state is as it was.
    assert torch.equal(mod.get_rng_state(), before)
    mod.set_rng_state(before)


def test_complex_tensors_compute_as_on_the_cpu(device):
    torch.manual_seed(0)
    z = torch.randn(4, 3, dtype=torch.complex64)
    d = z.to(device)
    real = torch.view_as_real(d)
    assert real.device.type == device
    assert real.untyped_storage().data_ptr() == d.untyped_storage().data_ptr()
    torch.testing.assert_close(real.cpu(), torch.view_as_real(z))
    # view_as_real is a view: a write through it reaches the complex tensor.
    real[0, 0, 0] = 5.0
    assert d[0, 0].real.item() == 5.0
    z[0, 0] = complex(5.0, z[0, 0].imag.item())
    torch.testing.assert_close(torch.view_as_complex(real).cpu(), z)
    for name, fn in [("mul", lambda t: t * t), ("abs", torch.abs),
                     ("angle", torch.angle), ("conj", lambda t: t.conj() * 2),
                     ("mm", lambda t: t @ t.T), ("exp", torch.exp)]:
        torch.testing.assert_close(fn(d).cpu(), fn(z), msg=name)


def test_exit_while_a_daemon_thread_drives_the_device(mod, device, run_python):
    # Note [Exit with device work in flight] in runtime/src/emulate/Launch.cpp.
    code = f"""
import threading, time, torch, {mod.__name__}
def work():
    x = torch.randn(128, 128, device="{device}")
    while True:
        x = (x @ x).tanh()
threading.Thread(target=work, daemon=True).start()
time.sleep(0.2)
print("exiting")
"""
    for _ in range(3):
        r = run_python(code, timeout=60)
        assert r.returncode == 0, r.stderr[-2000:]
        assert r.stdout.strip() == "exiting"
