"""Small models shared by the export tests (MLP, LeNet-style CNN with BatchNorm and Dropout,
residual MLP), built with every parameter set to seeded random values."""
import numpy as onp

from kiln import np, npx
from kiln.gluon import nn


class Residual(nn.HybridBlock):
    def __init__(self):
        super().__init__()
        self.inp = nn.Dense(8, activation="relu")
        self.body = nn.Dense(8)
        self.out = nn.Dense(3)

    def forward(self, x):
        h = self.inp(x)
        return self.out(npx.relu(h + self.body(h)))


def mlp():
    net = nn.HybridSequential()
    net.add(nn.Dense(16, activation="relu"), nn.Dense(8, activation="tanh"), nn.Dense(3))
    return net


def cnn():
    net = nn.HybridSequential()
    net.add(nn.Conv2D(4, 3, padding=1), nn.BatchNorm(), nn.Activation("relu"),
            nn.MaxPool2D(2), nn.Conv2D(6, 3), nn.AvgPool2D(2), nn.Flatten(),
            nn.Dense(12, activation="relu"), nn.Dropout(0.5), nn.Dense(3))
    return net


BUILDERS = {"mlp": (mlp, (4, 8)), "cnn": (cnn, (2, 1, 10, 10)), "residual": (Residual, (4, 8))}


def build(kind, seed=0):
    """(hybridized net called once in predict mode, input as NumPy float32)."""
    make, shape = BUILDERS[kind]
    rng = onp.random.default_rng(seed)
    net = make()
    net.initialize()
    x = rng.normal(size=shape).astype("float32")
    net(np.array(x))                      # eager call: deferred shapes become known
    for name, p in net.collect_params().items():
        value = rng.normal(scale=0.5, size=p.shape).astype("float32")
        if name.endswith("running_var"):
            value = onp.abs(value) + 0.5
        p.set_data(value)
    net.hybridize()
    net(np.array(x))
    return net, x
