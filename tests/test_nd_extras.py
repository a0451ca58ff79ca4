"""Smaller MXNet 1.x nd names: SVMOutput's gradient rule, the *_v1 operators, split_v2,
onehot_encode, reset_arrays, load_frombuffer, DLPack, nd.numpy and contrib.rand_zipfian;
expected values as MXNet 1.9.1 printed them for the same inputs."""
import os

import numpy as onp
import pytest

import kiln
from kiln import autograd, nd
from conftest import assert_close

X = [[0.5, -0.2, 0.1], [0.3, 0.9, -1.0]]


@pytest.mark.parametrize("linear,kw,expected", [
    (False, {"margin": 1.0, "regularization_coefficient": 1.0},
     [[3.0, 1.6, -1.8], [2.6, -0.2, 0.0]]),
    (True, {"margin": 0.5, "regularization_coefficient": 2.0}, [[2, 2, -2], [2, 0, 0]]),
])
def test_svm_output_gradient_rule(linear, kw, expected):
    x = nd.array(X)
    x.attach_grad()
    with autograd.record():
        y = nd.SVMOutput(x, nd.array([2, 1]), use_linear=linear, **kw)
    y.backward()
    assert_close(y, X)
    assert_close(x.grad, expected)


def test_v1_operators_are_the_current_ones():
    x, w, b = nd.ones((1, 1, 3, 3)), nd.ones((2, 1, 2, 2)), nd.zeros(2)
    assert_close(nd.Convolution_v1(x, w, b, kernel=(2, 2), num_filter=2),
                 nd.Convolution(x, w, b, kernel=(2, 2), num_filter=2))
    assert nd.Pooling_v1(x, kernel=(2, 2), pool_type="max").shape == (1, 1, 2, 2)


def test_list_and_buffer_helpers():
    parts = nd.split_v2(nd.arange(10), (3, 7))
    assert [p.asnumpy().tolist() for p in parts] == [[0, 1, 2], [3, 4, 5, 6], [7, 8, 9]]
    cols = nd.split_v2(nd.arange(6).reshape(2, 3), 3, axis=1, squeeze_axis=True)
    assert cols[1].asnumpy().tolist() == [1, 4]
    with pytest.raises(kiln.KilnError, match="int or tuple"):
        nd.split_v2(nd.arange(10), [3, 7])
    out = nd.zeros((2, 4))
    assert nd.onehot_encode(nd.array([1, 3]), out) is out
    assert out.asnumpy().tolist() == [[0, 1, 0, 0], [0, 0, 0, 1]]
    a, b = nd.ones(2), nd.ones(3)
    nd.reset_arrays(a, b, num_arrays=2)
    assert a.asnumpy().sum() == 0 and b.asnumpy().sum() == 0
    path = os.path.join(os.path.dirname(__file__), "fixtures", "mxnet", "ndsave.params")
    with open(path, "rb") as f:
        loaded = nd.load_frombuffer(f.read())
    assert isinstance(loaded, dict) and loaded.keys() == nd.load(path).keys()
    assert_close(nd.from_dlpack(nd.to_dlpack_for_read(nd.array([1.0, 2.0]))), [1, 2])
    assert nd.from_numpy(onp.ones(2)).asnumpy().tolist() == [1, 1]
    assert nd.numpy.add is kiln.np.add and nd.numpy_extension.relu is kiln.npx.relu


def test_rand_zipfian_expected_counts_as_mxnet():
    sampled, count_true, count_sampled = nd.contrib.rand_zipfian(nd.array([1, 5]), 4, 10)
    assert sampled.dtype == onp.int64 and sampled.shape == (4,)
    assert_close(count_true, [0.67636833, 0.25714331])
    classes = sampled.asnumpy()
    assert ((classes >= 0) & (classes < 10)).all()
    p = onp.log((classes + 2.0) / (classes + 1.0)) / onp.log(11.0)
    assert_close(count_sampled, p * 4)
    nd.random.seed(1)
    many = nd.contrib.rand_zipfian(nd.array([0]), 20000, 10)[0].asnumpy()
    freq = onp.bincount(many, minlength=10) / 20000
    assert_close(freq, onp.log((onp.arange(10) + 2.0) / (onp.arange(10) + 1)) / onp.log(11),
                 atol=0.015)
