"""Training on the device: a small model's forward, loss and gradients match
the same model on the CPU, and optimiser steps keep them together.
"""
import copy

import pytest
import torch
from torch import nn


def mlp(seed=0):
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(12, 32), nn.ReLU(), nn.Linear(32, 16),
                         nn.GELU(), nn.Linear(16, 5))


def batch(seed=1):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(24, 12, generator=g)
    y = torch.randint(0, 5, (24,), generator=g)
    return x, y


@pytest.mark.parametrize("loss_name", ["cross_entropy", "nll_softmax", "mse"])
def test_mlp_gradients_match_cpu(device, loss_name):
    cpu_model = mlp()
    dev_model = copy.deepcopy(cpu_model).to(device)
    x, y = batch()

    def loss_of(model, x, y):
        logits = model(x)
        if loss_name == "cross_entropy":
            return nn.functional.cross_entropy(logits, y)
        if loss_name == "nll_softmax":
            return nn.functional.nll_loss(torch.log_softmax(logits, 1), y)
        probs = torch.softmax(logits, dim=1)
        target = nn.functional.one_hot(y, 5).to(probs.dtype)
        return nn.functional.mse_loss(probs, target)

    cpu_loss = loss_of(cpu_model, x, y)
    dev_loss = loss_of(dev_model, x.to(device), y.to(device))
    assert dev_loss.device.type == device
    torch.testing.assert_close(dev_loss.cpu(), cpu_loss)
    cpu_loss.backward()
    dev_loss.backward()
    for (name, p_cpu), p_dev in zip(cpu_model.named_parameters(),
                                    dev_model.parameters()):
        assert p_dev.grad is not None, name
        assert p_dev.grad.device.type == device
        torch.testing.assert_close(p_dev.grad.cpu(), p_cpu.grad, msg=name)


def test_training_steps_match_cpu(device):
    cpu_model = mlp(3)
    dev_model = copy.deepcopy(cpu_model).to(device)
    cpu_opt = torch.optim.SGD(cpu_model.parameters(), lr=0.1, momentum=0.9)
    dev_opt = torch.optim.SGD(dev_model.parameters(), lr=0.1, momentum=0.9)
    for step in range(4):
        x, y = batch(10 + step)
        for model, opt, dev in ((cpu_model, cpu_opt, "cpu"),
                                (dev_model, dev_opt, device)):
            opt.zero_grad()
            nn.functional.cross_entropy(model(x.to(dev)), y.to(dev)).backward()
            opt.step()
    for p_cpu, p_dev in zip(cpu_model.parameters(), dev_model.parameters()):
        torch.testing.assert_close(p_dev.detach().cpu(), p_cpu.detach(),
                                   rtol=1e-4, atol=1e-5)


def test_adam_step_matches_cpu(device):
    cpu_model = mlp(4)
    dev_model = copy.deepcopy(cpu_model).to(device)
    cpu_opt = torch.optim.Adam(cpu_model.parameters(), lr=1e-2)
    dev_opt = torch.optim.Adam(dev_model.parameters(), lr=1e-2)
    x, y = batch(7)
    for model, opt, dev in ((cpu_model, cpu_opt, "cpu"),
                            (dev_model, dev_opt, device)):
        for _ in range(2):
            opt.zero_grad()
            nn.functional.cross_entropy(model(x.to(dev)), y.to(dev)).backward()
            opt.step()
    for p_cpu, p_dev in zip(cpu_model.parameters(), dev_model.parameters()):
        torch.testing.assert_close(p_dev.detach().cpu(), p_cpu.detach(),
                                   rtol=1e-4, atol=1e-5)


def test_elementwise_gradients(device):
    x = torch.randn(6, 4, dtype=torch.float64)
    fns = [
        lambda t: (t.exp() * t.sin()).sum(),
        lambda t: torch.sigmoid(t).prod(),
        lambda t: torch.tanh(t @ t.t()).mean(),
        lambda t: (t.abs() + 1).log().sum(),
        lambda t: t.clamp(-0.5, 0.5).pow(2).sum(),
        lambda t: torch.where(t > 0, t, t * 0.1).std(),
        lambda t: torch.cat([t, t * 2], 1).max(1).values.sum(),
        lambda t: t[torch.tensor([0, 2, 2])].sum(),
    ]
    for fn in fns:
        a = x.clone().requires_grad_()
        fn(a).backward()
        d = x.to(device).requires_grad_()
        fn(d).backward()
        torch.testing.assert_close(d.grad.cpu(), a.grad)


def test_zero_gradients_are_device_zero_tensors(device):
    # sgn's derivative is a tensor of zeros without memory (ZeroTensor), made
    # on the input's device, as on CUDA.
    zeros = torch._efficientzerotensor((2, 3), device=device)
    assert zeros.device.type == device and zeros._is_zerotensor()
    assert torch.equal((zeros + 1).cpu(), torch.ones(2, 3))
    x = torch.randn(4, 5)
    grads = []
    for where in ("cpu", device):
        leaf = x.to(where).requires_grad_()
        (grad,) = torch.autograd.grad(torch.sgn(leaf).sum(), [leaf])
        grads.append(grad.cpu())
    torch.testing.assert_close(grads[1], grads[0])
