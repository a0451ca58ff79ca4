"""MXNet 1.x's NDArray methods on kiln's array, `mx.random` with 1.x signatures, the names
`from mxnet.autograd import *` leaks, and NumPy's reductions with `out=` (kiln/mx/nd/methods.py,
kiln/mx/__init__.py, kiln/_core/methods.py). Expected shapes and values come from real
MXNet 1.9.1 (run on this machine)."""
import numpy as np
import pytest

import kiln
from kiln.mx import nd
from kiln.mx.util import np_shape


@pytest.fixture
def mx():
    from kiln.mx import alias
    was_installed = alias.is_installed()
    alias.install()
    import mxnet
    yield mxnet
    if not was_installed:
        alias.uninstall()


def test_mx_random_takes_1x_signatures(mx):
    x = mx.random.uniform(-1, 1, shape=(2, 3), dtype="float64")
    assert x.shape == (2, 3) and x.dtype == np.float64
    assert float(x.min()) >= -1 and float(x.max()) < 1
    assert mx.random.normal(0, 1, (4,)).shape == (4,)
    out = nd.zeros((3,))
    assert mx.random.uniform(2, 3, shape=(3,), out=out) is out and float(out.min()) >= 2
    with pytest.raises(ValueError, match="seed_state must be int"):
        mx.random.seed(1.5)
    mx.random.seed(7)
    a = mx.random.normal(shape=(3,))
    mx.random.seed(7)
    assert np.array_equal(a.asnumpy(), mx.random.normal(shape=(3,)).asnumpy())


def test_reshape_special_codes():
    t = (nd.arange(30) + 1).reshape(2, 3, 5)
    assert t.reshape(0, -1).shape == (2, 15)
    assert t.reshape(-2).shape == (2, 3, 5)
    assert t.reshape(-3, -1).shape == (6, 5)
    assert t.reshape(-1, 15).reshape(0, -4, 3, -1).shape == (2, 3, 5)
    assert t.reshape(-1, 0).shape == (10, 3)
    assert t.reshape(-1, 0, reverse=True).shape == (6, 5)
    with np_shape():    # zero-size arrays need NumPy shape semantics (not MXNet 1.x's default)
        assert nd.zeros((0, 3)).reshape(0, 3).shape == (0, 3)    # NumPy's meaning: an empty axis
    with pytest.raises(ValueError):
        t.reshape((2, 3))


def test_inplace_means_view_and_not_inplace_a_copy():
    t = (nd.arange(30) + 1).reshape(2, 3, 5)
    copy, view = t.flatten(inplace=False), t.flatten(inplace=True)
    assert copy.shape == view.shape == (2, 15)
    t[0] = -1
    assert float(copy[0, 0]) == 1.0 and float(view[0, 0]) == -1.0
    x = nd.ones((2, 1, 3))
    squeezed, expanded = x.squeeze(axis=1, inplace=False), x.expand_dims(0, inplace=False)
    x[:] = 3
    assert squeezed.shape == (2, 3) and float(squeezed.sum()) == 6.0
    assert expanded.shape == (1, 2, 1, 3) and float(expanded.sum()) == 6.0


def test_fluent_methods_are_the_nd_functions():
    t = (nd.arange(30) + 1).reshape(2, 3, 5)
    assert t.slice((0, 0), (1, 2)).shape == (1, 2, 5)
    assert t.slice_axis(axis=1, begin=1, end=3).shape == (2, 2, 5)
    x = nd.array([[1, 2], [3, 4]])
    assert x.take(nd.array([1, 0])).asnumpy().tolist() == [[3, 4], [1, 2]]
    assert nd.array([1, 2, 3]).broadcast_like(nd.ones((2, 3))).asnumpy().tolist() == \
        [[1, 2, 3], [1, 2, 3]]
    assert x.one_hot(5).shape == (2, 2, 5)
    assert np.allclose(x.rsqrt().asnumpy(), 1 / np.sqrt(x.asnumpy()))
    back = nd.from_dlpack(x.to_dlpack_for_read())
    assert np.array_equal(back.asnumpy(), x.asnumpy())


def test_numpy_reductions_pass_out_to_the_methods():
    x = nd.array([1.0, 3.0])
    assert bool(np.all(x)) and float(np.max(x)) == 3.0 and float(np.min(x)) == 1.0
    with np_shape():    # a 0-d array needs NumPy shape semantics (not MXNet 1.x's default)
        out = nd.zeros(())
    assert x.max(out=out) is out and float(out) == 3.0


def test_autograd_star_import_gives_mxnets_module_names(mx):
    namespace = {}
    exec("from mxnet.autograd import *", namespace)
    assert namespace["NDArray"] is nd.NDArray
    assert namespace["Symbol"] is mx.sym.Symbol
    assert namespace["record"] is kiln.autograd.record
    x = nd.ones((2,))
    x.attach_grad()
    with mx.autograd.record():
        y = (x * x).sum()
    y.backward()
    assert x.grad.asnumpy().tolist() == [2.0, 2.0]


def test_numpy_functions_keep_kiln_arrays_through_out():
    pred = nd.array([[0.3, 0.7], [0.9, 0.1]])
    picked = np.argmax(pred, axis=1)
    assert isinstance(picked, nd.NDArray) and picked.asnumpy().tolist() == [1, 0]
    assert isinstance(np.round(pred), nd.NDArray) and isinstance(np.clip(pred, 0.2, 0.8),
                                                                 nd.NDArray)


def test_moveaxis_takes_sequences_and_refuses_bad_axes():
    x = nd.zeros((4, 1, 2, 3))
    assert nd.moveaxis(x, [0, 1], [2, 3]).shape == (2, 3, 4, 1)
    assert nd.moveaxis(x, [3, 0], [1, 0]).shape == (4, 3, 1, 2)
    assert nd.moveaxis(x, range(4), range(4)).shape == (4, 1, 2, 3)
    for source, destination in ((4, 0), ([0, 0], [0, 1]), (0, [0, 1])):
        with pytest.raises(ValueError):
            nd.moveaxis(x, source, destination)


def test_topk_over_the_flattened_array_and_creation_out():
    a = nd.array([[3, 1, 2], [9, 7, 8]])
    assert nd.topk(a, axis=None, k=2, ret_typ="value").asnumpy().tolist() == [9, 8]
    out = nd.zeros((2, 2))
    assert nd.ones((2, 2), out=out) is out and out.asnumpy().sum() == 4
    nd.full((2, 2), 2, out=out)
    assert out.asnumpy().sum() == 8


def test_multinomial_takes_float32_probabilities_summing_to_one():
    pvals = kiln.np.array([0.4, 0.3, 0.2, 0.1, 0.0])      # float32: the first four > 1.0
    counts = kiln.np.random.multinomial(1000, pvals, size=(2,))
    assert counts.shape == (2, 5) and counts.asnumpy().sum() == 2000
    assert counts.asnumpy()[:, 4].sum() == 0


def test_internal_namespaces_are_the_underscore_ops(mx):
    got = mx.nd._internal._maximum(nd.array([1, 5]), nd.array([3, 2]))
    assert got.asnumpy().tolist() == [3, 5]
    assert isinstance(mx.sym._internal._maximum(mx.sym.var("a"), mx.sym.var("b")),
                      mx.sym.Symbol)
    from mxnet.ndarray import _internal
    assert _internal is mx.nd._internal
    with pytest.raises(AttributeError):
        mx.nd._internal._no_such_op


def test_norm_of_ord_1_or_2_over_all_axes_is_mxnets_elementwise_norm():
    # real MXNet 1.9.1 values; NumPy's matrix norms of these orders differ (and kiln's
    # NumPy-style norm refuses them)
    x = nd.array([[1, 2], [3, 4]])
    assert np.allclose(x.norm(ord=2).asnumpy(), [5.477226])
    assert np.allclose(x.norm(ord=1).asnumpy(), [10.0])
    assert np.allclose(x.norm(ord=2, axis=(0, 1)).asnumpy(), [5.477226])
    assert np.allclose(x.norm(ord=2, axis=0).asnumpy(), [3.1622777, 4.472136])
    assert np.allclose(x.norm().asnumpy(), 5.477226)


def test_basic_slicing_contiguity_is_numpys():
    # MXNet's helper predicts whether basic slicing keeps the array contiguous (a view
    # MXNet can write through); kiln answers as NumPy's flags do
    is_contiguous = nd.NDArray._basic_indexing_slice_is_contiguous
    x = np.arange(6 * 7 * 8).reshape(6, 7, 8)
    for key in [(slice(None),) * 3, (slice(1, 3), slice(None), slice(None)),
                (slice(None), slice(1, 3), slice(None)), (slice(0, 1), slice(2, 3), slice(1, 5)),
                (slice(None, None, -1), slice(None), slice(None)),
                (slice(None), slice(None), slice(None, None, 2))]:
        assert is_contiguous(key, x.shape) == x[key].flags.c_contiguous
    assert is_contiguous((slice(1, 3), slice(None)), (1 << 40, 1 << 20))   # no allocation


def test_reduction_methods_take_exclude():
    """MXNet 1.x's x.sum/mean/max/min/prod(axis, exclude=True) (values from MXNet 1.9.1)."""
    x = nd.array(np.arange(24, dtype="float32").reshape(2, 3, 4))
    assert x.sum(axis=1, exclude=True).asnumpy().tolist() == [60.0, 92.0, 124.0]
    assert x.mean(axis=1, exclude=True, keepdims=True).shape == (1, 3, 1)
    assert x.sum(1).shape == (2, 4)
