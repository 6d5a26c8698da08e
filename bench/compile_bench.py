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
which compiles it, with Inductor's caches off (the first compile of a
process).
Targets (docs/compile.md): device compiled <= device eager, and device
compiled within 10% of CPU compiled.
"""
import copy
import pathlib
import statistics
import sys
import time

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


def first_call(fn, sync):
    start = time.perf_counter()
    fn()
    sync()
    return time.perf_counter() - start


def main():
    args = common.parse_args(__doc__)
    device = args.device
    mod = common.device_module(device)
    torch._inductor.config.fx_graph_cache = False
    torch._inductor.config.autotune_local_cache = False

    rows = []
    print(f"{'model':18} {'cpu eager':>9} {'cpu comp':>9} {'dev eager':>9} "
          f"{'dev comp':>9} {'comp/eager dev':>14} {'dev/cpu comp':>12} "
          f"{'1st cpu s':>9} {'1st dev s':>9}   (ms per forward)")
    for name, model, inputs in cases():
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
        first_cpu = first_call(*variants[1])
        first_dev = first_call(*variants[3])
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
    print("\ntargets: comp/eager dev <= 1.00, dev/cpu comp <= 1.10")
    common.finish(rows, args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
