"""Max pooling skips NaN on every path (kiln/ops/pool.py): oneDNN's kernel, the window
decomposition that runs without oneDNN (eager and compiled), and their gradients."""
import numpy as onp
import pytest

from kiln import autograd
from kiln import np
from kiln.gluon import nn
from kiln.ops.pool import pool_by_windows, pool_grad_by_windows

GEO = dict(kind="max", kernel=(2, 2), stride=(2, 2), pad=(0, 0, 0, 0))


def _input():
    d = onp.arange(16, dtype="float32").reshape(1, 1, 4, 4)
    d[0, 0, 0, 0], d[0, 0, 0, 1] = 9, onp.nan        # a window with one NaN
    d[0, 0, 2:, 2:] = onp.nan                          # a window of NaN alone
    return d


def test_decomposition_skips_nan_as_the_kernel_does():
    x = np.array(_input())
    want = [[9.0, 7.0], [13.0, float(onp.finfo("float32").min)]]
    onp.testing.assert_array_equal(pool_by_windows(x, **GEO).asnumpy()[0, 0], want)
    onp.testing.assert_array_equal(nn.MaxPool2D(2)(x).asnumpy()[0, 0], want)


def test_gradient_goes_to_the_first_number_that_is_the_maximum():
    x = np.array(_input())
    x.attach_grad()
    with autograd.record():
        y = nn.MaxPool2D(2)(x)
    y.backward()
    by_windows = pool_grad_by_windows(np.ones((1, 1, 2, 2)), np.array(_input()), **GEO)
    onp.testing.assert_array_equal(x.grad.asnumpy(), by_windows.asnumpy())
    assert x.grad.asnumpy()[0, 0, 0, 0] == 1 and x.grad.asnumpy()[0, 0, 0, 1] == 0


@pytest.mark.parametrize("padding", [0, 1])
def test_compiled_equals_eager_with_nan(padding):
    x = np.array(onp.where(onp.random.default_rng(0).random((2, 3, 6, 6)) < 0.3, onp.nan,
                           onp.random.default_rng(1).normal(size=(2, 3, 6, 6))).astype("f4"))
    block = nn.MaxPool2D(3, strides=2, padding=padding)
    eager = block(x).asnumpy()
    block.hybridize()
    onp.testing.assert_array_equal(block(x).asnumpy(), eager)
    assert not onp.isnan(eager).any()
