"""torch.compile on the device against eager and against the CPU.

    python bench/compile_bench.py [--device accel] [--repeat 7] [--json FILE]

For an MLP and the transformer encoder of bench/models.py (its small and
larger sizes), one run times the forward pass in inference mode four ways,
from the same weights and batch: eager on the CPU, compiled on the CPU,
eager on the device and compiled on the device (the default Inductor
backend). Each figure is the median over `repeat` rounds; in each round every
variant takes about 0.3 s of calls in turn (common.timeit), so that load
from elsewhere moves all of them alike, and each ratio is the median of the
per-round ratios. It also records the first call of each compiled variant,
which compiles it, each in a fresh process with Inductor's caches off (the
first compile on a fresh machine).
Targets (docs/compile.md): device compiled <= device eager, and device
compiled within 10% of CPU compiled; for the small transformer within 5%
(docs/operators.md, "Figures").
"""
import copy
import os
import pathlib
import statistics
import subprocess
import sys
import time
import warnings

import torch
from torch import nn

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import common  # noqa: E402
import models  # noqa: E402


class Mlp(nn.Module):
    def __init__(self, width: int, depth: int = 3):
        super().__init__()
        layers = []
        for _ in range(depth):
            layers += [nn.Linear(width, width), nn.GELU(), nn.LayerNorm(width)]
        self.body = nn.Sequential(*layers)

    def forward(self, x):
        return self.body(x)


def cases():
    """(name, model, inputs) on the CPU."""
    for width, rows in ((64, 32), (512, 256)):
        torch.manual_seed(0)
        yield f"mlp {width}", Mlp(width), (torch.randn(rows, width),)
    for size in ("small", "large"):
        torch.manual_seed(0)
        case = models.MODELS["transformer"](size)
        yield f"transformer {size}", case.model, case.batch()[0]


def first_compile(index: int, device: str) -> float:
    """Seconds of the first call of case `index` compiled on `device`, in a
    fresh process with Inductor's caches off."""
    code = f"""
import sys, time, torch
sys.path.insert(0, {str(pathlib.Path(__file__).resolve().parent)!r})
import common, compile_bench
common.device_module({device!r})
name, model, inputs = list(compile_bench.cases())[{index}]
model = model.eval().to({device!r})
inputs = tuple(t.to({device!r}) for t in inputs)
compiled = torch.compile(model)
start = time.perf_counter()
with torch.inference_mode():
    compiled(*inputs)
getattr(torch, {device!r}, torch.cpu).synchronize()
print(time.perf_counter() - start)
"""
    env = dict(os.environ, TORCHINDUCTOR_FORCE_DISABLE_CACHES="1")
    done = subprocess.run([sys.executable, "-W", "ignore", "-c", code], env=env,
                          capture_output=True, text=True, check=True)
    return float(done.stdout.split()[-1])


def main():
    args = common.parse_args(__doc__)
    device = args.device
    mod = common.device_module(device)

    rows = []
    print(f"{'model':18} {'cpu eager':>9} {'cpu comp':>9} {'dev eager':>9} "
          f"{'dev comp':>9} {'comp/eager dev':>14} {'dev/cpu comp':>12} "
          f"{'1st cpu s':>9} {'1st dev s':>9}   (ms per forward)")
    for index, (name, model, inputs) in enumerate(cases()):
        model.eval()
        dev_model = copy.deepcopy(model).to(device)
        dev_inputs = tuple(t.to(device) for t in inputs)
        cpu_compiled = torch.compile(model)
        dev_compiled = torch.compile(dev_model)

        def call(fn, xs):
            def run():
                with torch.inference_mode():
                    fn(*xs)
            return run

        variants = [
            (call(model, inputs), common.sync_cpu),
            (call(cpu_compiled, inputs), common.sync_cpu),
            (call(dev_model, dev_inputs), mod.synchronize),
            (call(dev_compiled, dev_inputs), mod.synchronize),
        ]
        first_cpu = first_compile(index, "cpu")
        first_dev = first_compile(index, device)
        s_cpu, s_cpu_c, s_dev, s_dev_c = common.timeit(variants, args.repeat,
                                                      budget=0.3)
        ms = [statistics.median(s) * 1e3 for s in (s_cpu, s_cpu_c, s_dev, s_dev_c)]
        row = {"model": name, "cpu_eager_ms": ms[0], "cpu_compiled_ms": ms[1],
               "device_eager_ms": ms[2], "device_compiled_ms": ms[3],
               "compiled_over_eager_device": common.ratio(s_dev_c, s_dev),
               "device_over_cpu_compiled": common.ratio(s_dev_c, s_cpu_c),
               "first_compile_cpu_s": first_cpu,
               "first_compile_device_s": first_dev}
        rows.append(row)
        print(f"{name:18} {ms[0]:9.3f} {ms[1]:9.3f} {ms[2]:9.3f} {ms[3]:9.3f} "
              f"{row['compiled_over_eager_device']:14.2f} "
              f"{row['device_over_cpu_compiled']:12.2f} "
              f"{first_cpu:9.1f} {first_dev:9.1f}", flush=True)
        torch._dynamo.reset()
    print("\ntargets: comp/eager dev <= 1.00, dev/cpu comp <= 1.10 "
          "(small transformer <= 1.05)")
    common.finish(rows, args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
