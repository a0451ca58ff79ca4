"""Channels-last layouts (NWC, NHWC, NDHWC) of convolutions and poolings: MXNet 1.9.1's weight
shapes (checked with real MXNet: Conv2D(16, (3, 2), layout='NHWC', in_channels=4) has weight
(16, 3, 2, 4), its transposed twin (4, 3, 2, 16), with groups=2 (16, 3, 2, 2)) and the values
of the channels-first layer on transposed data."""
import numpy as np
import pytest

import kiln
from kiln import autograd
from kiln.gluon import nn


def _nchw(x):
    return np.moveaxis(x, -1, 1)


@pytest.mark.parametrize("cls, kwargs, weight", [
    (nn.Conv2D, {}, (16, 3, 2, 4)),
    (nn.Conv2D, {"groups": 2}, (16, 3, 2, 2)),
    (nn.Conv2DTranspose, {}, (4, 3, 2, 16)),
])
def test_conv_nhwc_weight_shape_and_values(cls, kwargs, weight):
    rng = np.random.default_rng(0)
    last = cls(16, (3, 2), layout="NHWC", in_channels=4, **kwargs)
    first = cls(16, (3, 2), in_channels=4, **kwargs)
    last.initialize()
    first.initialize()
    assert last.weight.shape == weight
    w = rng.standard_normal(weight).astype(np.float32)
    last.weight.set_data(kiln.np.array(w))
    first.weight.set_data(kiln.np.array(np.moveaxis(w, -1, 1)))
    x = rng.standard_normal((2, 7, 6, 4)).astype(np.float32)
    y = last(kiln.np.array(x)).asnumpy()
    expected = first(kiln.np.array(_nchw(x))).asnumpy()
    np.testing.assert_allclose(_nchw(y), expected, rtol=1e-5, atol=1e-5)


def test_conv_nhwc_deferred_weight_and_hybridized_gradient():
    layer = nn.Conv2D(8, 3, layout="NHWC")
    layer.initialize()
    x = kiln.np.ones((2, 6, 6, 5))
    x.attach_grad()
    with autograd.record():
        y = layer(x)
    y.backward()
    assert layer.weight.shape == (8, 3, 3, 5) and y.shape == (2, 4, 4, 8)
    g = x.grad.asnumpy().copy()
    layer.hybridize()
    with autograd.record():
        y2 = layer(x)
    y2.backward()
    np.testing.assert_allclose(y2.asnumpy(), y.asnumpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(x.grad.asnumpy(), g, rtol=1e-5, atol=1e-6)


def test_conv1d_is_channels_first_only_as_in_mxnet():
    with pytest.raises(kiln.KilnError, match="'NWC'"):
        nn.Conv1D(4, 3, layout="NWC")


@pytest.mark.parametrize("cls, shape", [
    (nn.MaxPool1D, (2, 10, 3)), (nn.AvgPool2D, (2, 9, 10, 3)), (nn.MaxPool3D, (2, 6, 7, 6, 3)),
    (nn.GlobalAvgPool2D, (2, 5, 4, 3)),
])
def test_pool_channels_last_is_channels_first_on_transposed_data(cls, shape):
    kw = {} if "Global" in cls.__name__ else {"pool_size": 3, "strides": 2}
    layout = {3: "NWC", 4: "NHWC", 5: "NDHWC"}[len(shape)]
    x = np.random.default_rng(1).standard_normal(shape).astype(np.float32)
    y = cls(layout=layout, **kw)(kiln.np.array(x)).asnumpy()
    expected = cls(**kw)(kiln.np.array(_nchw(x))).asnumpy()
    np.testing.assert_allclose(_nchw(y), expected, rtol=1e-6)
