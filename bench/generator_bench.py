#!/usr/bin/env python3
"""accgen against torchgen's external-backend codegen, on the same work.

The work: every operator of the installed torch that can have a backend
kernel (not CompositeImplicitAutograd, not manual_kernel_registration),
registered on PrivateUse1 with a C++ declaration and a registration each.
torchgen runs as `torchgen.gen_backend_stubs` does, pointed at the wheel's
torchgen/packaged files; accgen runs as its users run it. Both are timed end
to end as processes (interpreter start-up included for torchgen, the Python
look-up of the torch install included for accgen), median of several runs.

    python3 bench/generator_bench.py [--accgen build/bin/accgen] [--runs 5]
"""
import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

BUILTINS = {
    "empty.memory_format", "empty_strided", "as_strided", "resize_",
    "_reshape_alias", "_copy_from", "_copy_from_and_resize",
    "_local_scalar_dense", "set_.source_Storage",
    "set_.source_Storage_storage_offset", "set_.source_Tensor", "set_", "view",
}


def backend_kernel_operators():
    """Full names of every operator that can have a backend kernel."""
    import torchgen
    from torchgen.gen import parse_native_yaml

    packaged = os.path.join(os.path.dirname(torchgen.__file__), "packaged", "ATen", "native")
    parsed = parse_native_yaml(os.path.join(packaged, "native_functions.yaml"),
                               os.path.join(packaged, "tags.yaml"))
    names = []
    for f in parsed.native_functions:
        if f.has_composite_implicit_autograd_kernel or f.manual_kernel_registration:
            continue
        names.append(str(f.func.name))
    return sorted(names)


def time_runs(fn, runs):
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--accgen", default=os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", "build", "bin", "accgen"))
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()

    ops = backend_kernel_operators()
    work = tempfile.mkdtemp(prefix="accgen_bench_")
    try:
        # torchgen's input: the external backend yaml.
        tg_yaml = os.path.join(work, "torchgen_backend.yaml")
        with open(tg_yaml, "w") as f:
            f.write("backend: PrivateUse1\ncpp_namespace: benchdev\nsupported:\n")
            for op in ops:
                f.write(f"- {op}\n")
        tg_out = os.path.join(work, "torchgen_out")

        def run_torchgen():
            shutil.rmtree(tg_out, ignore_errors=True)
            os.makedirs(tg_out)
            subprocess.run([sys.executable, "-m", "torchgen.gen_backend_stubs",
                            "--source-yaml", tg_yaml, "--output-dir", tg_out],
                           check=True, stdout=subprocess.DEVNULL)

        # accgen's input: the same operators as user kernels (group off, so
        # each is one declaration and one registration), plus the builtins
        # every accgen backend has.
        specs = os.path.join(work, "specs")
        os.makedirs(specs)
        with open(os.path.join(specs, "backend.yaml"), "w") as f:
            f.write("device: benchdev\n")
        with open(os.path.join(specs, "operators.yaml"), "w") as f:
            f.write("operators:\n")
            for op in sorted(BUILTINS):
                f.write(f"  - {{op: {op}, kind: builtin}}\n")
            for op in ops:
                if op not in BUILTINS:
                    f.write(f"  - {{op: {op}, kind: kernel, group: false}}\n")
        ag_out = os.path.join(work, "accgen_out")

        def run_accgen():
            shutil.rmtree(ag_out, ignore_errors=True)
            subprocess.run([args.accgen, "generate", "--specs", specs, "--out", ag_out],
                           check=True, stdout=subprocess.DEVNULL)

        def run_accgen_noop():
            subprocess.run([args.accgen, "generate", "--specs", specs, "--out", ag_out],
                           check=True, stdout=subprocess.DEVNULL)

        t_torchgen = time_runs(run_torchgen, args.runs)
        t_accgen = time_runs(run_accgen, args.runs)
        t_noop = time_runs(run_accgen_noop, args.runs)
        n_tg = sum(len(fs) for _, _, fs in os.walk(tg_out))
        n_ag = sum(len(fs) for _, _, fs in os.walk(ag_out))

        print(f"operators: {len(ops)} backend-kernel operators of the installed torch")
        print(f"{'tool':<28}{'median s':>10}{'files':>8}")
        print(f"{'torchgen gen_backend_stubs':<28}{t_torchgen:>10.3f}{n_tg:>8}")
        print(f"{'accgen generate (clean)':<28}{t_accgen:>10.3f}{n_ag:>8}")
        print(f"{'accgen generate (no-op)':<28}{t_noop:>10.3f}{n_ag:>8}")
        print(f"speed-up, clean: {t_torchgen / t_accgen:.1f}x (target >= 10x)")
        print(f"no-op regeneration: {t_noop * 1000:.0f} ms (target < 100 ms)")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
