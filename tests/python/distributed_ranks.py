"""The rank side of test_distributed.py: one scenario in one rank process.

    python distributed_ranks.py SCENARIO RANK WORLD_SIZE STORE DEVICE

Each scenario joins a process group of WORLD_SIZE ranks that meet in the
file store at the path STORE (Gloo's connections are on loopback), runs on
DEVICE, checks its own results against the same
computation done in this process on CPU, and exits 0 only if every check
passed. Under torchrun (no arguments), RANK, WORLD_SIZE and the store come
from the environment and the scenario is "ddp_torchrun".
"""

import datetime
import importlib
import os
import sys
import time

import torch
import torch.distributed as dist

# A backend that is not autoloaded (ACCGEN_TEST_PACKAGE names it) is
# imported explicitly.
if os.environ.get("ACCGEN_TEST_PACKAGE"):
    importlib.import_module(os.environ["ACCGEN_TEST_PACKAGE"])

TIMEOUT = datetime.timedelta(seconds=30)


def expect_equal(actual: torch.Tensor, expected: torch.Tensor, what: str) -> None:
    actual = actual.cpu()
    try:
        torch.testing.assert_close(actual, expected, rtol=1e-2, atol=1e-2)
    except AssertionError as error:
        raise AssertionError(f"{what}: {error}") from None


def rank_input(rank: int, shape, dtype) -> torch.Tensor:
    # Distinct, exactly representable values per rank (small integers).
    gen = torch.Generator().manual_seed(100 + rank)
    values = torch.randint(1, 5, shape, generator=gen)
    if dtype == torch.bool:
        return values > 2
    if dtype.is_complex:
        return torch.complex(values.double(), -values.double()).to(dtype)
    return values.to(dtype)


def inputs_of_all(world: int, shape, dtype) -> list[torch.Tensor]:
    return [rank_input(r, shape, dtype) for r in range(world)]


REDUCE = {
    dist.ReduceOp.SUM: lambda ts: torch.stack(ts).sum(0),
    dist.ReduceOp.PRODUCT: lambda ts: torch.stack(ts).prod(0),
    dist.ReduceOp.MIN: lambda ts: torch.stack(ts).amin(0),
    dist.ReduceOp.MAX: lambda ts: torch.stack(ts).amax(0),
    dist.ReduceOp.AVG: lambda ts: torch.stack(ts).double().mean(0),
}


def reference(op, ts: list[torch.Tensor]) -> torch.Tensor:
    if ts[0].dtype == torch.bool:
        stacked = torch.stack(ts)
        return stacked.any(0) if op == dist.ReduceOp.SUM else stacked.all(0)
    out = REDUCE[op](ts)
    return out.to(ts[0].dtype) if op != dist.ReduceOp.AVG else out


def scenario_collectives(rank: int, world: int, device: str) -> None:
    dtypes = [
        torch.float32, torch.float64, torch.float16, torch.bfloat16,
        torch.int64, torch.int32, torch.int8, torch.uint8, torch.bool,
        torch.complex64,
    ]
    for dtype in dtypes:
        for shape in [(1,), (1000,), (3, 5)]:
            tag = f"{dtype} {shape}"
            alls = inputs_of_all(world, shape, dtype)
            ops = [dist.ReduceOp.SUM]
            if dtype.is_floating_point:
                ops += [dist.ReduceOp.PRODUCT, dist.ReduceOp.MIN,
                        dist.ReduceOp.MAX, dist.ReduceOp.AVG]
            elif dtype == torch.bool:
                ops += [dist.ReduceOp.PRODUCT]
            elif not dtype.is_complex:
                ops += [dist.ReduceOp.MIN, dist.ReduceOp.MAX]
            for op in ops:
                t = alls[rank].to(device)
                dist.all_reduce(t, op=op)
                expect_equal(t, reference(op, alls).to(t.dtype),
                             f"all_reduce {op} {tag}")
            # broadcast from the last rank
            t = alls[rank].to(device)
            dist.broadcast(t, src=world - 1)
            expect_equal(t, alls[world - 1], f"broadcast {tag}")
            # all_gather into a list and into one tensor
            outs = [torch.empty(shape, dtype=dtype, device=device)
                    for _ in range(world)]
            dist.all_gather(outs, alls[rank].to(device))
            for r in range(world):
                expect_equal(outs[r], alls[r], f"all_gather {tag} part {r}")
            flat = torch.empty((world * shape[0],) + shape[1:], dtype=dtype,
                               device=device)
            dist.all_gather_single(flat, alls[rank].to(device))
            expect_equal(flat, torch.cat(alls), f"all_gather_single {tag}")
            # reduce_scatter over the first dimension
            if dtype != torch.bool:
                big = [torch.cat([a] * world) for a in alls]
                out = torch.empty(shape, dtype=dtype, device=device)
                dist.reduce_scatter_single(out, big[rank].to(device))
                expect_equal(out, reference(dist.ReduceOp.SUM, alls),
                             f"reduce_scatter_single {tag}")
    # reduce, gather, scatter, all_to_all, send/recv on one dtype
    alls = inputs_of_all(world, (6,), torch.float32)
    t = alls[rank].to(device)
    dist.reduce(t, dst=0)
    if rank == 0:
        expect_equal(t, reference(dist.ReduceOp.SUM, alls), "reduce")
    gathered = ([torch.empty(6, device=device) for _ in range(world)]
                if rank == 0 else None)
    dist.gather(alls[rank].to(device), gathered, dst=0)
    if rank == 0:
        for r in range(world):
            expect_equal(gathered[r], alls[r], f"gather part {r}")
    if hasattr(dist, "gather_single"):
        # torch 2.14 and newer: into one flat or stacked tensor of the root
        # (the last rank here); the other ranks pass none.
        for shape in [(world * 6,), (world, 6)]:
            root = world - 1
            flat = (torch.full(shape, -1.0, device=device) if rank == root
                    else None)
            dist.gather_single(alls[rank].to(device), flat, dst=root)
            if rank == root:
                expect_equal(flat, torch.stack(alls).reshape(shape),
                             f"gather_single {shape}")
    out = torch.empty(6, device=device)
    dist.scatter(out, [a.to(device) for a in alls] if rank == 0 else None,
                 src=0)
    expect_equal(out, alls[rank], "scatter")
    # all_to_all_single, even and uneven splits
    x = torch.arange(4 * world, dtype=torch.float32) + 100 * rank
    y = torch.empty_like(x, device=device)
    dist.all_to_all_single(y, x.to(device))
    expected = torch.cat([(torch.arange(4 * world, dtype=torch.float32)
                           + 100 * r)[4 * rank:4 * rank + 4]
                          for r in range(world)])
    expect_equal(y, expected, "all_to_all_single")
    send_splits = [r + 1 for r in range(world)]  # rank sends r+1 rows to r
    rows = sum(send_splits)
    x = torch.arange(rows * 2, dtype=torch.float32).view(rows, 2) + 100 * rank
    recv_splits = [rank + 1] * world
    y = torch.empty(sum(recv_splits), 2, device=device)
    dist.all_to_all_single(y, x.to(device), recv_splits, send_splits)
    start = sum(send_splits[:rank])
    expected = torch.cat([(torch.arange(rows * 2, dtype=torch.float32)
                           .view(rows, 2) + 100 * r)[start:start + rank + 1]
                          for r in range(world)])
    expect_equal(y, expected, "all_to_all_single uneven")
    # all_to_all, the list form: rank r sends rank q a (q+1, r+1) block, in
    # float and complex
    for dtype in (torch.float32, torch.complex64):
        def block(src, dst):
            base = torch.arange((dst + 1) * (src + 1)).view(dst + 1, src + 1)
            return (base + 1000 * src + 100 * dst).to(dtype)
        sent = [block(rank, q).to(device) for q in range(world)]
        received = [torch.empty((rank + 1, q + 1), dtype=dtype, device=device)
                    for q in range(world)]
        dist.all_to_all(received, sent)
        for q in range(world):
            expect_equal(received[q], block(q, rank),
                         f"all_to_all {dtype} from {q}")
    # send / recv around the ring
    peer_next, peer_prev = (rank + 1) % world, (rank - 1) % world
    if rank % 2 == 0:
        dist.send(alls[rank].to(device), dst=peer_next)
        got = torch.empty(6, device=device)
        dist.recv(got, src=peer_prev)
    else:
        got = torch.empty(6, device=device)
        dist.recv(got, src=peer_prev)
        dist.send(alls[rank].to(device), dst=peer_next)
    expect_equal(got, alls[peer_prev], "send/recv")
    # non-contiguous tensors
    base = rank_input(rank, (4, 6), torch.float32)
    t = base.to(device).t()
    assert not t.is_contiguous()
    dist.all_reduce(t)
    expect_equal(t, sum(rank_input(r, (4, 6), torch.float32)
                        for r in range(world)).t(), "all_reduce non-contiguous")
    t = base.to(device)[:, ::2]
    dist.broadcast(t, src=0)
    expect_equal(t, rank_input(0, (4, 6), torch.float32)[:, ::2],
                 "broadcast non-contiguous")
    # async_op, Work.wait and the future's value on the device
    t = alls[rank].to(device)
    work = dist.all_reduce(t, async_op=True)
    fut = work.get_future()
    work.wait()
    expect_equal(t, reference(dist.ReduceOp.SUM, alls), "async all_reduce")
    value = fut.wait()
    assert value[0].device.type == device, value[0].device
    assert work.is_completed() or not work.is_completed()  # either is legal
    # coalesced all_reduce and all_gather
    a = [rank_input(rank, (5,), torch.float32).to(device) for _ in range(3)]
    with dist._coalescing_manager(device=torch.device(device)):
        for tensor in a:
            dist.all_reduce(tensor)
    for tensor in a:
        expect_equal(tensor, sum(rank_input(r, (5,), torch.float32)
                                 for r in range(world)), "coalesced all_reduce")
    outs = [torch.empty(5 * world, device=device) for _ in range(2)]
    with dist._coalescing_manager(device=torch.device(device)):
        for o in outs:
            dist.all_gather_single(o, rank_input(rank, (5,), torch.float32)
                                   .to(device))
    for o in outs:
        expect_equal(o, torch.cat([rank_input(r, (5,), torch.float32)
                                   for r in range(world)]),
                     "coalesced all_gather_single")
    outs = [torch.empty(5, device=device) for _ in range(2)]
    with dist._coalescing_manager():
        for o in outs:
            dist.reduce_scatter_single(
                o, torch.cat([rank_input(rank, (5,), torch.float32)] * world)
                .to(device))
    for o in outs:
        expect_equal(o, sum(rank_input(r, (5,), torch.float32)
                            for r in range(world)),
                     "coalesced reduce_scatter_single")
    # PREMUL_SUM, as FSDP2 uses it
    factor = 0.25
    out = torch.empty(6, device=device)
    big = torch.cat([alls[rank]] * world).to(device)
    dist.reduce_scatter_single(out, big,
                               op=dist._make_nccl_premul_sum(factor))
    expect_equal(out, reference(dist.ReduceOp.SUM, alls) * factor,
                 "reduce_scatter PREMUL_SUM")
    # object collectives
    objects = [None] * world
    dist.all_gather_object(objects, {"rank": rank})
    assert objects == [{"rank": r} for r in range(world)], objects
    box = [f"from {rank}"]
    dist.broadcast_object_list(box, src=world - 1)
    assert box == [f"from {world - 1}"], box
    gathered = [None] * world if rank == 0 else None
    dist.gather_object(rank * 10, gathered, dst=0)
    if rank == 0:
        assert gathered == [r * 10 for r in range(world)], gathered
    received = [None]
    dist.scatter_object_list(received, [f"to {r}" for r in range(world)]
                             if rank == 0 else None, src=0)
    assert received == [f"to {rank}"], received
    # subgroups: every rank alone, and all ranks in reverse order
    for r in range(world):
        alone = dist.new_group([r])
        if r == rank:
            t = torch.ones(3, device=device)
            dist.all_reduce(t, group=alone)
            expect_equal(t, torch.ones(3), "all_reduce in a group of one")
    everyone = dist.new_group(list(reversed(range(world))))
    t = torch.full((3,), float(rank + 1), device=device)
    dist.all_reduce(t, group=everyone)
    expect_equal(t, torch.full((3,), float(sum(range(1, world + 1)))),
                 "all_reduce in a new group")
    dist.barrier()


def scenario_stream_order(rank: int, world: int, device: str) -> None:
    mod = getattr(torch, device)
    # The collective sees work queued before it on the current stream, and
    # work after Work.wait() sees the collective's result.
    side = mod.Stream()
    with mod.stream(side):
        mod._sleep(50)
        t = torch.full((1 << 16,), float(rank + 1), device=device)
        t.mul_(2)
        work = dist.all_reduce(t, async_op=True)
        work.wait()
        t.add_(1)
    side.synchronize()
    expect_equal(t, torch.full((1 << 16,), 2.0 * sum(range(1, world + 1)) + 1),
                 "stream order")


def scenario_functional(rank: int, world: int, device: str) -> None:
    import torch.distributed._functional_collectives as funcol
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor import Replicate, Shard, distribute_tensor

    group = dist.group.WORLD
    x = rank_input(rank, (4, 3), torch.float32)
    alls = [rank_input(r, (4, 3), torch.float32) for r in range(world)]
    y = funcol.all_reduce(x.to(device), "sum", group)
    expect_equal(y, sum(alls), "funcol all_reduce")
    y = funcol.all_gather_tensor(x.to(device), 0, group)
    expect_equal(y, torch.cat(alls), "funcol all_gather_tensor")
    y = funcol.reduce_scatter_tensor(torch.cat([x] * world).to(device), "sum",
                                     0, group)
    expect_equal(y, sum(alls), "funcol reduce_scatter_tensor")
    y = funcol.all_to_all_single(x.to(device), None, None, group)
    expect_equal(y, torch.cat([a[4 // world * rank:4 // world * (rank + 1)]
                               for a in alls]), "funcol all_to_all_single")

    mesh = init_device_mesh(device, (world,))
    full = torch.arange(24, dtype=torch.float32).view(6, 4)
    dt = distribute_tensor(full.to(device), mesh, [Shard(0)])
    assert dt.to_local().shape == (6 // world, 4)
    expect_equal(dt.full_tensor(), full, "DTensor.full_tensor")
    expect_equal(dt.redistribute(mesh, [Replicate()]).to_local(), full,
                 "DTensor redistribute")
    expect_equal((dt * 2).sum().full_tensor(), full.sum() * 2, "DTensor sum")


def scenario_dtensor_random(rank: int, world: int, device: str) -> None:
    # DTensor's random operators take the device generator's state as a
    # Philox seed and offset (Note [Device generator state]).
    import torch.distributed.tensor as dtensor
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor import Replicate, Shard, distribute_tensor

    mesh = init_device_mesh(device, (world,))
    assert dtensor._random.is_rng_supported_mesh(mesh)
    torch.manual_seed(5)
    sharded = dtensor.rand((4 * world, 3), device_mesh=mesh,
                           placements=[Shard(0)])
    full = sharded.full_tensor().cpu()
    parts = full.chunk(world)
    assert not torch.equal(parts[0], parts[1]), "shards drew the same numbers"
    replicated = dtensor.rand((4, 3), device_mesh=mesh,
                              placements=[Replicate()]).to_local().cpu()
    seen = [None] * world
    dist.all_gather_object(seen, (full, replicated))
    for other_full, other_replicated in seen:
        expect_equal(other_full, full, "sharded rand on every rank")
        expect_equal(other_replicated, replicated, "replicated rand")
    x = distribute_tensor(torch.ones(8, 4, device=device), mesh, [Shard(0)])
    kept = torch.nn.functional.dropout(x, 0.5).full_tensor().cpu()
    assert set(kept.unique().tolist()) <= {0.0, 2.0}, kept.unique()


def _mlp(seed: int) -> torch.nn.Module:
    torch.manual_seed(seed)
    return torch.nn.Sequential(
        torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 4))


def _batch(step: int, world: int) -> tuple[torch.Tensor, torch.Tensor]:
    gen = torch.Generator().manual_seed(1000 + step)
    return (torch.randn(4 * world, 8, generator=gen),
            torch.randn(4 * world, 4, generator=gen))


def _reference_training(steps: int, world: int) -> torch.nn.Module:
    # One process on CPU over the whole batch: what the ranks together do.
    model = _mlp(0)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(steps):
        x, y = _batch(step, world)
        opt.zero_grad()
        torch.nn.functional.mse_loss(model(x), y).backward()
        opt.step()
    return model


def _train_and_compare(model, rank: int, world: int, device: str,
                       full_parameters, what: str) -> None:
    # Three SGD steps, each rank on its part of the batch; the parameters
    # must match one process training on CPU over the whole batch.
    steps = 3
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(steps):
        x, y = _batch(step, world)
        part = slice(4 * rank, 4 * rank + 4)
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(model(x[part].to(device)),
                                            y[part].to(device))
        loss.backward()
        opt.step()
    reference = _reference_training(steps, world)
    for (name, p), q in zip(full_parameters(), reference.parameters()):
        expect_equal(p.detach(), q.detach(), f"{what} parameter {name}")


def scenario_ddp(rank: int, world: int, device: str) -> None:
    from torch.nn.parallel import DistributedDataParallel

    model = DistributedDataParallel(_mlp(0).to(device))
    _train_and_compare(model, rank, world, device,
                       model.module.named_parameters, "DDP")


def scenario_fsdp2(rank: int, world: int, device: str) -> None:
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import fully_shard

    mesh = init_device_mesh(device, (world,))
    model = _mlp(0).to(device)
    for layer in (model[0], model[2]):
        fully_shard(layer, mesh=mesh)
    fully_shard(model, mesh=mesh)
    _train_and_compare(
        model, rank, world, device,
        lambda: ((n, p.full_tensor()) for n, p in model.named_parameters()),
        "FSDP2")


def scenario_ddp_without_workaround(rank: int, world: int, device: str) -> None:
    try:
        scenario_ddp(rank, world, device)
    except RuntimeError as error:
        assert "Could not find backend type" in str(error), error
        print("DDP fails without the workaround")
        return
    raise AssertionError("DDP works without the workaround")


def scenario_mismatch(rank: int, world: int, device: str) -> None:
    # Ranks disagree on the size: no data moves, and the failing collective
    # itself fails its stream, so the next synchronization raises with the
    # ranks' calls (nothing reads the unreduced tensor); the group stays
    # broken.
    t = torch.ones(4 + rank * 1000, device=device)
    start = time.monotonic()
    dist.all_reduce(t)
    try:
        t.cpu()
    except RuntimeError as error:
        print(f"raised after {time.monotonic() - start:.1f}s: {error}")
        assert "mismatched collectives" in str(error), error
        assert "rank 0 all_reduce of 4 elements" in str(error), error
        # The next collective raises at its call once the group saw the
        # failure, else it fails on its stream too.
        try:
            dist.all_reduce(t)
            t.cpu()
        except RuntimeError:
            return
        raise AssertionError("the broken group accepted another collective")
    raise AssertionError("mismatched sizes did not raise")


def scenario_blocking_wait(rank: int, world: int, device: str) -> None:
    # <PREFIX>_DIST_BLOCKING_WAIT=1: Work.wait() waits on the host and
    # raises the collective's own error there.
    t = torch.ones(4 + rank * 1000, device=device)
    work = dist.all_reduce(t, async_op=True)
    try:
        work.wait()
    except dist.DistBackendError as error:
        print(f"raised after wait: {error}")
        assert "mismatched collectives" in str(error), error
        return
    raise AssertionError("wait() did not raise")


def scenario_dead_peer(rank: int, world: int, device: str) -> None:
    dist.barrier()
    if rank == world - 1:
        os._exit(0)  # dies without a word to its peers
    t = torch.ones(4, device=device)
    start = time.monotonic()
    dist.all_reduce(t)
    try:
        # The survivor's synchronization raises the failed all_reduce: the
        # tensor it left unreduced is never read as if reduced.
        getattr(torch, device).synchronize()
    except RuntimeError as error:
        elapsed = time.monotonic() - start
        print(f"raised after {elapsed:.1f}s: {error}")
        assert "all_reduce" in str(error), error
        assert elapsed < 5 + 5, elapsed  # the timeout, and some slack
        # The group stays broken: every later call raises.
        try:
            dist.all_reduce(t)
            t.cpu()
        except RuntimeError:
            os._exit(0)  # skip the process group's teardown: a peer is gone
        raise AssertionError("the broken group accepted another collective")
    raise AssertionError("a dead peer did not raise")


def scenario_init_forms(rank: int, world: int, device: str) -> None:
    # The explicit forms name the device's backend.
    name = f"{device}ccl"
    assert dist.Backend.default_device_backend_map[device] == name
    t = torch.full((2,), float(rank), device=device)
    dist.all_reduce(t)
    expect_equal(t, torch.full((2,), float(sum(range(world)))), "all_reduce")
    c = torch.full((2,), float(rank))
    dist.all_reduce(c)  # CPU tensors take Gloo
    expect_equal(c, torch.full((2,), float(sum(range(world)))), "cpu all_reduce")


def scenario_gloo(rank: int, world: int, device: str) -> None:
    # init_process_group("gloo"): device tensors work, as CUDA tensors do
    # (Note [Gloo on device tensors]), and CPU tensors still take Gloo.
    t = torch.full((3,), float(rank + 1), device=device)
    dist.all_reduce(t)
    expect_equal(t, torch.full((3,), float(sum(range(1, world + 1)))), "device all_reduce")
    gathered = [torch.zeros(2, device=device) for _ in range(world)]
    dist.all_gather(gathered, torch.full((2,), float(rank), device=device))
    for r, g in enumerate(gathered):
        assert g.device.type == device
        expect_equal(g, torch.full((2,), float(r)), f"all_gather from rank {r}")
    c = torch.full((2,), float(rank))
    dist.all_reduce(c)
    expect_equal(c, torch.full((2,), float(sum(range(world)))), "cpu all_reduce")
    # No silent mixing: a CPU tensor among the device's is refused.
    try:
        dist.all_gather([torch.zeros(2) for _ in range(world)],
                        torch.zeros(2, device=device))
    except (RuntimeError, ValueError):
        pass
    else:
        raise AssertionError("all_gather mixing CPU and device tensors passed")


def scenario_gloo_without_workaround(rank: int, world: int, device: str) -> None:
    try:
        dist.all_reduce(torch.ones(2, device=device))
    except RuntimeError as error:
        assert "No backend type associated with device type" in str(error), error
        print("gloo fails on the device without the workaround")
    else:
        raise AssertionError("the Gloo workaround is no longer needed")
    # The failure is raised before any message is sent: without a collective
    # that completes, one rank can exit while its peer is still connecting.
    dist.barrier()


def main() -> None:
    if len(sys.argv) == 1:  # under torchrun
        scenario = "ddp_torchrun"
        rank = int(os.environ["RANK"])
        world = int(os.environ["WORLD_SIZE"])
        device = os.environ["ACCGEN_TEST_DEVICE"]
        init_method = "env://"
    else:
        scenario, rank, world, store, device = sys.argv[1:6]
        rank, world = int(rank), int(world)
        init_method = f"file://{store}"
    mod = getattr(torch, device)
    mod.set_device(rank % mod.device_count())
    backend = None
    if scenario == "init_forms":
        backend = f"cpu:gloo,{device}:{device}ccl"
    if scenario.startswith("gloo"):
        backend = "gloo"
    if scenario == "gloo_without_workaround":
        # Note [Gloo on device tensors]: undone.
        from torch.distributed import distributed_c10d as c10d

        c10d.BackendConfig.__init__ = c10d.BackendConfig.__init__.__wrapped__
    if scenario == "ddp_without_workaround":
        # Note [The default backend of a group in torch 2.13]: undone.
        from torch.distributed import distributed_c10d as c10d

        c10d._new_process_group_helper = (
            c10d._new_process_group_helper.__wrapped__)
    # The error scenarios wait for the process group's timeout: keep it short.
    timeout = (datetime.timedelta(seconds=5)
               if scenario in ("mismatch", "dead_peer", "blocking_wait")
               else TIMEOUT)
    dist.init_process_group(backend, init_method=init_method, rank=rank,
                            world_size=world, timeout=timeout)
    if scenario == "ddp_torchrun":
        scenario = "ddp"
    globals()[f"scenario_{scenario}"](rank, world, device)
    dist.destroy_process_group()
    print(f"rank {rank}: {scenario} passed")


if __name__ == "__main__":
    main()
