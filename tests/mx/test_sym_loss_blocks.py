"""Losses called on Symbols become MXNet ops (as their hybrid_forward with F = symbol), so the
symbol saves to JSON and loads back, and computes what the loss block computes eagerly."""
import numpy as np
import pytest

from kiln import gluon
from kiln.mx import nd, sym


@pytest.mark.parametrize("loss, label", [
    (gluon.loss.SoftmaxCrossEntropyLoss(), np.array([1, 0, 3], np.float32)),
    (gluon.loss.SoftmaxCrossEntropyLoss(sparse_label=False, weight=2.0),
     np.eye(4, dtype=np.float32)[[2, 1, 0]]),
    (gluon.loss.L2Loss(), np.ones((3, 4), np.float32)),
    (gluon.loss.L1Loss(weight=0.5), np.zeros((3, 4), np.float32)),
])
def test_loss_symbol_saves_and_computes_the_eager_loss(loss, label):
    pred = np.random.default_rng(0).standard_normal((3, 4)).astype(np.float32)
    weight = np.array([[1.0], [0.5], [2.0]], np.float32)
    expected = loss(nd.array(pred), nd.array(label), nd.array(weight)).asnumpy()
    s = loss(sym.var("pred"), sym.var("label"), sym.var("w"))
    again = sym.load_json(s.tojson())
    out = again.eval(pred=nd.array(pred), label=nd.array(label), w=nd.array(weight))[0]
    np.testing.assert_allclose(out.asnumpy(), expected, rtol=1e-5, atol=1e-6)
