"""Models for the tests of exports with symbolic sizes: an MLP and a small CNN with a
dynamic batch, and a transformer encoder layer with a dynamic batch and sequence length;
each with the dynamic_axes that name those sizes and an input maker."""
import math

from kiln import np, npx
from kiln.gluon import nn


class EncoderLayer(nn.HybridBlock):
    """Multi-head self-attention (Dense(flatten=False) projections, heads split and merged
    back with reshapes of transposed arrays, matmul, softmax) and a feed-forward block, each
    with a residual and LayerNorm."""

    def __init__(self, d=16, hidden=32, heads=2):
        super().__init__()
        self.d, self.heads = d, heads
        self.q = nn.Dense(d, flatten=False, in_units=d)
        self.k = nn.Dense(d, flatten=False, in_units=d)
        self.v = nn.Dense(d, flatten=False, in_units=d)
        self.out = nn.Dense(d, flatten=False, in_units=d)
        self.ln1 = nn.LayerNorm(in_channels=d)
        self.ff1 = nn.Dense(hidden, flatten=False, in_units=d, activation="relu")
        self.ff2 = nn.Dense(d, flatten=False, in_units=hidden)
        self.ln2 = nn.LayerNorm(in_channels=d)

    def forward(self, x):
        b, s, d = x.shape

        def split(t):
            return t.reshape(b, s, self.heads, d // self.heads).transpose(0, 2, 1, 3)

        q, k, v = split(self.q(x)), split(self.k(x)), split(self.v(x))
        scores = np.matmul(q, k.transpose(0, 1, 3, 2)) / math.sqrt(d // self.heads)
        att = np.matmul(npx.softmax(scores, axis=-1), v)
        att = att.transpose(0, 2, 1, 3).reshape(b, s, d)
        x = self.ln1(x + self.out(att))
        return self.ln2(x + self.ff2(self.ff1(x)))


class Fold(nn.HybridBlock):
    """Sizes that ONNX computes in-graph: (batch, seq, 16) folded to rows for a Dense,
    unfolded again, then pairs of positions side by side (seq // 2: seq must be even)."""

    def __init__(self):
        super().__init__()
        self.dense = nn.Dense(8, in_units=16)

    def forward(self, x):
        b, s, d = x.shape
        y = self.dense(x.reshape(b * s, d)).reshape(b, s, -1)
        return y.reshape(b, s // 2, 16) * 2


def mlp():
    net = nn.HybridSequential()
    net.add(nn.Dense(32, activation="relu", in_units=12), nn.Dense(5, in_units=32))
    return net


def cnn():
    net = nn.HybridSequential()
    net.add(nn.Conv2D(4, 3, padding=1, in_channels=2, activation="relu"),
            nn.MaxPool2D(2), nn.Conv2D(6, 3, in_channels=4), nn.Flatten(),
            nn.Dense(5, in_units=6 * 2 * 2))
    return net


# name -> (model maker, dynamic_axes, input shape for (batch, seq))
MODELS = {
    "mlp": (mlp, {"data": {0: "batch"}}, lambda b, s: (b, 12)),
    "cnn": (cnn, {"data": {0: "batch"}}, lambda b, s: (b, 2, 8, 8)),
    "encoder": (EncoderLayer, {"data": {0: "batch", 1: "seq"}}, lambda b, s: (b, s, 16)),
    "fold": (Fold, {"data": {0: "batch", 1: "seq"}}, lambda b, s: (b, 2 * s, 16)),
}


def model(kind, seed=0):
    make, axes, shape = MODELS[kind]
    np.random.seed(seed)
    net = make()
    net.initialize()
    return net, axes, shape
