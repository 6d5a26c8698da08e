"""Graph replay against eager execution on the device, for a small MLP's
training step.

    python bench/graph_bench.py [--device accel] [--repeat 7] [--json FILE]

One training step (forward, MSE loss, backward, Adam with capturable=True)
of an MLP at two sizes, timed three ways from the same weights and batch:
on the CPU, eagerly on the device, and as a replay of a
torch.accelerator.Graph that captured the step on the device. Each figure is
the median over `repeat` rounds (common.timeit: the three take turns in each
round, so that load from elsewhere moves them alike); the ratios are the
medians of the per-round ratios. A small step is launch-bound: replay runs
its operators as one unit of device work, with no Python, dispatcher or
launch cost per operator. Target (docs/guide/streams-events.md): replay
at most half the eager step time at the small size.
"""
import pathlib
import statistics
import sys

import torch
from torch import nn

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import common  # noqa: E402

SIZES = {"small": (8, 64, 3), "large": (64, 512, 3)}  # batch, width, layers
TARGET_SMALL = 0.5


def mlp(width, layers):
    torch.manual_seed(0)
    body = []
    for _ in range(layers):
        body += [nn.Linear(width, width), nn.ReLU()]
    return nn.Sequential(*body, nn.Linear(width, 1))


def eager_step(device, batch, width, layers):
    model = mlp(width, layers).to(device)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3,
                           capturable=device != "cpu")
    x = torch.randn(batch, width).to(device)
    t = torch.randn(batch, 1).to(device)

    def step():
        opt.zero_grad(set_to_none=True)
        nn.functional.mse_loss(model(x), t).backward()
        opt.step()

    return step


def graph_step(device, mod, batch, width, layers):
    step = eager_step(device, batch, width, layers)
    side = torch.Stream(device=device)
    side.wait_stream(torch.accelerator.current_stream())
    with side:
        for _ in range(2):  # warm-up, as for CUDA graphs
            step()
        graph = torch.accelerator.Graph()
        with graph:
            step()
    torch.accelerator.current_stream().wait_stream(side)
    mod.synchronize()
    return graph.replay


def main():
    args = common.parse_args(__doc__)
    device = args.device
    mod = common.device_module(device)
    rows = []
    print(f"{'size':5} {'cpu ms':>8} {'eager ms':>9} {'replay ms':>9}  "
          f"{'replay/eager':>12} {'replay/cpu':>10}")
    for size, (batch, width, layers) in SIZES.items():
        cpu = eager_step("cpu", batch, width, layers)
        eager = eager_step(device, batch, width, layers)
        replay = graph_step(device, mod, batch, width, layers)
        s_cpu, s_eager, s_replay = common.timeit(
            [(cpu, common.sync_cpu), (eager, mod.synchronize),
             (replay, mod.synchronize)], args.repeat, budget=0.3)
        row = {"size": size, "batch": batch, "width": width, "layers": layers,
               "cpu_ms": statistics.median(s_cpu) * 1e3,
               "eager_ms": statistics.median(s_eager) * 1e3,
               "replay_ms": statistics.median(s_replay) * 1e3,
               "replay_over_eager": common.ratio(s_replay, s_eager),
               "replay_over_cpu": common.ratio(s_replay, s_cpu)}
        rows.append(row)
        print(f"{size:5} {row['cpu_ms']:8.3f} {row['eager_ms']:9.3f} "
              f"{row['replay_ms']:9.3f}  {row['replay_over_eager']:12.2f} "
              f"{row['replay_over_cpu']:10.2f}", flush=True)
    print(f"\ntarget: replay/eager <= {TARGET_SMALL} at the small size")
    common.finish(rows, args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
