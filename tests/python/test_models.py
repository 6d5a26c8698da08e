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


class TiedLM(torch.nn.Module):
    """GPT-2's shape in small: the output projection is the token embedding
    (one Parameter reached from two modules), plus a position embedding, a
    layer norm and an MLP."""

    def __init__(self, vocab=64, dim=32, context=16):
        super().__init__()
        self.wte = torch.nn.Embedding(vocab, dim)
        self.wpe = torch.nn.Embedding(context, dim)
        self.ln = torch.nn.LayerNorm(dim)
        self.mlp = torch.nn.Sequential(torch.nn.Linear(dim, 4 * dim),
                                       torch.nn.GELU(),
                                       torch.nn.Linear(4 * dim, dim))
        self.lm_head = torch.nn.Linear(dim, vocab, bias=False)
        self.lm_head.weight = self.wte.weight

    def forward(self, tokens):
        positions = torch.arange(tokens.shape[1], device=tokens.device)
        h = self.wte(tokens) + self.wpe(positions)
        h = h + self.mlp(self.ln(h))
        return self.lm_head(h)


def train_tied(model, optimizer, batches, device):
    losses = []
    for tokens in batches:
        tokens = tokens.to(device)
        logits = model(tokens[:, :-1])
        loss = torch.nn.functional.cross_entropy(
            logits.reshape(-1, logits.shape[-1]), tokens[:, 1:].reshape(-1))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.detach())
    return losses


def test_tied_weights_stay_tied_through_to_and_train_like_the_cpu(device):
    # Note [Parameters keep their identity across .to()]: Module.to moves
    # each Parameter in place, as on CUDA, so the tie survives and an
    # optimizer built before the move drives the moved weights.
    torch.manual_seed(0)
    cpu_model = TiedLM()
    dev_model = TiedLM()
    dev_model.load_state_dict(cpu_model.state_dict())
    before = {name: id(p) for name, p in dev_model.named_parameters()}
    dev_optimizer = torch.optim.AdamW(dev_model.parameters(), lr=1e-2)
    assert dev_model.to(device) is dev_model
    assert dev_model.lm_head.weight is dev_model.wte.weight
    assert {name: id(p) for name, p in dev_model.named_parameters()} == before
    for p in dev_model.parameters():
        assert p.device.type == device and p.is_leaf and p.requires_grad
    cpu_optimizer = torch.optim.AdamW(cpu_model.parameters(), lr=1e-2)
    g = torch.Generator().manual_seed(1)
    batches = [torch.randint(0, 64, (4, 17), generator=g) for _ in range(3)]
    cpu_losses = train_tied(cpu_model, cpu_optimizer, batches, "cpu")
    dev_losses = train_tied(dev_model, dev_optimizer, batches, device)
    for d, c in zip(dev_losses, cpu_losses):
        torch.testing.assert_close(d.cpu(), c, atol=1e-5, rtol=1e-4)
    cpu_state = cpu_model.state_dict()
    for key, value in dev_model.state_dict().items():
        assert value.device.type == device, key
        torch.testing.assert_close(value.cpu(), cpu_state[key], atol=1e-5,
                                   rtol=1e-4, msg=lambda m: f"{key}: {m}")
    # Gradients move with their parameters, and back to the CPU too.
    grads = {name: p.grad.cpu() for name, p in dev_model.named_parameters()}
    dev_model.cpu()
    assert dev_model.lm_head.weight is dev_model.wte.weight
    for name, p in dev_model.named_parameters():
        assert p.device.type == "cpu" and p.grad.device.type == "cpu"
        torch.testing.assert_close(p.grad, grads[name])
