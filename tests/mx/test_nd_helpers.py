"""Smaller MXNet 1.x nd names: SVMOutput's gradient rule, the *_v1 operators, split_v2,
onehot_encode, reset_arrays, load_frombuffer, DLPack, nd.numpy and contrib.rand_zipfian;
expected values as MXNet 1.9.1 printed them for the same inputs."""
import os

import numpy as onp
import pytest

import kiln
from kiln import autograd
from kiln import nd
from conftest import assert_close
from paths import FIXTURES

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
    path = os.path.join(FIXTURES, "mxnet", "ndsave.params")
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


S = [[0.1, 0.5, 1.2], [2.0, 0.3, 0.7]]
COUNTS = [[0, 1, 2], [3, 1, 0]]
# name -> (arguments, MXNet 1.9.1's output)
PDFS = {
    "normal": ((S, [0.0, 1.0], [1.0, 2.0]),
               [[0.39695254, 0.35206532, 0.19418605], [0.17603266, 0.18762018, 0.19723967]]),
    "gamma": ((S, [2.0, 1.0], [1.0, 2.0]),
              [[0.09048375, 0.30326533, 0.36143303], [0.03663128, 1.0976232, 0.49319395]]),
    "exponential": ((S, [2.0, 1.0]),
                    [[1.6374615, 0.7357589, 0.18143588], [0.13533528, 0.7408182, 0.4965853]]),
    "poisson": ((COUNTS, [2.0, 1.0]),
                [[0.13533528, 0.27067056, 0.27067056], [0.06131324, 0.36787945, 0.36787945]]),
    "negative_binomial": ((COUNTS, [2, 3], [0.5, 0.3]),
                          [[0.25, 0.25, 0.1875], [0.09261001, 0.0567, 0.02700001]]),
    "generalized_negative_binomial": ((COUNTS, [2.0, 1.0], [0.5, 0.3]),
                                      [[0.25, 0.25, 0.1875], [0.06580678, 0.3208081, 0.4170507]]),
    "dirichlet": (([[[0.2, 0.3, 0.5]], [[0.1, 0.1, 0.8]]], [[1.0, 2, 3], [2, 2, 2]]),
                  [[4.5], [0.9599999]]),
}


@pytest.mark.parametrize("name", sorted(PDFS))
def test_random_pdf_as_mxnet(name):
    args, expected = PDFS[name]
    fn = getattr(nd, "random_pdf_" + name)
    assert_close(fn(*[nd.array(a) for a in args]), expected, rtol=1e-5)
    assert_close(fn(*[nd.array(a) for a in args], is_log=True), onp.log(expected), rtol=1e-5)


def test_random_pdf_gradients_and_uniform_support():
    from test_nd_legacy_names import check_grad
    rng = onp.random.default_rng(0)
    x, mu, sigma = rng.uniform(0.2, 2, (2, 3)), rng.uniform(-1, 1, 2), rng.uniform(0.5, 2, 2)
    check_grad(lambda *a: nd.random_pdf_normal(*a), x, mu, sigma)
    check_grad(lambda *a: nd.random_pdf_gamma(*a, is_log=True), x, sigma + 1, sigma)
    alpha = rng.uniform(0.5, 3, (2, 3))
    sample = rng.dirichlet([1, 1, 1], (2, 1))
    check_grad(lambda *a: nd.random_pdf_dirichlet(*a), sample, alpha)
    # MXNet 1.9.1 returns 1 / (high - low) outside [low, high] too; kiln gives 0 there
    out = nd.random_pdf_uniform(nd.array(S), nd.array([0.0, 0.0]), nd.array([1.0, 3.0]))
    assert_close(out, [[1, 1, 0], [1 / 3, 1 / 3, 1 / 3]])


def test_lars_amp_and_preloaded_updates():
    lrs = nd.multi_lars(nd.array([0.1, 0.2]), nd.array([4.0, 9.0]), nd.array([1.0, 0.0]),
                        nd.array([0.01, 0.0]), eta=0.5, eps=1e-8, rescale_grad=1.0)
    assert_close(lrs, [0.09803922, 0.2])
    wide = nd.amp_multicast(nd.ones(2, dtype="float16"), nd.ones(2), num_outputs=2)
    narrow = nd.amp_multicast(nd.ones(2, dtype="float16"), nd.ones(2), num_outputs=2,
                              cast_narrow=True)
    assert [a.dtype for a in wide] == [onp.float32] * 2
    assert [a.dtype for a in narrow] == [onp.float16] * 2
    w = [nd.ones(2), nd.ones(2) * 2]
    nd.preloaded_multi_sgd_update(w[0], nd.ones(2), w[1], nd.ones(2), nd.array([0.1, 0.2]),
                                  nd.array([0.0, 0.5]), num_weights=2, out=w)
    assert_close(w[0], [0.9, 0.9])
    assert_close(w[1], [2 - 0.2 * (1 + 0.5 * 2)] * 2)
    assert nd.contrib.ctc_loss is nd.contrib.CTCLoss
