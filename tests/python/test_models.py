"""Real models train on the device: a CNN, a transformer encoder, an LSTM and
an EmbeddingBag model each take three training steps on the device and on
the CPU from the same weights and data, and their losses and weights must
agree. Nothing here lists operators: whatever the models reach runs through
the backend's spec, its hook operators and its global fallback.

The models live in bench/models.py, which bench/model_bench.py times.
"""
import importlib.util
import pathlib

import pytest
import torch

_MODELS = pathlib.Path(__file__).resolve().parents[2] / "bench" / "models.py"
_spec = importlib.util.spec_from_file_location("accgen_bench_models", _MODELS)
models = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(models)

STEPS = 3


@pytest.mark.parametrize("name", sorted(models.MODELS))
def test_three_training_steps_match_the_cpu(device, name):
    case, dev_model, batches = models.twins(name, "small", device, STEPS)
    cpu_model = case.model
    cpu_losses = models.train(case, cpu_model, batches, "cpu")
    dev_losses = models.train(case, dev_model, batches, device)
    tol = dict(atol=case.atol, rtol=case.rtol)
    for step, (d, c) in enumerate(zip(dev_losses, cpu_losses)):
        assert d.device.type == device
        torch.testing.assert_close(d.cpu(), c, **tol,
                                   msg=lambda m: f"{name} step {step}: {m}")
    cpu_state = cpu_model.state_dict()
    for key, value in dev_model.state_dict().items():
        assert value.device.type == device, key
        torch.testing.assert_close(value.cpu(), cpu_state[key], **tol,
                                   msg=lambda m: f"{name} {key}: {m}")
