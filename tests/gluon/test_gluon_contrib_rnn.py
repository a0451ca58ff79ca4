"""gluon.contrib.rnn.LSTMPCell equals MXNet 1.9.1's (outputs, states, input gradient;
fixture made with MXNet), VariationalDropoutCell keeps one mask per sequence, and
gluon.contrib.data.IntervalSampler yields MXNet's order."""
import os

import numpy as onp
import pytest

from kiln import autograd
from kiln import np
from kiln.base import KilnError
from kiln.gluon import rnn as grnn
from kiln.gluon.contrib import rnn
from kiln.gluon.contrib.data import IntervalSampler
from paths import FIXTURES

FIXTURE = onp.load(os.path.join(FIXTURES, "mxnet_infra",
                                "contrib_rnn.npz"))


@pytest.mark.parametrize("hybrid", [False, True])
def test_lstmp_cell_equals_mxnets(hybrid):
    cell = rnn.LSTMPCell(4, 3, input_size=5)
    cell.initialize()
    params = cell.collect_params()
    assert sorted(params) == sorted(k[len("param/"):] for k in FIXTURE if
                                    k.startswith("param/"))
    for name, p in params.items():
        p.set_data(np.array(FIXTURE["param/" + name]))
    if hybrid:
        cell.hybridize()
    x = np.array(FIXTURE["x"])
    x.attach_grad()
    with autograd.record():
        outputs, states = cell.unroll(6, x, [np.array(FIXTURE["begin0"]),
                                             np.array(FIXTURE["begin1"])],
                                      layout="NTC", merge_outputs=True)
        total = (outputs * outputs).sum() + states[1].sum()
    total.backward()
    for got, key in ((outputs, "outputs"), (states[0], "state0"), (states[1], "state1"),
                     (x.grad, "grad")):
        onp.testing.assert_allclose(got.asnumpy(), FIXTURE[key], rtol=1e-5, atol=1e-6)


def test_variational_dropout_shares_masks_over_time():
    base = grnn.RNNCell(6, activation="relu", input_size=4, i2h_weight_initializer="ones",
                        h2h_weight_initializer="zeros")
    cell = rnn.VariationalDropoutCell(base, drop_inputs=0.5, drop_outputs=0.5)
    cell.initialize()
    x = np.ones((3, 5, 4))
    with autograd.train_mode():
        out, _ = cell.unroll(5, x, merge_outputs=True)
    dropped = out.asnumpy() == 0
    assert dropped.any() and not dropped.all()
    assert (dropped == dropped[:, :1, :]).all()          # the same units at every step
    with autograd.train_mode():
        again, _ = cell.unroll(5, x, merge_outputs=True)  # a new sequence: new masks
    assert not onp.array_equal(again.asnumpy() == 0, dropped)
    plain, _ = cell.unroll(5, x, merge_outputs=True)      # predict mode: nothing dropped
    assert (plain.asnumpy() > 0).all()
    with pytest.raises(KilnError, match="BidirectionalCell"):
        rnn.VariationalDropoutCell(grnn.BidirectionalCell(grnn.RNNCell(2), grnn.RNNCell(2)),
                                   drop_states=0.5)


def test_interval_sampler():
    assert list(IntervalSampler(7, 3)) == FIXTURE["interval_rollover"].tolist()
    once = IntervalSampler(7, 3, rollover=False)
    assert list(once) == FIXTURE["interval_once"].tolist() and len(once) == 3
    with pytest.raises(KilnError, match="interval"):
        IntervalSampler(3, 3)


CONV_CELLS = {
    "conv2d_lstm": lambda: rnn.Conv2DLSTMCell((3, 6, 6), 4, 3, 3, i2h_pad=1),
    "conv1d_gru": lambda: rnn.Conv1DGRUCell((2, 7), 3, 3, (5,), i2h_dilate=2),
    "conv3d_rnn": lambda: rnn.Conv3DRNNCell((2, 4, 4, 4), 2, (3, 3, 3), 1, activation="relu"),
}


@pytest.mark.parametrize("case", sorted(CONV_CELLS))
def test_conv_cells_equal_mxnets(case):
    cell = CONV_CELLS[case]()
    cell.initialize()
    params = cell.collect_params()
    prefix = f"{case}/param/"
    assert sorted(params) == sorted(k[len(prefix):] for k in FIXTURE if k.startswith(prefix))
    for name, p in params.items():
        p.set_data(np.array(FIXTURE[prefix + name]))
    x = np.array(FIXTURE[f"{case}/x"])
    x.attach_grad()
    with autograd.record():
        outputs, states = cell.unroll(3, x, layout="NTC", merge_outputs=True)
        total = (outputs * outputs).sum() + states[-1].sum()
    total.backward()
    for got, key in ((outputs, "outputs"), (states[-1], "state"), (x.grad, "grad")):
        onp.testing.assert_allclose(got.asnumpy(), FIXTURE[f"{case}/{key}"], rtol=1e-4,
                                    atol=1e-5)
    with pytest.raises(KilnError, match="odd"):
        rnn.Conv2DRNNCell((3, 6, 6), 4, 3, 2)


@pytest.mark.parametrize("layout", ["TNC", "NTC"])
def test_dynamic_unroll_equals_unroll(layout):
    cell = grnn.LSTMCell(5, input_size=3)
    cell.initialize()
    x = np.array(onp.random.RandomState(4).randn(4, 2, 3).astype(onp.float32))  # T, N, C
    if layout == "NTC":
        x = np.swapaxes(x, 0, 1)
    begin = cell.begin_state(batch_size=2)
    lengths = np.array([4.0, 2.0])
    out, states = rnn.dynamic_unroll(cell, x, begin, layout=layout, valid_length=lengths)
    ref, ref_states = cell.unroll(4, x, begin, layout=layout, merge_outputs=True,
                                  valid_length=lengths)
    onp.testing.assert_allclose(out.asnumpy(), ref.asnumpy(), rtol=1e-5, atol=1e-6)
    for s, r in zip(states, ref_states):
        onp.testing.assert_allclose(s.asnumpy(), r.asnumpy(), rtol=1e-5, atol=1e-6)
    plain, _ = rnn.dynamic_unroll(cell, x, begin, layout=layout)
    full, _ = cell.unroll(4, x, begin, layout=layout, merge_outputs=True)
    onp.testing.assert_allclose(plain.asnumpy(), full.asnumpy(), rtol=1e-5, atol=1e-6)


def test_dynamic_unroll_hybridized_equals_eager():
    from kiln import gluon

    class Net(gluon.HybridBlock):
        def __init__(self):
            super().__init__()
            self.cell = grnn.GRUCell(4, input_size=3)

        def forward(self, x, lengths):
            begin = [np.zeros((x.shape[1], 4))]
            out, _ = rnn.dynamic_unroll(self.cell, x, begin, valid_length=lengths)
            return out

    net = Net()
    net.initialize()
    x = np.array(onp.random.RandomState(5).randn(5, 2, 3).astype(onp.float32))
    lengths = np.array([5.0, 3.0])
    eager = net(x, lengths).asnumpy()
    net.hybridize(strict=True)
    onp.testing.assert_allclose(net(x, lengths).asnumpy(), eager, rtol=1e-5, atol=1e-6)
    assert (eager[3:, 1] == 0).all()
