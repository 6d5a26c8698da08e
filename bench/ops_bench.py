"""Per-operator time on the example backend's device against the CPU.

    python bench/ops_bench.py [--device accel] [--repeat 7] [--json FILE]

For each operator (add, mul, sum, mm, softmax) and size (small: 1k elements
per input, large: 16M; mm at sizes of comparable work, 32x32 and
1024x1024), one run measures the same operator these ways:

  cpu       on CPU tensors;
  device    on device tensors, as the backend registers it (emulated: the
            CPU kernel runs on the device memory, no copies);
  emulate   on device tensors, routed through the emulate fallback
            (`fallback: emulate`, the default of `accgen init`): what an
            operator the spec does not list costs;
  cpu-fb    on device tensors, routed through the CPU fallback
            (at::native::cpu_fallback: copies the arguments to the CPU, runs
            the CPU kernel and copies the results back);
  out=      cpu and device again into preallocated results: the functional
            form also measures allocation, where the device's caching
            allocator and the CPU's malloc (which returns large blocks to
            the system, so every new result page-faults) differ most.

Each figure is the median over `repeat` timings of a loop sized to take
about 0.2 s, with the device synchronized before the clock stops. The
timings of one operator and size run in rounds, each timing cpu, device,
cpu out= and device out= once in turn (each fallback alternates with the
CPU in rounds of its own), and each ratio is the median of the per-round
ratios: load from elsewhere on the machine then moves both sides of a ratio
alike. Ratios are device/cpu, emulate/cpu and cpu-fb/emulate. Targets
(docs/operators.md, "Figures"): large device/cpu <= 1.10, small
device/cpu <= 2 (for add, mul and sum <= 1.5); small emulate/cpu <= 2,
large cpu-fb/emulate >= 3.
The emulator's environment (ACCGEN_EMU_PROTECT, ACCGEN_EMU_SPIN_US) applies.
"""
import os
import statistics
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402

CASES = {
    # name: (functional, out= form, small arg shapes, large arg shapes)
    "add": (lambda a, b: a + b, lambda a, b, out: torch.add(a, b, out=out),
            ((1024,), (1024,)), ((16 << 20,), (16 << 20,))),
    "mul": (lambda a, b: a * b, lambda a, b, out: torch.mul(a, b, out=out),
            ((1024,), (1024,)), ((16 << 20,), (16 << 20,))),
    "sum": (lambda a: a.sum(), lambda a, out: torch.sum(a, 0, out=out),
            ((1024,),), ((16 << 20,),)),
    "mm": (torch.mm, lambda a, b, out: torch.mm(a, b, out=out),
           ((32, 32), (32, 32)), ((1024, 1024), (1024, 1024))),
    "softmax": (lambda a: torch.softmax(a, -1),
                lambda a, out: torch.ops.aten._softmax.out(a, -1, False, out=out),
                ((8, 128),), ((4096, 4096),)),
}
# The aten operators each case reaches on the device (for the fallback).
ATEN = {"add": ["add.Tensor"], "mul": ["mul.Tensor"],
        "sum": ["sum.dim_IntList"], "mm": ["mm"], "softmax": ["_softmax"]}


class Route:
    """Routes the operators `ops` through the backend's `fallback` ("emulate"
    or "cpu") in place of their kernels while active (_C._FallbackRoute)."""

    def __init__(self, mod, ops, fallback):
        self.mod, self.ops, self.fallback = mod, ops, fallback

    def __enter__(self):
        import warnings
        with warnings.catch_warnings():
            # torch warns that the route overrides the registered kernel.
            warnings.simplefilter("ignore")
            self.route = self.mod._C._FallbackRoute(self.ops, self.fallback)
        return self

    def __exit__(self, *exc):
        self.route.close()
        return False


def main():
    args = common.parse_args(__doc__)
    device = args.device
    mod = common.device_module(device)
    sync_dev = mod.synchronize

    rows = []
    print(f"{'op':8} {'size':5} {'elements':>9}  {'cpu':>9} {'device':>9} "
          f"{'emulate':>9} {'cpu-fb':>9}  {'dev/cpu':>7} {'emu/cpu':>7} "
          f"{'cfb/emu':>7}   {'cpu out=':>9} {'dev out=':>9} {'dev/cpu':>7}"
          f"   (us)")
    for name, (fn, out_fn, small, large) in CASES.items():
        for size, shapes in (("small", small), ("large", large)):
            g = torch.Generator().manual_seed(0)
            cpu_args = [torch.randn(s, generator=g) for s in shapes]
            dev_args = [a.to(device) for a in cpu_args]
            want = fn(*cpu_args)
            torch.testing.assert_close(fn(*dev_args).cpu(), want,
                                       rtol=1e-4, atol=1e-3)
            cpu_out = torch.empty_like(want)
            dev_out = torch.empty_like(want, device=device)
            s_cpu, s_dev, s_cpu_out, s_dev_out = common.timeit(
                [(lambda: fn(*cpu_args), common.sync_cpu),
                 (lambda: fn(*dev_args), sync_dev),
                 (lambda: out_fn(*cpu_args, out=cpu_out), common.sync_cpu),
                 (lambda: out_fn(*dev_args, out=dev_out), sync_dev)],
                args.repeat)
            # A route replaces the device kernels while active: its rounds
            # alternate with the CPU's.
            s_fb = {"emulate": [], "cpu": []}
            s_cpu2 = {"emulate": [], "cpu": []}
            for _ in range(args.repeat):
                for fallback in s_fb:
                    with Route(mod, ATEN[name], fallback):
                        torch.testing.assert_close(
                            fn(*dev_args).cpu(), want, rtol=1e-4, atol=1e-3)
                        s_fb[fallback] += common.timeit(
                            [(lambda: fn(*dev_args), sync_dev)], 1)[0]
                    s_cpu2[fallback] += common.timeit(
                        [(lambda: fn(*cpu_args), common.sync_cpu)], 1)[0]
            med = statistics.median
            elems = sum(a.numel() for a in cpu_args)
            rows.append({"op": name, "size": size, "elements": elems,
                         "cpu_us": med(s_cpu) * 1e6,
                         "device_us": med(s_dev) * 1e6,
                         "emulate_us": med(s_fb["emulate"]) * 1e6,
                         "cpu_fallback_us": med(s_fb["cpu"]) * 1e6,
                         "cpu_out_us": med(s_cpu_out) * 1e6,
                         "device_out_us": med(s_dev_out) * 1e6,
                         "device_over_cpu": common.ratio(s_dev, s_cpu),
                         "emulate_over_cpu": common.ratio(s_fb["emulate"],
                                                   s_cpu2["emulate"]),
                         "cpu_fallback_over_emulate":
                             common.ratio(s_fb["cpu"], s_cpu2["cpu"])
                             / common.ratio(s_fb["emulate"], s_cpu2["emulate"]),
                         "out_device_over_cpu": common.ratio(s_dev_out, s_cpu_out)})
            r = rows[-1]
            print(f"{name:8} {size:5} {elems:>9}  {r['cpu_us']:9.1f} "
                  f"{r['device_us']:9.1f} {r['emulate_us']:9.1f} "
                  f"{r['cpu_fallback_us']:9.1f}  "
                  f"{r['device_over_cpu']:7.2f} {r['emulate_over_cpu']:7.2f} "
                  f"{r['cpu_fallback_over_emulate']:7.2f}"
                  f"   {r['cpu_out_us']:9.1f} {r['device_out_us']:9.1f} "
                  f"{r['out_device_over_cpu']:7.2f}", flush=True)
    print("\ntargets: dev/cpu large <= 1.10, small <= 2 (add, mul, sum "
          "<= 1.5); emu/cpu small <= 2; cfb/emu large >= 3")
    common.finish(rows, args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
