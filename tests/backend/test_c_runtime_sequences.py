"""Generated C with run-time sizes for sequence models: a transformer encoder layer over
batch x length pairs, batched matmuls of run-time batch and inner size, and (hybridized)
recurrent layers over sequences of any length; each at most two programs, equal to eager
code at every size tried (0 and 1 included, where the model takes them)."""
import warnings

import numpy as onp
import pytest

import kiln
from kiln import np, npx
from kiln.backend.c import build
from kiln.gluon import nn
from dynamic_models import model

pytestmark = [pytest.mark.skipif(not build.available(), reason="no C compiler"),
              pytest.mark.filterwarnings("ignore::kiln.graph.capture.KilnTraceWarning")]


def _sized(listing):
    return [p for p in listing.programs
            if type(p.entry.program).__name__ == "SizedCProgram"]


def _same_as_eager(compiled, eager, x, rtol=1e-4, atol=1e-4):
    """compiled(x) equals eager(x), or both raise kiln's error (softmax over no keys)."""
    try:
        want = eager(x).asnumpy()
    except kiln.KilnError:
        with pytest.raises(kiln.KilnError):
            compiled(x)
        return
    got = compiled(x).asnumpy()
    assert got.shape == want.shape
    onp.testing.assert_allclose(got, want, rtol=rtol, atol=atol)


def test_an_encoder_layer_over_batch_and_length_pairs_compiles_at_most_two_programs():
    """Attention's kernel takes its matrix count and lengths at run time, loop merging
    and the gathering of gradient pieces no longer ask whether a run-time size is 1."""
    net, _, _ = model("encoder")
    eager, _, _ = model("encoder")
    net.hybridize(backend="c")
    rng = onp.random.RandomState(0)
    pairs = [(b, s) for b in (1, 2, 3, 5) for s in (1, 4, 7)] + [(4, 9), (0, 3), (3, 0),
                                                                  (24, 33)]
    rng.shuffle(pairs)
    for b, s in pairs:
        _same_as_eager(net, eager, np.array(rng.randn(b, s, 16).astype("float32")))
    listing = kiln.programs(net)
    assert len(listing) <= 2, str(listing)
    assert len(_sized(listing)) == 1
    for b, s in [(6, 5), (1, 1), (2, 40)]:          # served again, nothing new
        _same_as_eager(net, eager, np.array(rng.randn(b, s, 16).astype("float32")))
    assert len(kiln.programs(net)) == len(listing)


def test_an_encoder_layer_whose_batch_varies_before_its_length_makes_two_programs():
    """Once any size varies the next program has every size symbolic (the trace pins only
    what it needs), so a length that varies later is served by it too."""
    net, _, _ = model("encoder")
    eager, _, _ = model("encoder")
    net.hybridize(backend="c")
    rng = onp.random.RandomState(3)
    for b, s in [(1, 8), (2, 8), (5, 8), (2, 16), (8, 33), (3, 5)]:
        _same_as_eager(net, eager, np.array(rng.randn(b, s, 16).astype("float32")))
    listing = kiln.programs(net)
    assert len(listing) == 2 and len(_sized(listing)) == 1, str(listing)
    builds = net._kiln_cached.policy.builds
    assert [b.why.split(":")[0] for b in builds] == [
        "first call of this kind (structure, dtypes, ranks, mode, gradients)",
        "sizes changed"]


class FusedQKV(nn.HybridBlock):
    """BERT's way: one projection for queries, keys and values, split by indexing a
    (3, batch, heads, length, d) array (bench/transformer_models.py's BertLayer)."""

    def __init__(self, hidden=16, heads=2):
        super().__init__()
        self.hidden, self.heads = hidden, heads
        self.qkv = nn.Dense(3 * hidden, flatten=False, in_units=hidden)

    def forward(self, x):
        b, t, _ = x.shape
        d = self.hidden // self.heads
        qkv = self.qkv(x).reshape(b, t, 3, self.heads, d).transpose(2, 0, 3, 1, 4)
        q, k, v = qkv[0], qkv[1], qkv[2]
        att = np.matmul(npx.softmax(np.matmul(q, k.transpose(0, 1, 3, 2)), axis=-1), v)
        return att.transpose(0, 2, 1, 3).reshape(b, t, self.hidden) + x


def test_indexing_a_symbolic_array_and_dropping_reshapes_need_no_size_values():
    """qkv[0] slices the whole of every symbolic axis, and the reshape simplification
    compares shapes without guards: one program for every batch and length."""
    made = []
    for _ in range(2):
        m = FusedQKV()
        m.initialize()
        made.append(m)
    net, eager = made
    for p, q in zip(eager.collect_params().values(), net.collect_params().values()):
        q.set_data(p.data())
    net.hybridize(backend="c", dynamic_axes={0: {0: "batch", 1: "seq"}})
    rng = onp.random.RandomState(4)
    for b, s in [(2, 3), (3, 5), (1, 1), (4, 9), (1, 6)]:
        _same_as_eager(net, eager, np.array(rng.randn(b, s, 16).astype("float32")))
    listing = kiln.programs(net)
    assert len(listing) == 1 and len(_sized(listing)) == 1, str(listing)


BATCHED = {
    "x times its transpose": lambda x: np.matmul(x, x.transpose(0, 2, 1)) + 1,
    "x transposed times x (run-time inner size)": lambda x: np.matmul(
        x.transpose(0, 2, 1) * 2, x),
    "scores times values": lambda x: np.matmul(np.tanh(np.matmul(x, x.transpose(0, 2, 1))),
                                               x),
}


@pytest.mark.parametrize("name", sorted(BATCHED))
def test_batched_matmuls_of_run_time_batch_and_inner_size(name):
    f = BATCHED[name]
    g = kiln.hybridize(f, backend="c", dynamic_axes={"x": {0: "batch", 1: "seq"}})
    rng = onp.random.RandomState(3)
    for b, s in [(2, 3), (3, 5), (1, 1), (0, 2), (2, 0), (16, 40), (1, 7)]:
        _same_as_eager(g, f, np.array(rng.randn(b, s, 24).astype("float32")))
    # (empty inputs have guards of their own: a transpose view of no elements)
    listing = kiln.programs(g)
    assert len(listing) <= 2 and len(_sized(listing)) == len(listing), str(listing)


def test_batched_matmuls_of_run_time_sizes_run_on_onednn_per_call():
    """Scores times values over (batch, heads, length, d): one oneDNN op per call's sizes
    from the call site's cache (dnnl_dense.sized_batched), kiln's loop where there is
    none or the product is small; equal to eager at every size."""
    from kiln.backend import dnnl

    def f(p, v):
        return np.matmul(p, v) * 0.5
    g = kiln.hybridize(f, backend="c", dynamic_axes={"p": {0: "batch", 2: "seq", 3: "seq"},
                                                     "v": {0: "batch", 2: "seq"}})
    rng = onp.random.RandomState(8)
    for b, s in [(2, 9), (8, 32), (1, 1), (0, 5), (3, 0), (4, 70), (1, 64)]:
        p = np.array(rng.randn(b, 4, s, s).astype("float32"))
        v = np.array(rng.randn(b, 4, s, 48).astype("float32"))
        got, want = g(p, v).asnumpy(), f(p, v).asnumpy()
        assert got.shape == want.shape
        onp.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
    listing = kiln.programs(g)
    assert len(listing) <= 2 and len(_sized(listing)) == len(listing), str(listing)
    if dnnl.available():
        assert all("kiln_dense_batched(P[" in p.entry.program.source for p in _sized(listing))


def test_a_symbolic_build_failing_on_the_call_itself_leaves_later_sizes_symbolic():
    """A first varying size at which eager code fails too (softmax over no keys) raises
    the same error and does not make later sizes specialize."""
    net, _, _ = model("encoder")
    eager, _, _ = model("encoder")
    net.hybridize(backend="c")
    rng = onp.random.RandomState(1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for b, s in [(2, 3), (0, 3), (3, 5), (1, 2), (7, 2)]:
            _same_as_eager(net, eager, np.array(rng.randn(b, s, 16).astype("float32")))
    listing = kiln.programs(net)
    assert len(listing) == 2 and len(_sized(listing)) == 1, str(listing)
    assert not listing.refused


def _lstm_twins(hidden=16, layers=2, input_size=8):
    from kiln.gluon import rnn
    made = []
    for _ in range(2):
        m = rnn.LSTM(hidden, num_layers=layers, input_size=input_size)
        m.initialize()
        made.append(m)
    net, eager = made
    for p, q in zip(eager.collect_params().values(), net.collect_params().values()):
        q.set_data(p.data())
    return net, eager


def test_a_two_layer_lstm_over_lengths_1_to_100_compiles_at_most_two_programs():
    """scan's shape rule keeps a run-time length symbolic, its result's pieces are windows
    of symbolic size, and the C loop takes its trip count at run time."""
    net, eager = _lstm_twins()
    net.hybridize(backend="c")
    rng = onp.random.RandomState(0)
    for length in range(1, 101):
        x = np.array(rng.randn(length, 3, 8).astype("float32"))
        _same_as_eager(net, eager, x, rtol=1e-4, atol=1e-5)
    listing = kiln.programs(net)
    assert len(listing) <= 2, str(listing)
    (sized,) = _sized(listing)
    assert len(sized.signatures) == 99            # length 1 specialized first


def test_lstm_whose_step_runs_on_onednn_serves_every_length():
    """A batch of 16 runs the step's matmuls on oneDNN ops of fixed shape, which serve
    every length (heavy.op_slot pins only ops of run-time shapes)."""
    net, eager = _lstm_twins(hidden=128, input_size=64)
    net.hybridize(backend="c")
    rng = onp.random.RandomState(6)
    for length in (3, 5, 1, 12, 2):
        x = np.array(rng.randn(length, 16, 64).astype("float32"))
        _same_as_eager(net, eager, x, rtol=1e-4, atol=1e-5)
    listing = kiln.programs(net)
    assert len(listing) == 2 and len(_sized(listing)) == 1, str(listing)


@pytest.mark.parametrize("lengths", [(0, 4, 1, 7), (6, 2, 0, 1, 3)])
def test_lstm_lengths_including_0_and_1_equal_eager(lengths):
    net, eager = _lstm_twins(hidden=6, input_size=5)
    net.hybridize(backend="c", dynamic_axes={0: {0: "length"}})
    rng = onp.random.RandomState(len(lengths))
    for length in lengths + lengths[::-1]:
        x = np.array(rng.randn(length, 2, 5).astype("float32"))
        _same_as_eager(net, eager, x, rtol=1e-4, atol=1e-5)
    assert len(kiln.programs(net)) <= 2


def test_lstm_training_at_varying_lengths_equals_eager():
    """The compiled training step keeps the length symbolic: scan_grad's pieces of its flat
    result are windows of symbolic size, so forward and backward loop a run-time count."""
    from kiln import autograd
    net, eager = _lstm_twins(hidden=8, input_size=5)
    net.hybridize(backend="c")
    rng = onp.random.RandomState(5)
    for length in (3, 5, 1, 9, 2, 17, 4):
        x = np.array(rng.randn(length, 2, 5).astype("float32"))
        grads = []
        for m in (eager, net):
            x.attach_grad()
            with autograd.record():
                y = (m(x) ** 2).sum()
            y.backward()
            grads.append([x.grad.asnumpy()] + [p.grad().asnumpy().copy()
                                               for p in m.collect_params().values()])
            for p in m.collect_params().values():
                p.zero_grad()
        for want, got in zip(*grads):
            onp.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
    listing = kiln.programs(net)
    assert len(listing) <= 2 and len(_sized(listing)) == 1, str(listing)


def _gru_twins():
    from kiln.gluon import rnn
    net, eager = rnn.GRU(16, num_layers=2, input_size=8), rnn.GRU(16, num_layers=2,
                                                                   input_size=8)
    for m in (net, eager):
        m.initialize()
    for p, q in zip(eager.collect_params().values(), net.collect_params().values()):
        q.set_data(p.data())
    return net, eager


def test_a_gru_of_symbolic_batch_runs_its_scan_body_on_run_time_sizes():
    """The scan body's C functions read the batch from the sizes table: buffers sized by
    the batch grow for a larger one (a body planned for the first batch wrote past its
    buffers at a larger one), and one program serves batches and lengths in any order,
    forward and training, equal to eager."""
    from kiln import autograd
    net, eager = _gru_twins()
    net.hybridize(backend="c", dynamic=True)
    rng = onp.random.RandomState(8)
    for length, batch in [(4, 3), (4, 5), (7, 33), (2, 64), (5, 2), (3, 4), (9, 17)]:
        x = np.array(rng.randn(length, batch, 8).astype("float32"))
        h = np.array(rng.randn(2, batch, 16).astype("float32"))
        results = []
        for m in (eager, net):
            x.attach_grad()
            with autograd.record():
                out, (state,) = m(x, h)
                y = (out ** 2).sum() + state.sum()
            y.backward()
            results.append([out.asnumpy(), state.asnumpy(), x.grad.asnumpy()]
                           + [p.grad().asnumpy().copy() for p in m.collect_params().values()])
            for p in m.collect_params().values():
                p.zero_grad()
        for want, got in zip(*results):
            onp.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
        out, (state,) = net(x, h)
        onp.testing.assert_allclose(out.asnumpy(), results[0][0], rtol=1e-4, atol=1e-5)
    listing = kiln.programs(net)
    assert len(listing) == 2 and len(_sized(listing)) == 2, str(listing)
    assert not listing.refused
