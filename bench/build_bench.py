"""Clean build time of the example backend against a reference commit.

    python3 bench/build_bench.py [--reference 3c51299] [--prefix build] [--jobs 2]

Builds generated_example/ of the working tree and of the reference commit
(the last commit whose backends carried the runtime as generated sources),
each from an empty build directory with ccache off, one after the other, and
prints wall and CPU seconds side by side. Both use the accgen package of
`--prefix` (a build tree or install prefix): the reference only needs its
emulator. Target (issue of the runtime library): the current tree's clean
build takes at most half the reference's.
"""
import argparse
import os
import pathlib
import resource
import subprocess
import sys
import tarfile
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]


def run(cmd, **kwargs):
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, **kwargs)


def children_cpu():
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def build(source, work, prefix, jobs):
    env = dict(os.environ, CCACHE_DISABLE="1")
    build_dir = work / "build"
    run(["cmake", "-S", str(source), "-B", str(build_dir), "-G", "Ninja",
         "-DCMAKE_BUILD_TYPE=Release", f"-DCMAKE_PREFIX_PATH={prefix}"],
        env=env)
    cpu = children_cpu()
    start = time.perf_counter()
    run(["cmake", "--build", str(build_dir), "-j", str(jobs)], env=env)
    return time.perf_counter() - start, children_cpu() - cpu


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reference", default="3c51299")
    parser.add_argument("--prefix", default=str(ROOT / "build"))
    parser.add_argument("--jobs", type=int, default=2)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        tmp = pathlib.Path(tmp)
        archive = tmp / "reference.tar"
        with open(archive, "wb") as out:
            subprocess.run(["git", "-C", str(ROOT), "archive", args.reference,
                            "generated_example"], check=True, stdout=out)
        with tarfile.open(archive) as tar:
            tar.extractall(tmp / "reference")
        results = {}
        for name, source in (
                ("reference " + args.reference,
                 tmp / "reference" / "generated_example"),
                ("current tree", ROOT / "generated_example")):
            work = tmp / name.replace(" ", "_")
            work.mkdir()
            results[name] = build(source, work, args.prefix, args.jobs)
            print(f"built {name}", file=sys.stderr)
    print(f"clean build of generated_example, -j{args.jobs}, ccache off")
    print(f"{'tree':<22} {'wall s':>8} {'cpu s':>8}")
    for name, (wall, cpu) in results.items():
        print(f"{name:<22} {wall:8.1f} {cpu:8.1f}")
    (ref_wall, ref_cpu), (cur_wall, cur_cpu) = results.values()
    print(f"current / reference: wall {cur_wall / ref_wall:.2f}, "
          f"cpu {cur_cpu / ref_cpu:.2f} (target <= 0.50)")


if __name__ == "__main__":
    main()
