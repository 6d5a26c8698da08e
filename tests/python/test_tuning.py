"""The vendor's tuning (tuning.cpp of the backend, user-owned): the example
backend's tuneRuntime() names its devices and sets eight streams per pool,
and the runtime applies both."""
import os

import pytest

import torch


def _example_backend(device):
    # The figures below are the example's tuning.cpp; another backend under
    # test has its own.
    if device != "accel" or os.environ.get("ACCGEN_TEST_SPECS"):
        pytest.skip("checks the example backend's tuning.cpp")


def test_device_properties_pass_through_the_tuning(device, mod):
    _example_backend(device)
    assert mod.get_device_name(1) == "accel emulated device 1"
    assert mod.get_device_properties(0).name == "accel emulated device 0"


def test_stream_pools_hold_the_tuned_count(device, mod):
    _example_backend(device)
    # Streams from one pool are handed out round-robin: the ninth is the
    # first again.
    streams = [mod.Stream(priority=0) for _ in range(9)]
    ids = [s.stream_id for s in streams]
    assert len(set(ids[:8])) == 8
    assert ids[8] == ids[0]
