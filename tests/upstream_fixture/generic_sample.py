"""A device-generic test file for the upstream runner's tests."""
import os
import time

import torch
from torch.testing._internal.common_device_type import dtypes, instantiate_device_type_tests
from torch.testing._internal.common_utils import TestCase, run_tests


def on_device(device):
    return torch.device(device).type != "cpu"


class TestSample(TestCase):
    def test_add(self, device):
        x = torch.arange(4.0, device=device)
        self.assertEqual((x + x).cpu(), torch.arange(4.0) * 2)

    def test_device_only(self, device):
        if on_device(device):
            raise RuntimeError(f"no kernel on {device} at 0x7f00aa, 12 bytes")

    def test_device_only_again(self, device):
        if on_device(device):
            raise RuntimeError(f"no kernel on {device} at 0x7f00bb, 16 bytes")

    def test_both_fail(self, device):
        raise ValueError("fails everywhere")

    def test_skipped(self, device):
        self.skipTest("not relevant here")

    @dtypes(torch.float32, torch.int8)
    def test_dtyped(self, device, dtype):
        if on_device(device):
            raise RuntimeError(f"dtype {dtype} unsupported")

    def test_hangs_on_device(self, device):
        if on_device(device):
            time.sleep(60)

    def test_new_failure(self, device):
        # Fails on the device once the runner's test sets this.
        if on_device(device) and os.environ.get("UPSTREAM_FIXTURE_NEW_FAILURE"):
            raise AssertionError("a regression")


instantiate_device_type_tests(TestSample, globals())

if __name__ == "__main__":
    run_tests()
