"""gluon.rnn cells: unrolled with a layer's weights they give the layer's outputs, states
and gradients; valid_length, merge_outputs, the modifier and container cells."""
import numpy as onp
import pytest

from kiln import np
from kiln import autograd
from kiln.gluon import rnn

pytestmark = pytest.mark.filterwarnings("ignore::kiln.graph.capture.KilnTraceWarning")

T, N, C, H = 4, 3, 5, 6
LAYERS = {"lstm": (rnn.LSTM, rnn.LSTMCell), "gru": (rnn.GRU, rnn.GRUCell),
          "rnn_tanh": (rnn.RNN, rnn.RNNCell)}


def layer_of(mode, **kwargs):
    cls = LAYERS[mode][0]
    extra = {"activation": "tanh"} if mode == "rnn_tanh" else {}
    layer = cls(H, **kwargs, **extra)
    layer.initialize()
    return layer


def cell_from(layer, mode, prefix):
    cell = LAYERS[mode][1](H)
    cell.initialize()
    for name in ("i2h_weight", "h2h_weight", "i2h_bias", "h2h_bias"):
        src = getattr(layer, f"{prefix}_{name}").data()
        getattr(cell, name).set_data(src + 0)
    return cell


def inputs(seed=0):
    rng = onp.random.default_rng(seed)
    return np.array(rng.normal(size=(T, N, C)).astype("float32"))


def close(a, b):
    onp.testing.assert_allclose(a.asnumpy(), b.asnumpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("mode", sorted(LAYERS))
def test_cell_unroll_matches_layer_with_gradients(mode):
    layer = layer_of(mode)
    x = inputs()
    x.attach_grad()
    with autograd.record():
        want, want_states = layer(x, layer.begin_state(N))
        (want ** 2).sum().backward()
    want_grad = x.grad.asnumpy().copy()
    cell = cell_from(layer, mode, "l0")
    x2 = np.array(x.asnumpy())
    x2.attach_grad()
    with autograd.record():
        got, states = cell.unroll(T, x2, layout="TNC", merge_outputs=True)
        (got ** 2).sum().backward()
    close(got, want)
    for s, w in zip(states, want_states):
        close(s, w[0])
    onp.testing.assert_allclose(x2.grad.asnumpy(), want_grad, rtol=1e-5, atol=1e-6)


def test_sequential_cells_match_two_layers_and_ntc_layout():
    layer = layer_of("lstm", num_layers=2, layout="NTC")
    x = np.swapaxes(inputs(), 0, 1)
    want, want_states = layer(x, layer.begin_state(N))
    seq = rnn.SequentialRNNCell()
    seq.add(cell_from(layer, "lstm", "l0"))
    seq.add(cell_from(layer, "lstm", "l1"))
    got, states = seq.unroll(T, x, layout="NTC", merge_outputs=True)
    close(got, want)
    # states: [h0, c0, h1, c1] against the layer's [h (2, N, H), c (2, N, H)]
    for k, s in enumerate(states):
        close(s, want_states[k % 2][k // 2])


def test_bidirectional_cell_matches_bidirectional_layer():
    layer = layer_of("gru", bidirectional=True)
    x = inputs()
    want, want_states = layer(x, layer.begin_state(N))
    bi = rnn.BidirectionalCell(cell_from(layer, "gru", "l0"), cell_from(layer, "gru", "r0"))
    got, states = bi.unroll(T, x, layout="TNC", merge_outputs=True)
    close(got, want)
    close(states[0], want_states[0][0])
    close(states[1], want_states[0][1])
    with pytest.raises(NotImplementedError):
        bi(x[0], states)


def test_valid_length_masks_outputs_and_keeps_last_valid_states():
    for bidirectional in (False, True):
        cell = rnn.LSTMCell(H)
        if bidirectional:
            cell = rnn.BidirectionalCell(cell, rnn.LSTMCell(H))
        cell.initialize()
        x = np.swapaxes(inputs(1), 0, 1)               # NTC
        lengths = [4, 2, 3]
        out, states = cell.unroll(T, x, layout="NTC", merge_outputs=True,
                                  valid_length=np.array(lengths, dtype="float32"))
        for n, length in enumerate(lengths):   # each sequence alone, cut to its length
            alone, alone_states = cell.unroll(length, x[n:n + 1, :length], layout="NTC",
                                              merge_outputs=True)
            close(out[n:n + 1, :length], alone)
            assert not out[n, length:].asnumpy().any()
            for s, a in zip(states, alone_states):
                close(s[n:n + 1], a)


def test_merge_outputs_and_list_inputs():
    cell = rnn.GRUCell(H)
    cell.initialize()
    x = inputs()
    merged, _ = cell.unroll(T, x, layout="TNC", merge_outputs=True)
    listed, _ = cell.unroll(T, [x[t] for t in range(T)], layout="TNC", merge_outputs=False)
    assert isinstance(listed, list) and len(listed) == T
    for t in range(T):
        close(listed[t], merged[t])


def test_residual_zoneout_dropout_cells():
    base = rnn.RNNCell(C)
    base.initialize()
    x = inputs()
    plain, _ = base.unroll(T, x, layout="TNC", merge_outputs=True)
    residual = rnn.ResidualCell(base)
    out, _ = residual.unroll(T, x, layout="TNC", merge_outputs=True)
    close(out, plain + x)
    with pytest.raises(RuntimeError):
        base.begin_state(N)          # a modified cell's states come from its modifier
    assert len(residual.begin_state(batch_size=N)) == 1
    zone = rnn.ZoneoutCell(rnn.LSTMCell(H), zoneout_outputs=0.5, zoneout_states=0.5)
    zone.initialize()
    inner = zone.base_cell
    outs, _ = zone.unroll(T, x, layout="TNC", merge_outputs=True)   # predict: no zoneout
    inner._modified = False
    want, _ = inner.unroll(T, x, layout="TNC", merge_outputs=True)
    close(outs, want)
    with autograd.record():              # training: each element is new or the previous one
        states = zone.begin_state(batch_size=N)
        zone.reset()
        prev = np.zeros((N, H))
        for t in range(T):
            new, _ = inner(x[t], states)
            out, states = zone(x[t], states)
            o, n_, p = out.asnumpy(), new.asnumpy(), prev.asnumpy()
            assert ((o == n_) | (o == p)).all()
            prev = out
    drop = rnn.DropoutCell(0.5)
    out, _ = drop.unroll(T, x, layout="TNC", merge_outputs=True)
    close(out, x)
    with pytest.raises(ValueError):
        rnn.ZoneoutCell(rnn.BidirectionalCell(rnn.GRUCell(H), rnn.GRUCell(H)))


@pytest.mark.parametrize("backend", ["c", "numpy"])
def test_hybridized_cell_step_equals_eager(backend):
    cell = rnn.LSTMCell(H, input_size=C)
    cell.initialize()
    x = inputs()[0]
    states = cell.begin_state(batch_size=N)
    want, want_states = cell(x, states)
    cell.hybridize(backend=backend)
    got, got_states = cell(x, states)
    close(got, want)
    for a, b in zip(got_states, want_states):
        close(a, b)


def test_hybridized_zoneout_cell_unrolls_again_under_record():
    """Hybridized, each new signature traces the step anew: the previous output the cell
    keeps between eager steps must not carry one trace's value into the next."""
    zone = rnn.ZoneoutCell(rnn.LSTMCell(H, input_size=C), 0.5, 0.2)
    zone.initialize()
    x = np.array(inputs().asnumpy().swapaxes(0, 1))       # (N, T, C)
    x.attach_grad()
    zone.hybridize()
    with autograd.record():
        out = zone.unroll(T, x, merge_outputs=False)[0]
        autograd.backward(out)
        out = zone.unroll(T, x, merge_outputs=True)[0]
        out.backward()
    assert out.shape == (N, T, H)


@pytest.mark.parametrize("mode", sorted(LAYERS))
def test_unfused_layer_shares_parameters_and_outputs(mode):
    """LSTM/GRU/RNN._unfuse (MXNet's): a stack of l{i}_/r{i}_ cells over the layer's own
    Parameters, DropoutCells between layers, computing the layer's function."""
    layer = layer_of(mode, num_layers=2, bidirectional=True, input_size=C, prefix="net_")
    stack = layer._unfuse()
    assert sorted(stack.collect_params().keys()) == sorted(layer.collect_params().keys())
    x = inputs()
    want = layer(x)
    got, _ = stack.unroll(T, x, layout="TNC", merge_outputs=True)
    close(got, want)
    unnamed = layer_of(mode, num_layers=3, dropout=0.3)
    kinds = [type(c).__name__ for c in unnamed._unfuse()._children.values()]
    assert kinds == [LAYERS[mode][1].__name__, "DropoutCell"] * 2 + [LAYERS[mode][1].__name__]
    assert unnamed._unfuse()[0].i2h_weight is unnamed.l0_i2h_weight
