"""Gluon Parameters with MXNet 1.x sparse storage (kiln/gluon/parameter.py: stype, grad_stype,
row_sparse_data; Trainer with sparse arrays; Embedding(sparse_grad=True); clip_global_norm
of sparse arrays). Expected values and storage types were printed by real MXNet 1.9.1 on the
same code; the error rules are MXNet 1.9.1's (python/mxnet/gluon/parameter.py)."""
import warnings

import numpy as np
import pytest

pytest.importorskip("scipy.sparse")

from kiln import autograd, gluon, init, nd  # noqa: E402
from kiln.mx.nd import cpu  # noqa: E402


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")     # the dense fallbacks' performance warnings
        yield


def test_row_sparse_parameter_gives_rows_through_its_trainer():
    p = gluon.Parameter("w", shape=(4, 2), stype="row_sparse")
    p.initialize(init=init.One())
    with pytest.raises(RuntimeError):
        p.row_sparse_data(nd.array([2, 0]))          # no Trainer made with it yet
    with pytest.raises(RuntimeError):
        p.data()                                     # a sparse parameter has no data()
    with pytest.raises(RuntimeError):
        p.list_data()
    gluon.Trainer([p], "sgd")
    rows = p.row_sparse_data(nd.array([2, 0]))
    assert rows.stype == "row_sparse" and rows.indices.asnumpy().tolist() == [0, 2]  # MXNet
    np.testing.assert_array_equal(rows.asnumpy(), [[1, 1], [0, 0], [1, 1], [0, 0]])
    assert len(p.list_row_sparse_data(nd.array([1]))) == 1
    assert p.grad().stype == "default"               # grad_stype's default, as in MXNet


def test_dense_parameter_refuses_row_sparse_data():
    p = gluon.Parameter("w", shape=(4, 2))
    p.initialize()
    with pytest.raises(RuntimeError):
        p.row_sparse_data(nd.array([0]))
    with pytest.raises(RuntimeError):
        p.list_row_sparse_data(nd.array([0]))


def test_reset_ctx_sets_the_contexts():
    p = gluon.Parameter("w", shape=(2, 2), grad_stype="row_sparse")
    p.initialize(ctx=[cpu(0)])
    p.reset_ctx(ctx=[cpu(1), cpu(2)])
    assert p.list_ctx() == [cpu(1), cpu(2)]           # MXNet's test_sparse_parameter
    assert p.grad().stype == "row_sparse"


def test_embedding_sparse_grad_and_a_lazy_sgd_step():
    layer = gluon.nn.Embedding(10, 3, sparse_grad=True)
    layer.initialize()
    with autograd.record():
        y = layer(nd.array([3, 4, 2, 3]))
    y.backward()
    g = layer.weight.grad()
    assert g.stype == "row_sparse"
    assert g.indices.asnumpy().tolist() == [2, 3, 4]                                # MXNet 1.9.1
    np.testing.assert_array_equal(g.data.asnumpy()[:, 0], [1, 2, 1])                # MXNet 1.9.1
    trainer = gluon.Trainer(layer.collect_params(), "sgd", {"learning_rate": 1.0})
    before = layer.weight.data().asnumpy().copy()
    trainer.step(1)
    np.testing.assert_allclose((before - layer.weight.data().asnumpy())[:, 0],
                               [0, 0, 1, 2, 1, 0, 0, 0, 0, 0], atol=1e-6)           # MXNet 1.9.1


def test_clip_global_norm_scales_sparse_arrays_in_place():
    x = nd.ones((3, 3)).tostype("row_sparse")
    norm = gluon.utils.clip_global_norm([x], 1.0)
    assert norm == pytest.approx(3.0) and x.stype == "row_sparse"                   # MXNet 1.9.1
    np.testing.assert_allclose(x.asnumpy(), np.full((3, 3), 1 / 3), rtol=1e-6)


def test_parameter_var_is_a_symbol_variable_with_its_storage():
    p = gluon.Parameter("weight", shape=(10, 10), stype="row_sparse", grad_stype="row_sparse")
    v = p.var()
    assert v is p.var() and v.name == "weight"                                      # MXNet 1.9.1
    attrs = v.list_attr()
    assert attrs["__storage_type__"] == "1" and attrs["__shape__"] == "(10, 10)"    # MXNet 1.9.1


def test_symbol_block_refuses_a_row_sparse_variable():
    from kiln.mx import sym
    data, bias = sym.var("data"), sym.var("bias")
    dense = sym.broadcast_add(sym.dot(data, sym.var("weight")), bias)
    gluon.SymbolBlock(dense, data)
    out = sym.broadcast_add(sym.dot(data, sym.var("weight", stype="row_sparse")), bias)
    with pytest.raises(AssertionError, match="row_sparse"):       # MXNet 1.9.1's error type
        gluon.SymbolBlock(out, data)
