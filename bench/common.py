"""What the device benchmarks share: their command line and the device
module of the backend under test."""
import argparse
import os

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
