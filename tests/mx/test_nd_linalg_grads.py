"""nd.linalg's factorizations and solves (potrf, potri, trsm, inverse, det, slogdet, gelqf,
syevd): outputs and gradients as MXNet 1.9.1's. The expected values in
fixtures/mxnet/linalg_grads.json were printed by MXNet 1.9.1 for these inputs and this loss
(each output weighted by 0.3 + 0.1 * its flat index, summed), float64."""
import json
import os

import numpy as np
import pytest

from kiln import autograd, nd, sym
import kiln
from paths import FIXTURES

with open(os.path.join(FIXTURES, "mxnet", "linalg_grads.json")) as f:
    MXNET = json.load(f)

A = np.array([[4., 1., 0.5], [1., 3., 0.2], [0.5, 0.2, 2.]])
T = np.array([[2., 0., 0.], [0.5, 1.5, 0.], [-0.3, 0.4, 1.2]])
B = np.array([[1., 2.], [0.5, -1.], [0.3, 0.7]])
W = np.array([[0.3, -0.2, 0.5], [0.1, 0.4, -0.6], [0.7, 0.2, 0.9]])
R = np.array([[1., 2., 0.5], [0.3, -1., 0.8]])
la = nd.linalg
CASES = {
    "potrf": (lambda a: la.potrf(a), [A]),
    "potrf_upper": (lambda a: la.potrf(a, lower=False), [A]),
    "potri": (lambda t: la.potri(t), [T]),
    "trsm": (lambda t, b: la.trsm(t, b, alpha=2.0), [T, B]),
    "trsm_tr_right": (lambda t, b: la.trsm(t, b, transpose=True, rightside=True, alpha=0.5),
                      [T, B.T]),
    "inverse": (lambda a: la.inverse(a), [W]),
    "det": (lambda a: la.det(a), [W]),
    "slogdet": (lambda a: la.slogdet(a)[1], [W]),
    "gelqf": (lambda a: la.gelqf(a), [R]),
    "syevd": (lambda a: la.syevd(a), [A]),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_outputs_and_gradients_match_mxnet(case):
    fn, inputs = CASES[case]
    arrays = [nd.array(x, dtype="float64") for x in inputs]
    for a in arrays:
        a.attach_grad()
    with autograd.record():
        outs = fn(*arrays)
        outs = list(outs) if isinstance(outs, (list, tuple)) else [outs]
        loss = sum((o * nd.array(np.arange(o.size).reshape(o.shape) * 0.1 + 0.3,
                                 dtype="float64")).sum() for o in outs)
    loss.backward()
    for got, want in zip(outs, MXNET[case]["outputs"]):
        np.testing.assert_allclose(got.asnumpy(), want, atol=2e-6)
    for a, want in zip(arrays, MXNET[case]["grads"]):
        np.testing.assert_allclose(a.grad.asnumpy(), want, atol=2e-6)


def test_symbol_shape_inference_does_not_factor_placeholder_zeros():
    """MXNet infers shapes without computing: a potrf node's shapes come although zeros
    have no Cholesky factor, and a bound potrf still computes (and checks) the values."""
    y = sym.linalg.potrf(sym.Variable("a"))
    assert y.infer_shape(a=(2, 3, 3))[1] == [(2, 3, 3)]
    q, low = sym.linalg.gelqf(sym.Variable("a"))
    assert sym.Group([q, low]).infer_shape(a=(2, 4))[1] == [(2, 4), (2, 2)]
    exe = y.bind(kiln.cpu(), {"a": nd.array(A, dtype="float64")})
    np.testing.assert_allclose(exe.forward()[0].asnumpy(), MXNET["potrf"]["outputs"][0],
                               atol=2e-6)
