"""nd.RNN, MXNet's fused recurrent op: the same outputs and final states as kiln's gluon.rnn
layers (checked against PyTorch in test_gluon_rnn_torch.py) given the same weights packed
as MXNet packs them; gradients against finite differences; hybridized equal to eager. (The
first values were also compared with MXNet 1.9.1's nd.RNN on the same inputs: equal to
float32 rounding.)"""
import numpy as onp
import pytest

import kiln
from kiln import nd
from kiln.fuzz.compare import compare
from kiln.gluon import rnn
from conftest import assert_close
from test_nd_legacy_names import check_grad

T, N, C, H = 4, 2, 3, 5
LAYERS = {"lstm": rnn.LSTM, "gru": rnn.GRU, "rnn_tanh": rnn.RNN, "rnn_relu": rnn.RNN}


def _layer(mode, layers, bidirectional):
    kw = {"activation": mode[4:]} if mode.startswith("rnn") else {}
    net = LAYERS[mode](H, num_layers=layers, bidirectional=bidirectional, input_size=C, **kw)
    net.initialize(kiln.init.Uniform(0.5))
    return net


def _packed(net, layers, dirs):
    params = net.collect_params()

    def get(suffix):
        return next(p.data() for n, p in params.items() if n.endswith(suffix))
    parts = [get(f"{d}{layer}_{part}_{kind}").reshape(-1)
             for kind in ("weight", "bias") for layer in range(layers)
             for d in "lr"[:dirs] for part in ("i2h", "h2h")]
    return nd.concat(*parts, dim=0)


@pytest.mark.parametrize("mode", sorted(LAYERS))
@pytest.mark.parametrize("layers,bidirectional", [(1, False), (2, True)])
def test_equals_the_gluon_layer(mode, layers, bidirectional):
    dirs = 2 if bidirectional else 1
    net = _layer(mode, layers, bidirectional)
    rng = onp.random.default_rng(0)
    x = nd.array(rng.uniform(-1, 1, (T, N, C)))
    states = [nd.array(rng.uniform(-1, 1, (layers * dirs, N, H)))
              for _ in range(2 if mode == "lstm" else 1)]
    expected, expected_states = net(x, states)
    out = nd.RNN(x, _packed(net, layers, dirs), *states, state_size=H, num_layers=layers,
                 bidirectional=bidirectional, mode=mode, state_outputs=True)
    assert_close(out[0], expected, rtol=1e-5, atol=1e-6)
    for got, want in zip(out[1:], expected_states):
        assert_close(got, want, rtol=1e-5, atol=1e-6)
    plain = nd.RNN(x, _packed(net, layers, dirs), *states, state_size=H, num_layers=layers,
                   bidirectional=bidirectional, mode=mode)
    assert_close(plain, expected, rtol=1e-5, atol=1e-6)


def test_gradients_and_hybridized():
    rng = onp.random.default_rng(1)
    n_params = 4 * H * (C + H) + 2 * 4 * H

    def f(x, params, h, c):
        return nd.RNN(x, params, h, c, state_size=H, num_layers=1, mode="lstm")
    inputs = [rng.uniform(-1, 1, (3, 2, C)), rng.uniform(-0.5, 0.5, n_params),
              rng.uniform(-1, 1, (1, 2, H)), rng.uniform(-1, 1, (1, 2, H))]
    check_grad(f, *inputs)
    findings = compare(f, [nd.array(v) for v in inputs], strict=True)
    assert not findings, "\n".join(map(repr, findings))


def test_bad_parameter_count_is_a_clear_error():
    with pytest.raises(kiln.KilnError, match="parameters must be a vector of"):
        nd.RNN(nd.ones((T, N, C)), nd.ones(7), nd.ones((1, N, H)), state_size=H, mode="gru")
