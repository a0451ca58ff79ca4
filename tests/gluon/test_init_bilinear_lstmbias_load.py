"""init.Bilinear, LSTMBias and Load (kiln/init.py), against MXNet 1.9.1 where it gives
values (tests/fixtures/mxnet/init_bilinear_*.npy, written by make_fixtures.py)."""
import os

import numpy as onp
import pytest

import kiln
from kiln import init, nd
from kiln.gluon import nn
from paths import FIXTURES

HERE = os.path.join(FIXTURES, "mxnet")


@pytest.mark.parametrize("shape", [(2, 3, 4, 4), (2, 1, 3, 5)])
def test_bilinear_equals_mxnet(shape):
    w = nd.zeros(shape)
    init.Bilinear()(init.InitDesc("up_weight"), w)
    want = onp.load(os.path.join(HERE, "init_bilinear_" + "x".join(map(str, shape)) + ".npy"))
    onp.testing.assert_allclose(w.asnumpy(), want, rtol=1e-6)


def test_bilinear_as_a_layer_initializer_upsamples():
    up = nn.Conv2DTranspose(1, kernel_size=4, strides=2, padding=1, in_channels=1,
                            weight_initializer=init.Bilinear(), use_bias=False)
    up.initialize()
    y = up(nd.ones((1, 1, 3, 3))).asnumpy()
    assert y.shape == (1, 1, 6, 6)
    onp.testing.assert_allclose(y[0, 0, 1:-1, 1:-1], 1.0, rtol=1e-6)  # constant stays


def test_lstm_bias_sets_the_forget_gate():
    b = nd.zeros((12,))
    init.LSTMBias(0.7)._init_weight("l0_i2h_bias", b)
    onp.testing.assert_array_equal(b.asnumpy(), onp.array([0] * 3 + [0.7] * 3 + [0] * 6, "f4"))
    assert init.create(init.LSTMBias(0.7).dumps()).forget_bias == 0.7
    with pytest.raises(kiln.KilnError, match="cannot read initializer"):
        init.create('["nosuch", {}]')


def test_load_takes_saved_values_and_falls_back(tmp_path):
    path = str(tmp_path / "p.params")
    nd.save(path, {"arg:fc_weight": nd.ones((2, 3)), "aux:bn_moving_mean": nd.zeros((2,))})
    loader = init.Load(path, default_init=init.Constant(5))
    w, other = nd.zeros((2, 3)), nd.zeros((4,))
    loader("fc_weight", w)
    loader("fc2_weight", other)
    onp.testing.assert_array_equal(w.asnumpy(), 1.0)
    onp.testing.assert_array_equal(other.asnumpy(), 5.0)
    with pytest.raises(kiln.KilnError, match="has shape"):
        loader("fc_weight", nd.zeros((3, 3)))
    with pytest.raises(kiln.KilnError, match="no default_init"):
        init.Load({"a": nd.ones((1,))})("b", nd.zeros((1,)))
