"""A bound symbol's outputs in the storage MXNet's storage-type inference gives them
(kiln/mx/sym/storage.py), and sparse gradient arrays in check_symbolic_backward.
Expected values and storage types come from real MXNet 1.9.1."""
import warnings

import numpy as np
import pytest

pytest.importorskip("scipy.sparse")

from kiln import nd, sym  # noqa: E402
from kiln.backend.fallbacks import KilnPerformanceWarning  # noqa: E402
from kiln.mx.test_utils import check_symbolic_backward  # noqa: E402

ROWS = [[0, -1, 0], [2, 0, 3]]


def _forward(symbol, **args):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", KilnPerformanceWarning)
        return symbol.bind(None, args=args).forward()[0]


def test_zero_preserving_ops_keep_the_arguments_storage_and_positions():
    data = sym.var("data")
    out = _forward(sym.relu(data), data=nd.array(ROWS).tostype("row_sparse"))
    assert out.stype == "row_sparse" and out.asnumpy().tolist() == [[0, 0, 0], [2, 0, 3]]
    out = _forward(sym.relu(data), data=nd.array(ROWS).tostype("csr"))
    assert out.stype == "csr" and out.data.asnumpy().tolist() == [0, 2, 3]   # -1 kept as 0
    assert _forward(sym.sigmoid(data), data=nd.array(ROWS).tostype("row_sparse")).stype == \
        "default"
    assert _forward(sym.relu(data), data=nd.array(ROWS)).stype == "default"


def test_square_sum_scatter_and_retain_outputs():
    data = sym.var("data")
    rows = nd.array([[0, -1, 0], [2, 0, 3]]).tostype("row_sparse")
    out = _forward(sym._internal._square_sum(data, axis=1, keepdims=True), data=rows)
    assert out.stype == "row_sparse" and out.asnumpy().tolist() == [[1], [13]]
    lhs = nd.array([[1, 2], [0, 0], [5, 6]]).tostype("row_sparse")
    out = _forward(sym._internal._scatter_elemwise_div(sym.var("lhs"), sym.var("rhs")), lhs=lhs,
                   rhs=nd.array([[2, 2], [1, 1], [0, 1]]))
    assert out.stype == "row_sparse" and out.indices.asnumpy().tolist() == [0, 2]
    assert out.asnumpy().tolist() == [[0.5, 1.0], [0, 0], [np.inf, 6.0]]
    out = _forward(sym.sparse.retain(data=data, indices=sym.var("indices")), data=lhs,
                   indices=nd.array([0, 1]))
    assert out.stype == "row_sparse" and out.asnumpy().tolist() == [[1, 2], [0, 0], [0, 0]]


def test_sparse_gradient_arrays_in_check_symbolic_backward():
    data = sym.var("data")
    value = nd.array(ROWS).tostype("row_sparse")
    grads = check_symbolic_backward(sym.relu(data), [value], [nd.ones((2, 3))],
                                    [np.array([[0, 0, 0], [1, 0, 1]])],
                                    grad_stypes={"data": "row_sparse"})
    assert grads["data"].stype == "row_sparse"


@pytest.mark.parametrize("sparse_grad, stype", [(True, "row_sparse"), (False, "default")])
def test_simple_bind_makes_a_sparse_embedding_gradient_row_sparse(sparse_grad, stype):
    # real MXNet 1.9.1: Embedding(sparse_grad=True)'s weight gradient array is row_sparse
    embed = sym.Embedding(data=sym.var("data"), weight=sym.var("embed_weight"), input_dim=5,
                          output_dim=2, sparse_grad=sparse_grad, name="embed")
    exe = embed.simple_bind(None, grad_req={"data": "null", "embed_weight": "write"},
                            data=(3,))
    exe.arg_dict["data"][:] = nd.array([0, 2, 2])
    exe.arg_dict["embed_weight"][:] = nd.ones((5, 2))
    exe.forward(is_train=True)
    exe.backward([nd.ones((3, 2))])
    grad = exe.grad_dict["embed_weight"]
    assert grad.stype == stype
    assert grad.asnumpy().tolist() == [[1, 1], [0, 0], [2, 2], [0, 0], [0, 0]]


def test_contrib_sparse_embedding_symbol_binds_as_embedding():
    embed = sym.contrib.SparseEmbedding(data=sym.var("data"), weight=sym.var("w"),
                                        input_dim=4, output_dim=2, name="embed")
    exe = embed.simple_bind(None, grad_req={"data": "null", "w": "write"}, data=(2,))
    exe.arg_dict["data"][:] = nd.array([3, 1])
    exe.arg_dict["w"][:] = nd.arange(8).reshape((4, 2))
    assert exe.forward()[0].asnumpy().tolist() == [[6, 7], [2, 3]]
