"""Training-step time of real models on the device against CPU eager.

    python bench/model_bench.py [--device accel] [--repeat 7] [--json FILE]

For the CNN and the transformer encoder of bench/models.py, at a small and
a larger size, one run times a full training step (forward, loss, backward,
optimizer step) on CPU tensors and on device tensors, from the same weights
and batch. The device runs whatever the backend registers: its spec's
operators, the hook operators (convolution, attention) and its global
fallback for the rest. Each figure is the median over `repeat` rounds; in
each round both sides take about 0.3 s of steps in turn (common.timeit), so
that load from elsewhere moves both alike, and the ratio is the median of
the per-round ratios.
Target (docs/operators.md, "Figures"): device/cpu <= 1.10 at both sizes.
The emulator's environment (ACCGEN_EMU_PROTECT, ...) applies.
"""
import pathlib
import statistics
import sys

import torch

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import common  # noqa: E402
import models  # noqa: E402

TARGETS = {"small": 1.10, "large": 1.10}


def trainer(case, model, batch, device):
    model = model.to(device)
    case.prepare(model)
    optimizer = case.optimizer(model)
    inputs = tuple(t.to(device) for t in batch[0])
    target = batch[1].to(device)

    def step():
        optimizer.zero_grad()
        loss = case.loss(model(*inputs), target)
        loss.backward()
        optimizer.step()

    return step


def main():
    args = common.parse_args(__doc__)
    device = args.device
    mod = common.device_module(device)

    rows = []
    print(f"{'model':12} {'size':5} {'params':>9}  {'cpu ms':>8} "
          f"{'device ms':>9}  {'dev/cpu':>7} {'target':>6}")
    for name in ("cnn", "transformer"):
        for size in ("small", "large"):
            torch.manual_seed(0)
            case = models.MODELS[name](size)
            twin = models.MODELS[name](size).model
            twin.load_state_dict(case.model.state_dict())
            batch = case.batch()
            cpu_step = trainer(case, case.model, batch, "cpu")
            dev_step = trainer(case, twin, batch, device)
            s_cpu, s_dev = common.timeit(
                [(cpu_step, common.sync_cpu), (dev_step, mod.synchronize)],
                args.repeat, budget=0.3)
            ratio = common.ratio(s_dev, s_cpu)
            params = sum(p.numel() for p in case.model.parameters())
            rows.append({"model": name, "size": size, "params": params,
                         "cpu_ms": statistics.median(s_cpu) * 1e3,
                         "device_ms": statistics.median(s_dev) * 1e3,
                         "device_over_cpu": ratio,
                         "target": TARGETS[size]})
            r = rows[-1]
            print(f"{name:12} {size:5} {params:>9}  {r['cpu_ms']:8.2f} "
                  f"{r['device_ms']:9.2f}  {ratio:7.2f} {TARGETS[size]:6.2f}",
                  flush=True)
    common.finish(rows, args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
