"""torch.distributed on the device against Gloo on CPU, two ranks on loopback.

    python bench/dist_bench.py [--device accel] [--json FILE]

One run starts two rank processes. In each, the default process group is the
device's backend ("<device>ccl", over the collective interface and Gloo
underneath on the emulator) and a second group is torch's Gloo for CPU
tensors. Rank 0 prints:
  - all_reduce (SUM, float32) bus bandwidth over message sizes from 4 KiB
    to 64 MiB, device tensors against CPU tensors, and their ratio. Bus
    bandwidth is size * 2 (n - 1) / n / time, as NCCL's tests report it.
    Each figure is the median of 5 rounds of back-to-back all_reduces of
    about 0.2 s (the device side synchronizes once per round).
  - the time of a DDP training step (an MLP of 4 layers of 1024, batch 64
    per rank), on the device against CPU with Gloo.
Target (docs/distributed.md): device/cpu bandwidth >= 0.90 from 1 MiB up.
"""
import argparse
import datetime
import json
import os
import socket
import statistics
import subprocess
import sys
import time

SIZES = [4 << 10, 64 << 10, 1 << 20, 4 << 20, 16 << 20, 64 << 20]
TARGET = 0.90
ROUNDS = 5


def bandwidth(dist, torch, tensor, group, sync, cpu_group) -> float:
    # Bus bandwidth in GB/s of back-to-back all_reduces of `tensor`.
    world = dist.get_world_size(group)
    nbytes = tensor.numel() * tensor.element_size()
    for _ in range(3):
        dist.all_reduce(tensor, group=group)
    sync()
    # Calibrate the count so that one round takes about 0.2 s.
    start = time.perf_counter()
    dist.all_reduce(tensor, group=group)
    sync()
    once = max(time.perf_counter() - start, 1e-6)
    count = max(3, min(2000, int(0.2 / once)))
    # Every rank must run the same count: take rank 0's.
    agreed = torch.tensor([count])
    dist.broadcast(agreed, 0, group=cpu_group)
    count = int(agreed.item())
    rounds = []
    for _ in range(ROUNDS):
        dist.barrier(group=group)
        start = time.perf_counter()
        for _ in range(count):
            dist.all_reduce(tensor, group=group)
        sync()
        elapsed = (time.perf_counter() - start) / count
        rounds.append(nbytes * 2 * (world - 1) / world / elapsed / 1e9)
    return statistics.median(rounds)


def ddp_step(torch, dist, device, group) -> float:
    from torch.nn.parallel import DistributedDataParallel

    torch.manual_seed(0)
    layers = []
    for _ in range(4):
        layers += [torch.nn.Linear(1024, 1024), torch.nn.ReLU()]
    model = DistributedDataParallel(torch.nn.Sequential(*layers).to(device),
                                    process_group=group)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x = torch.randn(64, 1024, device=device)
    y = torch.randn(64, 1024, device=device)
    mod = getattr(torch, device, None) if device != "cpu" else None

    def step():
        opt.zero_grad()
        torch.nn.functional.mse_loss(model(x), y).backward()
        opt.step()

    for _ in range(3):
        step()
    times = []
    for _ in range(ROUNDS):
        dist.barrier(group=group)
        start = time.perf_counter()
        for _ in range(10):
            step()
        if mod is not None:
            mod.synchronize()
        times.append((time.perf_counter() - start) / 10 * 1e3)
    return statistics.median(times)


def rank_main(rank: int, port: int, device: str, out: str | None) -> None:
    import torch
    import torch.distributed as dist

    mod = getattr(torch, device)
    mod.set_device(rank % mod.device_count())
    dist.init_process_group(init_method=f"tcp://127.0.0.1:{port}", rank=rank,
                            world_size=2,
                            timeout=datetime.timedelta(seconds=120))
    cpu_group = dist.new_group(backend="gloo")
    rows = []
    for size in SIZES:
        n = size // 4
        dev_bw = bandwidth(dist, torch, torch.ones(n, device=device), None,
                           mod.synchronize, cpu_group)
        cpu_bw = bandwidth(dist, torch, torch.ones(n), cpu_group, lambda: None,
                           cpu_group)
        rows.append({"bytes": size, "device_GBps": dev_bw, "cpu_GBps": cpu_bw,
                     "ratio": dev_bw / cpu_bw})
    ddp_device = ddp_step(torch, dist, device, None)
    ddp_cpu = ddp_step(torch, dist, "cpu", cpu_group)
    dist.destroy_process_group()
    if rank != 0:
        return
    print(f"all_reduce bus bandwidth, 2 ranks, float32 SUM "
          f"(target: device/cpu >= {TARGET:.2f} from 1 MiB)")
    print(f"{'size':>8} {'device GB/s':>12} {'cpu GB/s':>10} {'ratio':>7}")
    for row in rows:
        size = row["bytes"]
        label = f"{size >> 20} MiB" if size >= 1 << 20 else f"{size >> 10} KiB"
        mark = ""
        if size >= 1 << 20:
            mark = "  ok" if row["ratio"] >= TARGET else "  MISSED"
        print(f"{label:>8} {row['device_GBps']:12.3f} {row['cpu_GBps']:10.3f} "
              f"{row['ratio']:7.2f}{mark}")
    print(f"DDP training step (MLP 4x1024, batch 64 per rank): "
          f"device {ddp_device:.1f} ms, cpu {ddp_cpu:.1f} ms, "
          f"ratio {ddp_device / ddp_cpu:.2f}")
    if out:
        with open(out, "w", encoding="utf-8") as f:
            json.dump({"all_reduce": rows, "ddp_ms": {"device": ddp_device,
                                                       "cpu": ddp_cpu}}, f,
                      indent=2)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="accel")
    parser.add_argument("--json")
    parser.add_argument("--rank", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.rank is not None:
        rank_main(args.rank, args.port, args.device, args.json)
        return
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    procs = [subprocess.Popen([sys.executable, __file__, "--device",
                               args.device, "--rank", str(rank), "--port",
                               str(port)] +
                              (["--json", args.json] if args.json else []),
                              env=dict(os.environ))
             for rank in range(2)]
    codes = [p.wait(timeout=900) for p in procs]
    sys.exit(max(codes))


if __name__ == "__main__":
    main()
