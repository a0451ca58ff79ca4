"""Gluon rules MXNet 1.9.1 enforces and its unit tests check: attribute types of children,
unregistered containers of blocks, hybrid_forward's input rules, recompiling after the
children change, summary before hybridize, and split_data's uneven slices."""
import warnings

import numpy as onp
import pytest

import kiln
from kiln import gluon, nd
from kiln.gluon import nn


class _Add(gluon.HybridBlock):
    def hybrid_forward(self, F, a, b=None):
        return a if b is None else a + b


def test_a_child_or_parameter_attribute_keeps_its_type():
    b = gluon.Block()
    b.child = gluon.Block()
    with pytest.raises(TypeError, match="child"):
        b.child = (2,)
    b.p = gluon.Parameter("p", shape=(1,))
    with pytest.raises(TypeError, match="Parameter"):
        b.p = 3
    b.child = None                      # kiln: None removes the child
    assert "child" not in b._children


def test_blocks_in_a_plain_list_are_reported():
    class Listed(gluon.Block):
        def __init__(self):
            super().__init__()
            self.layers = [nn.Dense(2), nn.Dense(3)]

    class Registered(gluon.Block):
        def __init__(self):
            super().__init__()
            self.layers = nn.Sequential()
            self.layers.add(nn.Dense(2))
            self.notes = {"a": 1}

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        Listed().collect_params()
    assert any("unregistered container" in str(w.message) for w in caught)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        Registered().collect_params()
    assert not caught


def test_sequential_of_hybrid_blocks_suggests_hybrid_sequential():
    net = nn.Sequential()
    net.add(nn.Dense(2))
    with pytest.warns(UserWarning, match="HybridSequential"):
        net.hybridize()


def test_hybrid_forward_inputs_follow_mxnet():
    with pytest.raises(ValueError, match="one NDArray or one Symbol"):
        _Add()(None, None)
    with pytest.raises(ValueError, match="mixed"):
        _Add()(nd.ones(2), kiln.sym.var("a"))
    net = _Add()
    net.hybridize()
    with pytest.raises(ValueError, match="arrays or None"):
        net(nd.ones(2), 1)
    net = _Add()
    net.hybridize()
    first = net(nd.ones(2))
    onp.testing.assert_array_equal(net(nd.ones(2), None).asnumpy(), first.asnumpy())
    with pytest.raises(ValueError, match="arranged"):
        net(nd.ones(2), nd.ones(2))
    net.hybridize()                          # a new trace may take the new arrangement
    assert net(nd.ones(2), nd.ones(2)).asnumpy().tolist() == [2, 2]


def test_changing_children_recompiles():
    net = nn.HybridSequential()
    net.add(nn.Dense(10, flatten=False))
    net.hybridize()
    net.initialize()
    assert net(nd.ones((2, 3, 5))).shape == (2, 3, 10)
    net.add(nn.Flatten())
    assert net(nd.ones((2, 3, 5))).shape == (2, 30)


def test_summary_before_hybridize_only():
    net = nn.HybridSequential()
    net.add(nn.Dense(3))
    net.initialize()
    net.summary(nd.ones((2, 4)))
    net.hybridize()
    with pytest.raises(AssertionError):
        net.summary(nd.ones((2, 4)))


def test_split_data_spreads_the_remainder_like_mxnet():
    x = nd.array(onp.arange(33 * 2).reshape(33, 2))
    parts = gluon.utils.split_data(x, 4, 0, even_split=False)
    assert [p.shape[0] for p in parts] == [9, 8, 8, 8]      # as MXNet 1.9.1 splits 33 by 4
    for got, want in zip(parts, onp.array_split(x.asnumpy(), 4)):
        onp.testing.assert_array_equal(got.asnumpy(), want)
    with pytest.raises(ValueError, match="evenly"):
        gluon.utils.split_data(x, 4, 0)


def test_parameter_storage_types_are_checked():
    for kw in ({"stype": "invalid"}, {"grad_stype": "dense"}):
        with pytest.raises(AssertionError, match="stype"):
            gluon.Parameter("weight", shape=(2, 2), **kw)
    assert gluon.Parameter("w", shape=(2,), stype="row_sparse").shape == (2,)
