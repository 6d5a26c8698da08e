"""What autocompare costs: per-operator time on the device with it off and on.

    python bench/autocompare_bench.py [--device accel] [--repeat 7] [--json FILE]

Autocompare is read from <PREFIX>_AUTOCOMPARE when the backend loads, so
each setting runs in a fresh interpreter: unset, "0" (both off: nothing is
installed or imported) and "log" (on, for reference: every device operator
also runs on CPU copies and is compared). Each prints the median time per
call of a few device operators and of a small training step; the table
shows them side by side with off/unset, whose target is 1.00 within noise
(docs/autocompare.md).
"""
import json
import os
import pathlib
import statistics
import subprocess
import sys

import torch

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import common  # noqa: E402

SETTINGS = [("unset", None), ("0", "0"), ("log", "log")]


def measure(device: str, repeat: int) -> dict[str, float]:
    mod = common.device_module(device)
    a = torch.randn(64, 64, device=device)
    b = torch.randn(64, 64, device=device)
    small = torch.randn(16, device=device)
    model = torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.ReLU(),
                                torch.nn.Linear(64, 8)).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)

    def step():
        opt.zero_grad()
        model(a).sum().backward()
        opt.step()

    cases = {
        "add (16)": lambda: small + small,
        "mm (64x64)": lambda: a @ b,
        "relu (64x64)": lambda: torch.relu(a),
        "training step (MLP)": step,
    }
    samples = common.timeit([(fn, mod.synchronize) for fn in cases.values()],
                            repeat, budget=0.1)
    return {name: statistics.median(s) * 1e6 for name, s in zip(cases, samples)}


def main() -> None:
    args = common.parse_args(__doc__, **{"--child": {"help": "internal"}})
    if args.child:
        print(json.dumps(measure(args.device, args.repeat)))
        return
    mod = common.device_module(args.device)
    variable = f"{mod._C._config['env_prefix']}_AUTOCOMPARE"
    results = {}
    for label, value in SETTINGS:
        env = dict(os.environ)
        env.pop(variable, None)
        if value is not None:
            env[variable] = value
        out = subprocess.run(
            [sys.executable, __file__, "--device", args.device, "--repeat",
             str(args.repeat), "--child", "1"],
            env=env, capture_output=True, text=True, check=True)
        results[label] = json.loads(out.stdout.strip().splitlines()[-1])
    print(f"{variable}: microseconds per call on {args.device}")
    print(f"{'operation':22} {'unset':>9} {'=0':>9} {'0/unset':>8} "
          f"{'=log':>10} {'log/unset':>10}")
    rows = []
    for name in results["unset"]:
        unset, off, on = (results[k][name] for k in ("unset", "0", "log"))
        print(f"{name:22} {unset:9.1f} {off:9.1f} {off / unset:8.2f} "
              f"{on:10.1f} {on / unset:10.2f}")
        rows.append({"operation": name, "unset_us": unset, "off_us": off,
                     "log_us": on})
    common.finish(rows, args)


if __name__ == "__main__":
    main()
