"""Graph capture and replay on the device (torch.accelerator.Graph over the
driver's stream capture: Note [Device graphs] in runtime/src/Graph.cpp,
Note [Graph memory pools] in runtime/src/Allocator.cpp), judged against
eager execution and the CPU, as CUDA graphs are."""

import pytest
import torch
from torch import nn


@pytest.fixture
def side(device, mod):
    """A side stream made current, as torch.cuda.graph() captures on one."""
    stream = torch.Stream(device=device)
    stream.wait_stream(torch.accelerator.current_stream())
    with stream:
        yield stream
    torch.accelerator.current_stream().wait_stream(stream)
    mod.synchronize()


# --8<-- [start:graph-replay]
def test_replay_reads_the_inputs_as_they_are_now(device, side):
    static_x = torch.zeros(64, 64, device=device)
    weight = torch.randn(64, 64).to(device)
    graph = torch.accelerator.Graph()
    with graph:
        static_y = (static_x @ weight * 2 + 1).relu().sum(dim=0)
    for step in range(3):
        x = torch.randn(64, 64)
        static_x.copy_(x.to(device))  # new data, same memory
        graph.replay()
        expected = (x @ weight.cpu() * 2 + 1).relu().sum(dim=0)
        torch.testing.assert_close(static_y.cpu(), expected)
# --8<-- [end:graph-replay]


def test_capture_runs_nothing_and_replay_is_asynchronous(device, mod, side):
    a = torch.randn(1024, 1024).to(device)
    out = torch.zeros(1024, 1024, device=device)
    graph = torch.accelerator.Graph()
    with graph:
        for _ in range(8):
            out.add_(a @ a)
    mod.synchronize()
    assert out.abs().sum().item() == 0, "the capture ran work"
    graph.replay()
    # Eight 1024x1024 matmuls are queued, not done, when replay() returns.
    assert not side.query()
    side.synchronize()
    torch.testing.assert_close(out.cpu(), 8 * (a.cpu() @ a.cpu()),
                               rtol=1e-4, atol=1e-3)


def test_convolution_and_attention_replay_after_a_warm_up(device, side):
    # Once an eager call with the same arguments' shapes ran, the hook
    # operators are queued, and so captured (Note [Queued hook operators]).
    import torch.nn.functional as F

    torch.manual_seed(0)
    weight, query = torch.randn(4, 3, 3, 3), torch.randn(1, 2, 8, 4)
    static_x = torch.zeros(2, 3, 8, 8, device=device)
    static_q = torch.zeros(1, 2, 8, 4, device=device)

    def step(x, w, q):
        return (F.conv2d(x, w, padding=1).relu().sum(),
                F.scaled_dot_product_attention(q, q, q).abs().sum() + q.sin().sum())

    device_weight = weight.to(device)
    step(static_x, device_weight, static_q)  # the warm-up
    graph = torch.accelerator.Graph()
    with graph:
        static_out = step(static_x, device_weight, static_q)
    for _ in range(2):
        x, q = torch.randn(2, 3, 8, 8), torch.randn(1, 2, 8, 4)
        static_x.copy_(x.to(device))
        static_q.copy_(q.to(device))
        graph.replay()
        for got, expected in zip(static_out, step(x, weight, q)):
            torch.testing.assert_close(got.cpu(), expected)


def _mlp():
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4))


# --8<-- [start:graph-training-step]
def test_training_step_replayed_matches_eager_on_cpu(device, side):
    model = _mlp().to(device)
    reference = _mlp()
    opt = torch.optim.Adam(model.parameters(), lr=1e-2, capturable=True)
    ref_opt = torch.optim.Adam(reference.parameters(), lr=1e-2)
    loss_fn = nn.MSELoss()
    data = [(torch.randn(8, 16), torch.randn(8, 4)) for _ in range(6)]
    static_x = torch.zeros(8, 16, device=device)
    static_t = torch.zeros(8, 4, device=device)

    def step(model, opt, x, t):
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(model(x), t)
        loss.backward()
        opt.step()
        return loss

    # Warm-up steps, eagerly, as for CUDA graphs: every operator's first
    # call runs synchronously, and the optimizer makes its state.
    for x, t in data[:2]:
        static_x.copy_(x.to(device))
        static_t.copy_(t.to(device))
        step(model, opt, static_x, static_t)
        step(reference, ref_opt, x, t)
    graph = torch.accelerator.Graph()
    with graph:
        static_loss = step(model, opt, static_x, static_t)
    for x, t in data[2:]:
        static_x.copy_(x.to(device))
        static_t.copy_(t.to(device))
        graph.replay()
        ref_loss = step(reference, ref_opt, x, t)
        torch.testing.assert_close(static_loss.cpu(), ref_loss.detach())
    for p, ref in zip(model.parameters(), reference.parameters()):
        torch.testing.assert_close(p.detach().cpu(), ref.detach(),
                                   rtol=2e-5, atol=2e-5)
# --8<-- [end:graph-training-step]


def test_capture_refuses_what_synchronizes(device, side):
    x = torch.ones(4, device=device)
    graph = torch.accelerator.Graph()
    graph.capture_begin()
    with pytest.raises(RuntimeError,
                       match="operation not permitted when stream is capturing"):
        (x * 2).sum().item()
    with pytest.raises(RuntimeError,
                       match="operation failed due to a previous error during capture"):
        graph.capture_end()
    graph.reset()
    # After the failed capture the stream works as before.
    torch.testing.assert_close((x * 3).cpu(), torch.full((4,), 3.0))


def test_a_synchronous_operator_names_the_way_out(device, side):
    x = torch.ones(16, device=device)
    graph = torch.accelerator.Graph()
    graph.capture_begin()
    with pytest.raises(RuntimeError, match="cannot be captured in a graph"):
        torch.nn.functional.dropout(x, 0.5)
    with pytest.raises(RuntimeError, match="previous error during capture"):
        graph.capture_end()


def test_the_default_stream_cannot_capture(device, mod):
    mod.synchronize()
    graph = torch.accelerator.Graph()
    with pytest.raises(RuntimeError, match="non-default stream"):
        graph.capture_begin()


def test_graph_memory_stays_with_the_graph_until_reset(device, mod, side):
    n = 1 << 18  # 1 MiB of float32
    graph = torch.accelerator.Graph()
    with graph:
        scratch = torch.empty(n, device=device)
        address = scratch.data_ptr()
        scratch.fill_(1)
        total = scratch.sum()
        del scratch  # back to the graph's pool, not to anyone else
    outside = [torch.empty(n, device=device) for _ in range(4)]
    assert address not in {t.data_ptr() for t in outside}
    # The snapshot names the pool, as CUDA's does.
    (segment,) = [s for s in mod.memory._snapshot()["segments"]
                  if s["address"] == address]
    assert segment["segment_pool_id"] == graph.pool() != (0, 0)
    graph.replay()
    assert total.item() == n
    graph.reset()
    again = torch.empty(n, device=device)  # while `outside` holds the rest
    assert again.data_ptr() == address, "the released pool joins the cache"


def test_graphs_share_a_pool_and_keep_graph(device, side, tmp_path):
    x = torch.arange(8.0, device=device)
    first = torch.accelerator.Graph()
    with first:
        y = x * 2
    second = torch.accelerator.Graph(keep_graph=True, pool=first.pool())
    second.enable_debug_mode()
    with second:
        z = y + 1
    assert second.pool() == first.pool()
    second.debug_dump(str(tmp_path / "graph.dot"))
    dump = (tmp_path / "graph.dot").read_text()
    assert dump.startswith("digraph") and "n0 [" in dump and "n1 [" not in dump
    x.copy_(torch.arange(8.0, 16.0).to(device))
    first.replay()
    second.replay()  # instantiated on first replay
    torch.testing.assert_close(z.cpu(), torch.arange(8.0, 16.0) * 2 + 1)


def test_a_driver_without_graphs_says_so(device, mod, run_python):
    # ACCGEN_EMU_GRAPHS=0: the emulator answers stream capture as a driver
    # without it does, accErrorNotSupported. The backend's package is
    # imported, for a run without autoloading.
    r = run_python(f"""
import torch, {mod.__name__}
s = torch.Stream(device={device!r})
g = torch.accelerator.Graph()
with s:
    try:
        g.capture_begin()
    except RuntimeError as e:
        print("refused:", e)
    else:
        print("captured")
    print("still works:", (torch.ones(2, device={device!r}) * 2).sum().item())
""", env={"ACCGEN_EMU_GRAPHS": "0"})
    assert r.returncode == 0, r.stderr
    assert f"refused: graphs are not supported on {device}" in r.stdout, r.stdout
    assert "still works: 4.0" in r.stdout, r.stdout
