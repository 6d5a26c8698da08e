"""What the device benchmarks share: their command line and the device
module of the backend under test."""
import argparse
import json
import os
import statistics
import time

import torch


def parse_args(doc: str, **extra) -> argparse.Namespace:
    """The benchmarks' options (--device, --repeat, --json, --threads, plus
    `extra`: name -> add_argument keywords); applies --threads."""
    parser = argparse.ArgumentParser(description=doc.split("\n")[0])
    parser.add_argument("--device",
                        default=os.environ.get("ACCGEN_TEST_DEVICE", "accel"))
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--json", help="also write the figures to this file")
    parser.add_argument("--threads", type=int, default=0,
                        help="torch.set_num_threads (0: leave as is)")
    for name, keywords in extra.items():
        parser.add_argument(name, **keywords)
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    return args


def device_module(device: str):
    """torch.<device>, importing its package when autoload did not."""
    try:
        __import__("torch_" + device)
    except ImportError:
        pass
    return getattr(torch, device)


def sync_cpu() -> None:
    """The CPU's synchronize: nothing to wait for."""


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


def finish(rows, args) -> None:
    """Prints the machine's line under a table, and writes `rows` to
    --json when given."""
    print()
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, "
          f"{os.cpu_count()} cores, load {os.getloadavg()[0]:.2f}")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(rows, f, indent=2)
