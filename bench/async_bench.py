"""How long the host waits for device work, queued and blocking.

    python bench/async_bench.py [--device accel] [--repeat 5] [--json FILE]

Each scenario runs on the device twice, in one run: as the backend runs it
(operators queued, Note [Queued operators] in runtime/src/emulate/Launch.cpp)
and under ACCGEN_LAUNCH_BLOCKING=1 (every operator waits), in a child
process each, and once on the CPU. For each it prints the host's time to issue the work ("host"), the
time the following synchronize waited ("sync") and their sum ("total"),
medians over `repeat` rounds after a warm-up round.

  matmul+softmax   ten rounds of a 1024x1024 matmul and a softmax
  matmul+layernorm the same with layer_norm, whose result shapes only its
                   CPU kernel knows: it waits for the matmul before it
  pinned copy      twenty 1024x1024 matmuls, then a 1024x1024 pinned
                   to(device, non_blocking=True)

Target (docs/operators.md, "Figures"): the queued host time is a small
part of the total wherever the results are known ahead, and the totals
match the blocking ones.
"""
import json
import os
import statistics
import subprocess
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import device_module, parse_args  # noqa: E402

SCENARIOS = ("matmul+softmax", "matmul+layernorm", "pinned copy")


def scenario(name: str, device: str, sync) -> tuple[float, float]:
    """One round: (host seconds, synchronize seconds)."""
    torch.manual_seed(0)
    a = torch.randn(1024, 1024, device=device)
    if name == "pinned copy":
        src = torch.randn(1024, 1024)
        if device != "cpu":
            src = src.pin_memory()
        sync()
        start = time.perf_counter()
        for _ in range(20):
            a @ a
        src.to(device, non_blocking=True)
        host = time.perf_counter() - start
        begin = time.perf_counter()
        sync()
        return host, time.perf_counter() - begin
    sync()
    start = time.perf_counter()
    c = a
    for _ in range(10):
        c = a @ a
        if name == "matmul+softmax":
            c = torch.softmax(c, 1)
        else:
            c = torch.nn.functional.layer_norm(c, (1024,))
    host = time.perf_counter() - start
    begin = time.perf_counter()
    sync()
    return host, time.perf_counter() - begin


def measure(device: str, repeat: int) -> dict:
    """Median (host, sync) milliseconds per scenario on `device`."""
    sync = (lambda: None) if device == "cpu" else device_module(device).synchronize
    figures = {}
    for name in SCENARIOS:
        scenario(name, device, sync)  # warm-up: first calls, allocations
        rounds = [scenario(name, device, sync) for _ in range(repeat)]
        figures[name] = (1e3 * statistics.median(r[0] for r in rounds),
                         1e3 * statistics.median(r[1] for r in rounds))
    return figures


def child(device: str, repeat: int, blocking: bool) -> dict:
    env = dict(os.environ)
    env.pop("ACCGEN_LAUNCH_BLOCKING", None)
    if blocking:
        env["ACCGEN_LAUNCH_BLOCKING"] = "1"
    out = subprocess.run(
        [sys.executable, __file__, "--child", device, "--repeat", str(repeat)],
        env=env, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    if len(sys.argv) > 2 and sys.argv[1] == "--child":
        repeat = int(sys.argv[sys.argv.index("--repeat") + 1])
        print(json.dumps(measure(sys.argv[2], repeat)))
        return
    args = parse_args(__doc__)
    repeat = max(args.repeat, 3)
    columns = {
        "queued": child(args.device, repeat, blocking=False),
        "blocking": child(args.device, repeat, blocking=True),
        "cpu": measure("cpu", repeat),
    }
    print(f"{'scenario':18}" + "".join(
        f"{c + ' host':>15}{c + ' sync':>15}{c + ' total':>16}"
        for c in columns) + "   (ms)")
    rows = []
    for name in SCENARIOS:
        line = f"{name:18}"
        row = {"scenario": name}
        for column, figures in columns.items():
            host, waited = figures[name]
            line += f"{host:15.1f}{waited:15.1f}{host + waited:16.1f}"
            row[column] = {"host_ms": host, "sync_ms": waited}
        rows.append(row)
        print(line)
    print(f"\ntorch {torch.__version__}, {torch.get_num_threads()} threads, "
          f"{os.cpu_count()} cores, load {os.getloadavg()[0]:.2f}")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(rows, f, indent=2)


if __name__ == "__main__":
    main()
