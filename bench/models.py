"""The models that tests/python/test_models.py trains on the device and
bench/model_bench.py times: a CNN, a transformer encoder, an LSTM and an
EmbeddingBag model, each at a small and a larger size.

MODELS maps a name to a function of the size ("small" or "large") that
returns a Case: the model (on the CPU, freshly initialised from torch's
generator), how to prepare it for training, its optimizer, its loss, a
batch maker and the tolerances of a device/CPU comparison in float32.
"""
import dataclasses
from typing import Callable

import torch
from torch import nn


@dataclasses.dataclass
class Case:
    model: nn.Module
    optimizer: Callable[[nn.Module], torch.optim.Optimizer]
    loss: Callable[[torch.Tensor, torch.Tensor], torch.Tensor]
    batch: Callable[[], tuple[tuple[torch.Tensor, ...], torch.Tensor]]
    prepare: Callable[[nn.Module], None] = lambda model: model.train()
    atol: float = 1e-4
    rtol: float = 1e-4


class SmallCnn(nn.Module):
    def __init__(self, width: int, classes: int = 10):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, width, 3, padding=1), nn.BatchNorm2d(width), nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Conv2d(width, 2 * width, 3, padding=1),
            nn.BatchNorm2d(2 * width), nn.ReLU(),
            nn.AdaptiveAvgPool2d(1), nn.Flatten())
        self.dropout = nn.Dropout(0.2)
        self.head = nn.Linear(2 * width, classes)

    def forward(self, x):
        return self.head(self.dropout(self.features(x)))


def _cnn_train_mode(model: nn.Module) -> None:
    # Batch norm trains; dropout is in eval, so that the device and the CPU
    # compute the same function.
    model.train()
    model.dropout.eval()


def cnn(size: str) -> Case:
    width, batch, side = (8, 4, 16) if size == "small" else (32, 32, 32)
    return Case(
        model=SmallCnn(width),
        optimizer=lambda m: torch.optim.SGD(m.parameters(), lr=0.05,
                                            momentum=0.9),
        loss=nn.functional.cross_entropy,
        batch=lambda: ((torch.randn(batch, 3, side, side),),
                       torch.randint(0, 10, (batch,))),
        prepare=_cnn_train_mode)


class Encoder(nn.Module):
    def __init__(self, vocab: int, dim: int, heads: int, layers: int):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        layer = nn.TransformerEncoderLayer(dim, heads, 4 * dim, dropout=0.0,
                                           batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, layers,
                                             enable_nested_tensor=False)
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, vocab)

    def forward(self, tokens):
        return self.head(self.norm(self.encoder(self.embed(tokens))))


def transformer(size: str) -> Case:
    vocab, dim, heads, layers, batch, seq = (
        (50, 32, 4, 2, 4, 12) if size == "small" else (1000, 256, 8, 4, 16, 128))

    def batch_of_tokens():
        tokens = torch.randint(0, vocab, (batch, seq))
        return (tokens,), torch.roll(tokens, -1, 1)

    # AdamW moves a weight by about lr whatever its gradient's size, so a
    # gradient within rounding of zero (summed in another order on the
    # device: its attention output keeps the query's layout) can move it
    # by up to 2 lr the other way: the tolerance of the weights is lr.
    return Case(
        model=Encoder(vocab, dim, heads, layers),
        optimizer=lambda m: torch.optim.AdamW(m.parameters(), lr=1e-3),
        loss=lambda out, target: nn.functional.cross_entropy(
            out.reshape(-1, out.shape[-1]), target.reshape(-1)),
        batch=batch_of_tokens,
        atol=1e-3, rtol=1e-3)


class Recurrent(nn.Module):
    def __init__(self, features: int, hidden: int):
        super().__init__()
        self.lstm = nn.LSTM(features, hidden, num_layers=2, batch_first=True)
        self.head = nn.Linear(hidden, 1)

    def forward(self, x):
        out, _ = self.lstm(x)
        return self.head(out[:, -1])


def lstm(size: str) -> Case:
    features, hidden, batch, seq = ((6, 16, 4, 7) if size == "small"
                                    else (64, 256, 32, 64))
    return Case(
        model=Recurrent(features, hidden),
        optimizer=lambda m: torch.optim.Adam(m.parameters(), lr=1e-3),
        loss=nn.functional.mse_loss,
        batch=lambda: ((torch.randn(batch, seq, features),),
                       torch.randn(batch, 1)))


class Bag(nn.Module):
    def __init__(self, vocab: int, dim: int):
        super().__init__()
        self.bag = nn.EmbeddingBag(vocab, dim, mode="mean")
        self.head = nn.Linear(dim, 3)

    def forward(self, tokens, offsets):
        return self.head(self.bag(tokens, offsets))


def embedding_bag(size: str) -> Case:
    vocab, dim, bags, per_bag = ((100, 16, 4, 5) if size == "small"
                                 else (100000, 128, 256, 20))

    def batch_of_bags():
        lengths = torch.randint(1, 2 * per_bag, (bags,))
        offsets = torch.cat([torch.zeros(1, dtype=torch.long),
                             lengths.cumsum(0)[:-1]])
        tokens = torch.randint(0, vocab, (int(lengths.sum()),))
        return (tokens, offsets), torch.randint(0, 3, (bags,))

    return Case(
        model=Bag(vocab, dim),
        optimizer=lambda m: torch.optim.SGD(m.parameters(), lr=0.1),
        loss=nn.functional.cross_entropy,
        batch=batch_of_bags)


MODELS: dict[str, Callable[[str], Case]] = {
    "cnn": cnn,
    "transformer": transformer,
    "lstm": lstm,
    "embedding_bag": embedding_bag,
}


def twins(name: str, size: str, device: str, steps: int):
    """From seed 0: the Case of model `name` at `size` (its model on the
    CPU), a copy of the model with the same weights on `device`, both
    prepared for training, and `steps` batches on the CPU."""
    make = MODELS[name]
    torch.manual_seed(0)
    case = make(size)
    twin = make(size).model.to(device)
    twin.load_state_dict(case.model.state_dict())
    for model in (case.model, twin):
        case.prepare(model)
    return case, twin, [case.batch() for _ in range(steps)]


def train(case: Case, model: nn.Module, batches, device: str,
          forward: Callable | None = None) -> list[torch.Tensor]:
    """Trains `model` (on `device`) one step per batch with the case's
    optimizer and loss, calling `forward` (default: the model) for its
    output; returns the detached losses."""
    optimizer = case.optimizer(model)
    forward = model if forward is None else forward
    losses = []
    for inputs, target in batches:
        optimizer.zero_grad()
        loss = case.loss(forward(*(t.to(device) for t in inputs)),
                         target.to(device))
        loss.backward()
        optimizer.step()
        losses.append(loss.detach())
    return losses
