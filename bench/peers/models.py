"""The models every workload trains or checkpoints, the same for every system (bench/peers, issue 28).

  digits     the digits CNN of examples/torch/train_digits.py (~0.04M parameters), 8x8 images
  mlp25m     a 4-layer MLP, 1024 -> 4096 -> 4096 -> 1024 -> 10 (~25.2M parameters)
  tf50m      4 transformer encoder blocks, d_model 1024, 16 heads, FFN 4096, on 32 tokens of
             width 1024, mean-pooled into 10 classes (~50.4M parameters)
  mlp500m    7 layers 8192 x 8192 (~470M parameters; for checkpoint cost, not for training steps)
  mlp134m    4096 -> 8192 -> 8192 -> 4096 (134.2M parameters; bench/torch/zero_bench.py's model,
             for the sharded optimizer's recovery)

build(name) returns the model with the same initial weights on every rank and in every system;
batch(name, size, step) returns a deterministic (inputs, labels) batch. Works with torch >= 1.13.
"""

import torch
from torch import nn


def _digits():
    return nn.Sequential(
        nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(),
        nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
        nn.Linear(512, 64), nn.ReLU(), nn.Linear(64, 10))


def _mlp25m():
    return nn.Sequential(nn.Linear(1024, 4096), nn.ReLU(), nn.Linear(4096, 4096), nn.ReLU(),
                         nn.Linear(4096, 1024), nn.ReLU(), nn.Linear(1024, 10))


class _Transformer(nn.Module):
    def __init__(self, width=1024, blocks=4):
        super().__init__()
        layer = nn.TransformerEncoderLayer(width, nhead=16, dim_feedforward=4 * width,
                                           dropout=0.0, batch_first=True)
        self.blocks = nn.TransformerEncoder(layer, blocks)
        self.head = nn.Linear(width, 10)

    def forward(self, x):
        return self.head(self.blocks(x).mean(dim=1))


def _mlp500m():
    layers = []
    for _ in range(7):
        layers += [nn.Linear(8192, 8192), nn.ReLU()]
    return nn.Sequential(*layers[:-1])


def _mlp134m():
    return nn.Sequential(nn.Linear(4096, 8192), nn.ReLU(), nn.Linear(8192, 8192), nn.ReLU(),
                         nn.Linear(8192, 4096))


MODELS = {"digits": (_digits, (1, 8, 8)), "mlp25m": (_mlp25m, (1024,)),
          "tf50m": (_Transformer, (32, 1024)), "mlp500m": (_mlp500m, (8192,)),
          "mlp134m": (_mlp134m, (4096,))}


def build(name):
    """The model `name` with the same initial weights everywhere."""
    if name not in MODELS:
        raise ValueError(f"unknown model '{name}' (known: {', '.join(MODELS)})")
    torch.manual_seed(7)
    return MODELS[name][0]()


def parameters(model):
    return sum(p.numel() for p in model.parameters())


def batch(name, size, step):
    """A deterministic batch for step `step`: inputs of the model's shape, labels in [0, 10)."""
    g = torch.Generator().manual_seed(1000 + step)
    x = torch.randn((size,) + MODELS[name][1], generator=g)
    return x, torch.randint(0, 10, (size,), generator=g)
