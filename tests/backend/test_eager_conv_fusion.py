"""Eager CNN fast paths give what the unfused ops give: a convolution with its bias (and a
ReLU layer's activation) as one conv_bias primitive, ReLU's gradient and large adds and
products on oneDNN, Dense's weight gradient in the weight's own layout, and a tape that
keeps no input alive for a gradient that reads only the output. Each with oneDNN on and
off (kiln's own kernels)."""
import contextlib
import gc
import weakref

import numpy as onp
import pytest

import kiln
from kiln import autograd
from kiln import np, npx
from kiln.backend import dnnl
from kiln.backend.dnnl import ops as dnnl_ops
from kiln.gluon import nn

LIBRARY = pytest.mark.parametrize("library", ["on", "off"])


def _library(library):
    if library == "on" and not dnnl.available():
        pytest.skip("oneDNN not installed")
    return dnnl.disabled() if library == "off" else contextlib.nullcontext()


def _conv_ref(x, w, b, stride, pad):
    """conv + bias in float64 by explicit windows (NCHW)."""
    n, c, h, wd = x.shape
    f, _, kh, kw = w.shape
    xp = onp.pad(x.astype("float64"), ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    oh, ow = (h + 2 * pad - kh) // stride + 1, (wd + 2 * pad - kw) // stride + 1
    y = onp.zeros((n, f, oh, ow))
    for i in range(kh):
        for j in range(kw):
            patch = xp[:, :, i:i + stride * oh:stride, j:j + stride * ow:stride]
            y += onp.einsum("nchw,fc->nfhw", patch, w[:, :, i, j].astype("float64"))
    return y + b.reshape(1, -1, 1, 1)


def _unfused(x, w, b, stride, pad, relu):
    """The same layer from separate primitives (conv, add, relu) on the tape."""
    y = kiln.ops.REGISTRY["conv"](x, w, stride=(stride, stride), dilation=(1, 1),
                                  pad=(pad,) * 4, groups=1)
    y = y + np.reshape(b, (1, -1, 1, 1))
    return npx.relu(y) if relu else y


@LIBRARY
@pytest.mark.parametrize("relu", [False, True])
def test_conv_layer_fused_matches_unfused_ops(library, relu):
    rng = onp.random.default_rng(0)
    xv = rng.standard_normal((3, 4, 11, 11)).astype("float32")
    gv = rng.standard_normal((3, 5, 6, 6)).astype("float32")
    with _library(library):
        layer = nn.Conv2D(5, kernel_size=3, strides=2, padding=1,
                          activation="relu" if relu else None)
        layer.initialize(kiln.init.Normal(0.5))
        layer.bias.set_data(np.array(rng.standard_normal(5).astype("float32")))
        results = []
        for fused in (True, False):
            x = np.array(xv)
            x.attach_grad()
            with autograd.record():
                if fused:
                    y = layer(x)
                else:
                    y = _unfused(x, layer.weight.data(), layer.bias.data(), 2, 1, relu)
            y.backward(np.array(gv))
            results.append([y.asnumpy(), x.grad.asnumpy(),
                            layer.weight.grad().asnumpy().copy(),
                            layer.bias.grad().asnumpy().copy()])
    want = _conv_ref(xv, layer.weight.data().asnumpy(), layer.bias.data().asnumpy(), 2, 1)
    if relu:
        want = onp.maximum(want, 0)
    onp.testing.assert_allclose(results[0][0], want, rtol=1e-4, atol=1e-4)
    for got, ref in zip(results[0], results[1]):
        onp.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-4)
    # the gradient flows only where the output is positive
    if relu:
        assert (results[0][0] == 0).any()


def test_eager_conv_with_bias_is_one_primitive_and_traced_stays_unfused():
    x = np.array(onp.ones((1, 2, 5, 5), "float32"))
    w = np.array(onp.ones((3, 2, 3, 3), "float32"))
    b = np.array(onp.arange(3, dtype="float32"))
    x.attach_grad()
    with autograd.record():
        y = npx.convolution(x, w, b, kernel=(3, 3), num_filter=3)
    assert y._tape.name == "conv_bias"
    onp.testing.assert_array_equal(y.asnumpy()[0, :, 0, 0], [18, 19, 20])

    class Net(nn.HybridBlock):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2D(3, kernel_size=3, activation="relu")

        def forward(self, x):
            return self.conv(x)

    net = Net()
    net.initialize()
    xv = np.array(onp.random.default_rng(1).standard_normal((2, 2, 6, 6)).astype("float32"))
    eager = net(xv).asnumpy()
    net.hybridize()
    onp.testing.assert_allclose(net(xv).asnumpy(), eager, rtol=1e-5, atol=1e-6)


def test_hooked_activation_is_not_fused_away():
    seen = []
    layer = nn.Conv2D(2, kernel_size=1, activation="relu")
    layer.initialize()
    layer.act.register_forward_hook(lambda block, args, out: seen.append(out.shape))
    layer(np.ones((1, 3, 4, 4)))
    assert seen == [(1, 2, 4, 4)]


@pytest.mark.skipif(not dnnl.available(), reason="oneDNN not installed")
def test_large_elementwise_ops_on_onednn_match_numpy():
    rng = onp.random.default_rng(2)
    n = dnnl_ops.ELEMENTWISE_MIN
    a = rng.standard_normal((2, n // 2 + 3)).astype("float32")
    b = rng.standard_normal(a.shape).astype("float32")
    y = onp.maximum(a, 0)
    onp.testing.assert_array_equal(dnnl_ops.relu_backward(b, y), b * (y > 0))
    onp.testing.assert_array_equal(dnnl_ops.relu_forward(a), y)
    onp.testing.assert_array_equal(dnnl_ops.add(a, b), a + b)
    onp.testing.assert_array_equal(dnnl_ops.multiply(a, b), a * b)
    # what the layer does not take goes back to NumPy: small, float64, strided, mixed shapes
    assert dnnl_ops.add(a[:1, :10], b[:1, :10]) is None
    assert dnnl_ops.add(a.astype("float64"), b.astype("float64")) is None
    assert dnnl_ops.add(a[:, ::2], b[:, ::2]) is None
    assert dnnl_ops.relu_backward(b[:, :-1], y[:, 1:].copy()) is None


@LIBRARY
def test_relu_gradient_on_large_arrays(library):
    rng = onp.random.default_rng(3)
    xv = rng.standard_normal((4, dnnl_ops.ELEMENTWISE_MIN // 4 + 1)).astype("float32")
    gv = rng.standard_normal(xv.shape).astype("float32")
    with _library(library):
        x = np.array(xv)
        x.attach_grad()
        with autograd.record():
            y = npx.relu(x)
        y.backward(np.array(gv))
    onp.testing.assert_array_equal(x.grad.asnumpy(), gv * (xv > 0))
    # second order: the rule stays on the tape when recorded
    x = np.array(xv[:, :8])
    x.attach_grad()
    with autograd.record():
        g = autograd.grad(npx.relu(x) * x, [x], create_graph=True)[0]
        s = g.sum()
    s.backward()
    onp.testing.assert_allclose(x.grad.asnumpy(), 2.0 * (xv[:, :8] > 0), atol=1e-6)


@LIBRARY
def test_dense_weight_gradient_is_c_ordered_and_right(library):
    rng = onp.random.default_rng(4)
    xv = rng.standard_normal((5, 7)).astype("float32")
    gv = rng.standard_normal((5, 3)).astype("float32")
    with _library(library):
        layer = nn.Dense(3, in_units=7)
        layer.initialize()
        x = np.array(xv)
        x.attach_grad()
        with autograd.record():
            y = layer(x)
        y.backward(np.array(gv))
    wv = layer.weight.data().asnumpy()
    gw = layer.weight.grad().asnumpy()
    onp.testing.assert_allclose(gw, gv.T.astype("float64") @ xv, rtol=1e-5, atol=1e-5)
    onp.testing.assert_allclose(x.grad.asnumpy(), gv.astype("float64") @ wv, rtol=1e-5,
                                atol=1e-5)
    assert layer.weight.grad()._data.flags.c_contiguous


def test_tape_keeps_no_input_for_output_only_gradients():
    x = np.array(onp.linspace(-1, 1, 12, dtype="float32"))
    x.attach_grad()
    with autograd.record():
        mid = x * 2
        ref = weakref.ref(mid._data)
        y = npx.relu(mid)
        del mid
        gc.collect()
        assert ref() is None        # relu's tape entry does not hold its input
        z = np.exp(y).sum()
    z.backward()
    xv = onp.linspace(-1, 1, 12, dtype="float32")
    want = onp.exp(onp.maximum(2 * xv, 0)) * 2 * (xv > 0)
    onp.testing.assert_allclose(x.grad.asnumpy(), want, rtol=1e-6)


@LIBRARY
def test_conv_gradient_through_a_concatenation_slice(library):
    """A concatenation hands each branch a strided slice of its gradient (GoogLeNet)."""
    rng = onp.random.default_rng(5)
    xv = rng.standard_normal((2, 3, 6, 6)).astype("float32")
    g1 = rng.standard_normal((2, 4, 6, 6)).astype("float32")
    g2 = rng.standard_normal((2, 5, 6, 6)).astype("float32")
    with _library(library):
        a = nn.Conv2D(4, kernel_size=3, padding=1)
        b = nn.Conv2D(5, kernel_size=1, use_bias=False)
        for layer in (a, b):
            layer.initialize()
        grads = []
        for joined in (True, False):
            x = np.array(xv)
            x.attach_grad()
            with autograd.record():
                y1, y2 = a(x), b(x)
                if joined:
                    y = np.concatenate([y1, y2], axis=1)
            if joined:
                y.backward(np.array(onp.concatenate([g1, g2], axis=1)))
            else:
                autograd.backward([y1, y2], [np.array(g1), np.array(g2)])
            grads.append([x.grad.asnumpy(), a.weight.grad().asnumpy().copy(),
                          a.bias.grad().asnumpy().copy(), b.weight.grad().asnumpy().copy()])
    for got, want in zip(*grads):
        onp.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


@pytest.mark.skipif(not dnnl.available(), reason="oneDNN not installed")
@pytest.mark.parametrize("channels", [3, 16])       # 3: blocked layouts pad the channels
def test_eager_ops_keep_no_layout_copies_between_calls(channels):
    """An eager op's copies in the primitive's layout and its scratchpad come out of the
    calling thread's buffer (shim.c), so repeated calls give the same bits and the ops
    hold no activation-sized memory of their own."""
    import ctypes
    lib = dnnl.library.shim()
    lib.kd_held_bytes.restype, lib.kd_held_bytes.argtypes = ctypes.c_int64, []
    rng = onp.random.default_rng(6)
    x = rng.standard_normal((4, channels, 20, 20)).astype("float32")
    w = rng.standard_normal((32, channels, 3, 3)).astype("float32")
    b = rng.standard_normal(32).astype("float32")
    g = rng.standard_normal((4, 32, 18, 18)).astype("float32")
    geo = ((1, 1), (1, 1), (0, 0, 0, 0), 1)

    def all_three():
        return [dnnl_ops.conv_forward(x, w, g.shape, *geo, b=b, relu=True),
                dnnl_ops.conv_backward_data(g, w, x.shape, *geo),
                dnnl_ops.conv_backward_weights(x, g, w.shape, *geo)]

    first = all_three()
    held = lib.kd_held_bytes()
    for _ in range(2):
        for got, want in zip(all_three(), first):
            onp.testing.assert_array_equal(got, want)
    assert lib.kd_held_bytes() == held


def test_relu_gradient_at_nan_is_zero_on_every_path():
    """oneDNN's ReLU backward passes g where the output is NaN; kiln's rule (and the
    compiled backward's mask) gives 0 there, so the eager fast path mends those places."""
    import kiln
    from kiln import autograd
    data = onp.random.default_rng(0).normal(size=(256, 1024)).astype("float32")
    data[3, :7] = onp.nan
    grads = []
    for fn in (lambda v: kiln.npx.relu(v) * 3, kiln.hybridize(lambda v: kiln.npx.relu(v) * 3)):
        x = kiln.np.array(data)
        x.attach_grad()
        with autograd.record():
            y = fn(x)
        y.backward()
        grads.append(x.grad.asnumpy())
    assert (grads[0][3, :7] == 0).all()
    onp.testing.assert_array_equal(grads[0], grads[1])
