"""The transformer and recurrent paths compiled without oneDNN (KILN_DNNL=0), without the
vector math library (KILN_VECTOR_MATH=0, kiln/backend/c/vector_math.py) and without both:
a small post-LayerNorm encoder layer (dense layers, attention, GELU, layer norm; the
kernels of graph/passes/attention.py and normalization.py) and a 2-layer LSTM, forward and
a training step's gradients, still equal eager."""
import math

import numpy as onp
import pytest

import kiln
from kiln import autograd, np, npx
from kiln.backend.c import build, vector_math
from kiln.backend.dnnl import library
from kiln.gluon import nn, rnn

HIDDEN, HEADS, FFN = 16, 2, 32


class EncoderLayer(nn.HybridBlock):
    def __init__(self):
        super().__init__()
        self.qkv = nn.Dense(3 * HIDDEN, flatten=False, in_units=HIDDEN)
        self.proj = nn.Dense(HIDDEN, flatten=False, in_units=HIDDEN)
        self.ln1 = nn.LayerNorm(in_channels=HIDDEN)
        self.ff1 = nn.Dense(FFN, flatten=False, in_units=HIDDEN)
        self.ff2 = nn.Dense(HIDDEN, flatten=False, in_units=FFN)
        self.ln2 = nn.LayerNorm(in_channels=HIDDEN)

    def forward(self, x):
        b, t, _ = x.shape
        d = HIDDEN // HEADS
        qkv = self.qkv(x).reshape(b, t, 3, HEADS, d).transpose(2, 0, 3, 1, 4)
        scores = np.matmul(qkv[0], qkv[1].transpose(0, 1, 3, 2)) / math.sqrt(d)
        att = np.matmul(npx.softmax(scores, axis=-1), qkv[2])
        x = self.ln1(x + self.proj(att.transpose(0, 2, 1, 3).reshape(b, t, HIDDEN)))
        return npx.log_softmax(self.ln2(x + self.ff2(npx.gelu(self.ff1(x)))), axis=-1)


def _encoder():
    return EncoderLayer(), onp.random.default_rng(5).normal(size=(2, 7, HIDDEN))


def _lstm():
    return rnn.LSTM(12, num_layers=2, input_size=6), \
        onp.random.default_rng(6).normal(size=(5, 3, 6))


MODELS = {"encoder": _encoder, "lstm": _lstm}
SETTINGS = {"default": {}, "no-dnnl": {"KILN_DNNL": "0"},
            "no-vector-math": {"KILN_VECTOR_MATH": "0"},
            "neither": {"KILN_DNNL": "0", "KILN_VECTOR_MATH": "0"}}


def _run(net, xv):
    x = np.array(xv.astype(onp.float32))
    with autograd.record():
        y = net(x)
        weights = onp.linspace(-1, 1, y.size, dtype=onp.float32).reshape(y.shape)
        loss = (y * np.array(weights)).sum()
    loss.backward()
    return [y.asnumpy()] + [p.grad().asnumpy() for p in net.collect_params().values()]


@pytest.mark.parametrize("setting", sorted(SETTINGS))
@pytest.mark.parametrize("model", sorted(MODELS))
def test_compiled_equals_eager_without_the_libraries(model, setting, monkeypatch):
    try:
        build.compiler()
    except build.CompilerUnavailable:
        pytest.skip("no C compiler")
    for name, value in SETTINGS[setting].items():
        monkeypatch.setenv(name, value)
    if "KILN_DNNL" in SETTINGS[setting]:
        assert not library.available()
    if "KILN_VECTOR_MATH" in SETTINGS[setting]:
        assert not vector_math.enabled() and vector_math.flags() == ()
    onp.random.seed(0)
    np.random.seed(0)
    net, xv = MODELS[model]()
    net.initialize(kiln.init.Uniform(0.3))
    eager = _run(net, xv)
    net.hybridize(backend="c")
    compiled = _run(net, xv)
    inference = net(np.array(xv.astype(onp.float32))).asnumpy()
    onp.testing.assert_allclose(inference, eager[0], rtol=1e-4, atol=1e-5)
    backends = {info.backend for info in kiln.programs(net).programs}
    assert backends == {"c"}, backends       # compiled, not run on the NumPy executor
    for got, want in zip(compiled, eager):
        onp.testing.assert_allclose(got, want, rtol=1e-3, atol=1e-5)
