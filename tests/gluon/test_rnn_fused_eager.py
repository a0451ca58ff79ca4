"""The eager recurrent layers' fused time loop (kiln/gluon/rnn/fused_eager.py) against the
op-by-op loop of cell_math.step: outputs, final states and the gradients of the input, the
initial states and every parameter, in float64 so the two must agree to rounding."""
import numpy as np
import pytest

import kiln
from kiln import autograd
from kiln.gluon import rnn
from kiln.gluon.rnn import fused_eager

LAYERS = {"rnn_relu": lambda: rnn.RNN(5, 2, activation="relu", bidirectional=True,
                                      dtype="float64"),
          "rnn_tanh": lambda: rnn.RNN(5, 1, activation="tanh", dtype="float64"),
          "lstm": lambda: rnn.LSTM(5, 2, bidirectional=True, dtype="float64"),
          "gru": lambda: rnn.GRU(5, 2, bidirectional=True, layout="NTC", dtype="float64")}


def run(layer, x, states, heads):
    xk = kiln.np.array(x)
    xk.attach_grad()
    sk = [kiln.np.array(s) for s in states]
    for s in sk:
        s.attach_grad()
    with autograd.record():
        out, new = layer(xk, sk)
        loss = (out * kiln.np.array(heads[0])).sum()
        for s, h in zip(new, heads[1:]):
            loss = loss + (s * kiln.np.array(h)).sum()
    loss.backward()
    params = layer.collect_params()
    return ([out.asnumpy()] + [s.asnumpy() for s in new] + [xk.grad.asnumpy()]
            + [s.grad.asnumpy() for s in sk]
            + [params[k].grad().asnumpy() for k in sorted(params.keys())])


@pytest.mark.parametrize("mode", sorted(LAYERS))
def test_fused_layer_equals_op_by_op_loop(mode, monkeypatch):
    layer = LAYERS[mode]()
    layer.initialize(kiln.init.Uniform(0.5))
    rng = np.random.default_rng(0)
    x = rng.normal(size=(4, 3, 7))           # TNC (3 steps of batch 4 for NTC)
    layer(kiln.np.array(x))                  # deferred input size
    infos = layer.state_info(x.shape[layer._layout.find("N")])
    states = [rng.normal(size=i["shape"]) * 0.5 for i in infos]
    t_len = x.shape[layer._layout.find("T")]
    out_shape = list(x.shape)
    out_shape[2] = 5 * layer._dir
    heads = [rng.normal(size=out_shape)] + [rng.normal(size=s.shape) for s in states]
    calls = []
    real = fused_eager.run
    monkeypatch.setattr(fused_eager, "run", lambda *a: calls.append(1) or real(*a))
    fused = run(layer, x, states, heads)
    assert len(calls) == layer._num_layers * layer._dir, "the fused loop was not used"
    monkeypatch.setattr(fused_eager, "supported", lambda *a: False)
    loop = run(layer, x, states, heads)
    assert len(calls) == layer._num_layers * layer._dir
    assert t_len > 1
    for got, want in zip(fused, loop):
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)


def test_float16_layer_keeps_the_op_by_op_loop(monkeypatch):
    layer = rnn.GRU(3, dtype="float16")
    layer.initialize()
    monkeypatch.setattr(fused_eager, "run", lambda *a: pytest.fail("fused loop in float16"))
    out = layer(kiln.np.ones((2, 2, 4), dtype="float16"))
    assert out.shape == (2, 2, 3) and out.dtype == np.float16
