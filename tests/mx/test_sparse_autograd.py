"""MXNet 1.x sparse arrays under autograd (kiln/mx/nd/sparse/tape.py, kiln/_core/ndarray.py's
attach_grad(stype=) and _store_grad): a sparse array is an NDArray, operations on it are
recorded, and gradients are stored in the storage of the `.grad` buffer. The expected values
and storage types were printed by real MXNet 1.9.1 (/work/mxref-venv) on the same inputs."""
import warnings

import numpy as np
import pytest

pytest.importorskip("scipy.sparse")

from kiln import autograd, nd  # noqa: E402
from kiln.mx.nd import NDArray  # noqa: E402


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")     # the dense fallbacks' performance warnings
        yield


@pytest.mark.parametrize("stype", ["csr", "row_sparse"])
def test_a_sparse_array_is_an_ndarray(stype):
    assert isinstance(nd.zeros((2, 2)).tostype(stype), NDArray)


@pytest.mark.parametrize("array_stype", ["default", "csr", "row_sparse"])
@pytest.mark.parametrize("grad_stype", [None, "default", "csr", "row_sparse"])
def test_attach_grad_stype_and_detach_keep_storage(array_stype, grad_stype):
    x = nd.zeros((1, 1), stype=array_stype)
    x.attach_grad(stype=grad_stype)
    assert x.grad.stype == (grad_stype or array_stype)  # default: the array's own storage
    assert x.detach().stype == array_stype


def test_csr_arithmetic_is_differentiated_into_a_csr_gradient():
    x = nd.array([[0, 1.5, 0], [2, 0, -1]]).tostype("csr")
    x.attach_grad()
    with autograd.record():
        z = (x * 3 / 2) ** 2
    z.backward()
    assert x.grad.stype == "csr"
    np.testing.assert_allclose(x.grad.asnumpy(), [[0, 6.75, 0], [9, 0, -4.5]])   # MXNet 1.9.1


@pytest.mark.parametrize("stype", ["default", "row_sparse", "csr"])
def test_sparse_head_gradient(stype):
    x = nd.zeros((4, 4)).tostype(stype)
    assert x.grad is None
    x.attach_grad()
    with autograd.record():
        y = x * 2
        assert y.grad is None
    y.backward(out_grad=nd.ones_like(y).tostype(stype))
    assert x.grad.stype == stype
    assert (x.grad.asnumpy() == 2).all()


def test_dense_fallback_of_a_row_sparse_array_is_differentiated():
    r = nd.array([[0, 0], [1, 2], [0, 0]]).tostype("row_sparse")
    r.attach_grad()
    d = nd.array([[1., 2], [3, 4], [5, 6]])
    with autograd.record():
        o = nd.exp(r) + r * d
    o.backward()
    assert o.stype == "default" and r.grad.stype == "row_sparse"
    np.testing.assert_allclose(r.grad.asnumpy(), [[2, 3], [5.7182817, 11.389056], [6, 7]],
                               rtol=1e-6)                                          # MXNet 1.9.1


def test_dot_of_csr_and_a_dense_weight_gives_a_row_sparse_gradient():
    w = nd.ones((3, 2))
    w.attach_grad(stype="row_sparse")
    lhs = nd.array([[0, 1, 0], [0, 2, 0]]).tostype("csr")
    with autograd.record():
        y = nd.dot(lhs, w)
    y.backward()
    assert w.grad.stype == "row_sparse"
    np.testing.assert_allclose(w.grad.asnumpy(), [[0, 0], [3, 3], [0, 0]])         # MXNet 1.9.1
    assert w.grad.indices.asnumpy().tolist() == [1]


def test_mark_variables_writes_into_a_sparse_gradient_buffer():
    g = nd.zeros((2, 3)).tostype("row_sparse")
    v = nd.ones((2, 3))
    autograd.mark_variables([v], [g])
    with autograd.record():
        y = v * nd.array([[1, 2, 3], [0, 0, 0]])
    y.backward()
    assert g.stype == "row_sparse"                        # the same buffer, written in place
    np.testing.assert_allclose(g.asnumpy(), [[1, 2, 3], [0, 0, 0]])                 # MXNet 1.9.1
    assert g.indices.asnumpy().tolist() == [0]


@pytest.mark.parametrize("stype", ["csr", "row_sparse"])
def test_in_place_operators_write_into_the_sparse_array(stype):
    x = nd.array([[0, 1], [2, 0]]).tostype(stype)
    y = x
    y += x
    assert y is x and y.stype == stype                                          # MXNet 1.9.1
    assert (x.asnumpy() == [[0, 2], [4, 0]]).all()
    y *= 0.5
    assert y is x and (x.asnumpy() == [[0, 1], [2, 0]]).all()


@pytest.mark.parametrize("stype", ["csr", "row_sparse"])
def test_pickling_keeps_the_storage(stype):
    import pickle
    x = nd.array([[0, 1], [2, 0], [0, 0]]).tostype(stype)
    y = pickle.loads(pickle.dumps(x))
    assert y.stype == stype and (y.asnumpy() == x.asnumpy()).all()
