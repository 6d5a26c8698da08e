"""Per-operator time on the example backend's device against the CPU.

    python bench/ops_bench.py [--device accel] [--repeat 7] [--json FILE]

For each operator (add, mul, sum, mm, softmax) and size (small: 1k elements
per input, large: 16M; mm at sizes of comparable work, 32x32 and
1024x1024), one run measures the same operator these ways:

  cpu       on CPU tensors;
  device    on device tensors, as the backend registers it (emulated: the
            CPU kernel runs on the device memory, no copies);
  fallback  on device tensors, forced through a CPU fallback for the
            measurement: its PrivateUse1 kernel is replaced by one that
            copies the arguments to the CPU, runs the CPU kernel and copies
            the results back (what at::native::cpu_fallback does, called
            from Python);
  out=      cpu and device again into preallocated results: the functional
            form also measures allocation, where the device's caching
            allocator and the CPU's malloc (which returns large blocks to
            the system, so every new result page-faults) differ most.

Each figure is the median over `repeat` timings of a loop sized to take
about 0.2 s, with the device synchronized before the clock stops. The
timings of one operator and size run in rounds, each timing cpu, device,
cpu out= and device out= once in turn (the fallback alternates with the
device in rounds of its own), and each ratio is the median of the per-round
ratios: load from elsewhere on the machine then moves both sides of a ratio
alike. Ratios are device/cpu and fallback/device. Targets
(docs/operators.md): large device/cpu <= 1.10, small device/cpu <= 2,
large fallback/device >= 3.
The emulator's environment (ACCGEN_EMU_PROTECT, ACCGEN_EMU_SPIN_US) applies.
"""
import argparse
import json
import os
import statistics
import sys
import time

import torch

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


def loop_count(fn, sync, budget):
    """How many calls of `fn` take about `budget` seconds."""
    fn()
    sync()
    start = time.perf_counter()
    fn()
    sync()
    once = max(time.perf_counter() - start, 1e-7)
    return max(1, min(10000, int(budget / once)))


def timeit(cases, repeat, budget=0.2):
    """Per-call seconds of each (fn, sync) in `cases`: `repeat` rounds, each
    timing every case once in turn, so that the machine's load moves all of
    them alike. Returns the per-case samples."""
    loops = [loop_count(fn, sync, budget) for fn, sync in cases]
    samples = [[] for _ in cases]
    for _ in range(repeat):
        for (fn, sync), n, out in zip(cases, loops, samples):
            start = time.perf_counter()
            for _ in range(n):
                fn()
            sync()
            out.append((time.perf_counter() - start) / n)
    return samples


def ratio(numerator, denominator):
    """Median of the per-round ratios of two sample lists from one timeit."""
    return statistics.median(a / b for a, b in zip(numerator, denominator))


class ForcedFallback:
    """Replaces the PrivateUse1 kernels of `ops` by a copy-to-CPU fallback
    while active."""

    def __init__(self, ops, device):
        self.ops = ops
        self.device = device

    def __enter__(self):
        import warnings
        self.lib = torch.library.Library("aten", "IMPL")
        device = self.device

        def to(x, where):
            if isinstance(x, torch.Tensor):
                return x.to(where)
            if isinstance(x, (list, tuple)):
                return type(x)(to(v, where) for v in x)
            return x

        for name in self.ops:
            packet, _, overload = name.partition(".")
            op = getattr(getattr(torch.ops.aten, packet), overload or "default")

            def kernel(*args, _op=op, **kwargs):
                return to(_op(*to(args, "cpu"), **to(kwargs, "cpu")), device)

            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                self.lib.impl(name, kernel, "PrivateUse1")
        return self

    def __exit__(self, *exc):
        self.lib._destroy()
        return False


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--device", default=os.environ.get("ACCGEN_TEST_DEVICE", "accel"))
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--json", help="also write the figures to this file")
    parser.add_argument("--threads", type=int, default=0,
                        help="torch.set_num_threads (0: leave as is)")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    device = args.device
    try:
        __import__("torch_" + device)
    except ImportError:
        pass
    mod = getattr(torch, device)
    sync_dev = mod.synchronize

    def sync_cpu():
        pass

    rows = []
    print(f"{'op':8} {'size':5} {'elements':>9}  {'cpu':>9} {'device':>9} "
          f"{'fallback':>9}  {'dev/cpu':>7} {'fb/dev':>6}   "
          f"{'cpu out=':>9} {'dev out=':>9} {'dev/cpu':>7}   (us)")
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
            s_cpu, s_dev, s_cpu_out, s_dev_out = timeit(
                [(lambda: fn(*cpu_args), sync_cpu),
                 (lambda: fn(*dev_args), sync_dev),
                 (lambda: out_fn(*cpu_args, out=cpu_out), sync_cpu),
                 (lambda: out_fn(*dev_args, out=dev_out), sync_dev)],
                args.repeat)
            # The forced fallback replaces the device kernels while active:
            # its rounds alternate with the device's own on fresh kernels.
            s_fb, s_dev2 = [], []
            for _ in range(args.repeat):
                with ForcedFallback(ATEN[name], device):
                    s_fb += timeit([(lambda: fn(*dev_args), sync_dev)], 1)[0]
                s_dev2 += timeit([(lambda: fn(*dev_args), sync_dev)], 1)[0]
            med = statistics.median
            elems = sum(a.numel() for a in cpu_args)
            rows.append({"op": name, "size": size, "elements": elems,
                         "cpu_us": med(s_cpu) * 1e6,
                         "device_us": med(s_dev) * 1e6,
                         "fallback_us": med(s_fb) * 1e6,
                         "cpu_out_us": med(s_cpu_out) * 1e6,
                         "device_out_us": med(s_dev_out) * 1e6,
                         "device_over_cpu": ratio(s_dev, s_cpu),
                         "fallback_over_device": ratio(s_fb, s_dev2),
                         "out_device_over_cpu": ratio(s_dev_out, s_cpu_out)})
            r = rows[-1]
            print(f"{name:8} {size:5} {elems:>9}  {r['cpu_us']:9.1f} "
                  f"{r['device_us']:9.1f} {r['fallback_us']:9.1f}  "
                  f"{r['device_over_cpu']:7.2f} {r['fallback_over_device']:6.2f}"
                  f"   {r['cpu_out_us']:9.1f} {r['device_out_us']:9.1f} "
                  f"{r['out_device_over_cpu']:7.2f}", flush=True)
    print()
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, "
          f"{os.cpu_count()} cores, load {os.getloadavg()[0]:.2f}")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(rows, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
