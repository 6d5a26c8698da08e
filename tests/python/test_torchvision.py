"""torchvision on the device as on the CPU: models (ResNet, MobileNet, a
small ViT) forward and a training step, and its own operators (nms,
roi_align, batched_nms), each compared with the CPU.

torchvision's wheel is built for a CUDA torch and does not load its C++
operators with the CPU build of the pinned torch, so this file runs in the
release matrix's legs (scripts/test_releases.sh), whose torch is a CUDA
build; in the main environment it is skipped."""

import copy

import pytest
import torch

torchvision = pytest.importorskip("torchvision")


def _models():
    torch.manual_seed(0)
    return {
        "resnet18": torchvision.models.resnet18(num_classes=10),
        "mobilenet_v3_small": torchvision.models.mobilenet_v3_small(num_classes=10, dropout=0.0),
        "vit": torchvision.models.VisionTransformer(
            image_size=32, patch_size=8, num_layers=2, num_heads=2, hidden_dim=32,
            mlp_dim=64, num_classes=10),
    }


def _images():
    return torch.randn(4, 3, 32, 32, generator=torch.Generator().manual_seed(1))


@pytest.mark.parametrize("name", ["resnet18", "mobilenet_v3_small", "vit"])
def test_model_forward_and_training_step_match_the_cpu(device, name):
    model = _models()[name]
    images, labels = _images(), torch.tensor([1, 2, 3, 4])
    results = {}
    for where in ("cpu", device):
        m = copy.deepcopy(model).to(where)
        m.eval()
        with torch.no_grad():
            logits = m(images.to(where))
        m.train()
        optimizer = torch.optim.SGD(m.parameters(), lr=0.1, momentum=0.9)
        loss = torch.nn.functional.cross_entropy(m(images.to(where)), labels.to(where))
        loss.backward()
        optimizer.step()
        results[where] = (logits.cpu(), loss.item(),
                          {k: v.detach().cpu() for k, v in m.state_dict().items()})
    cpu, dev = results["cpu"], results[device]
    torch.testing.assert_close(dev[0], cpu[0], atol=1e-4, rtol=1e-4)
    assert dev[1] == pytest.approx(cpu[1], abs=1e-4)
    for key, want in cpu[2].items():
        torch.testing.assert_close(dev[2][key], want, atol=1e-4, rtol=1e-3, msg=key)


def _boxes(n=50):
    gen = torch.Generator().manual_seed(2)
    xy = torch.rand(n, 2, generator=gen) * 50
    wh = torch.rand(n, 2, generator=gen) * 20 + 1
    return torch.cat([xy, xy + wh], 1), torch.rand(n, generator=gen)


def test_nms_and_batched_nms_match_the_cpu(device):
    boxes, scores = _boxes()
    want = torchvision.ops.nms(boxes, scores, 0.3)
    got = torchvision.ops.nms(boxes.to(device), scores.to(device), 0.3)
    assert got.device.type == device
    assert torch.equal(got.cpu(), want)
    classes = torch.arange(len(scores)) % 3
    want = torchvision.ops.batched_nms(boxes, scores, classes, 0.3)
    got = torchvision.ops.batched_nms(boxes.to(device), scores.to(device),
                                      classes.to(device), 0.3)
    assert torch.equal(got.cpu(), want)


def test_roi_align_forward_and_backward_match_the_cpu(device):
    features = torch.randn(2, 4, 16, 16, generator=torch.Generator().manual_seed(3))
    boxes, _ = _boxes(6)
    rois = torch.cat([torch.tensor([[0.0]] * 3 + [[1.0]] * 3), boxes / 4], 1)
    results = {}
    for where in ("cpu", device):
        x = features.detach().to(where).requires_grad_()
        out = torchvision.ops.roi_align(x, rois.to(where), output_size=(4, 4),
                                        spatial_scale=1.0, sampling_ratio=2, aligned=True)
        out.sum().backward()
        results[where] = (out.detach().cpu(), x.grad.cpu())
    torch.testing.assert_close(results[device][0], results["cpu"][0])
    torch.testing.assert_close(results[device][1], results["cpu"][1])
