"""Both halves of a convolution's gradient from one converted copy of the output gradient
(kd_conv_backward in kiln/backend/dnnl/conv_backward.c, used by eager backward): the
results must be those of the two ops run one by one, of kiln's own kernels, and of
PyTorch, for every geometry the shim takes."""
import threading

import numpy as onp
import pytest

import kiln
from kiln import autograd
from kiln import np
from kiln.backend import dnnl
from kiln.gluon import nn
from kiln.ops.conv import conv_out_shape

pytestmark = pytest.mark.skipif(not dnnl.available(), reason="oneDNN not installed")

# x shape, w shape, stride, dilation (kiln's: 1 = dense), pad (lo, hi per dim), groups
CASES = [
    ((4, 32, 12, 12), (48, 32, 3, 3), (1, 1), (1, 1), (1, 1, 1, 1), 1),
    ((2, 16, 9, 9), (32, 8, 5, 5), (2, 2), (1, 1), (2, 2, 2, 2), 2),
    ((3, 1, 20, 20), (16, 1, 7, 7), (2, 2), (1, 1), (3, 3, 3, 3), 1),
    ((2, 64, 8, 8), (64, 64, 1, 1), (1, 1), (1, 1), (0, 0, 0, 0), 1),
    ((2, 8, 10, 10), (8, 8, 3, 3), (1, 1), (2, 2), (2, 1, 2, 1), 1),
    ((2, 16, 8, 8), (16, 1, 3, 3), (1, 1), (1, 1), (1, 1, 1, 1), 16),
    ((2, 4, 7), (6, 4, 3), (1,), (1,), (1, 1), 1),
    ((1, 16, 4, 5, 6), (16, 16, 3, 3, 3), (1, 1, 1), (1, 1, 1), (1, 1, 1, 1, 1, 1), 1),
]


def _ops():
    from kiln.backend.dnnl import ops
    return ops


def _data(case, seed=0):
    xs, ws, st, dl, pad, groups = case
    rng = onp.random.default_rng(seed)
    ys = conv_out_shape("conv", xs, ws, st, dl, pad, groups)
    return tuple(rng.standard_normal(s).astype("float32") for s in (xs, ws, ys))


def _own_kernels(case, x, w, g):
    """The gradients from kiln's own kernels (im2col + matmul), oneDNN off."""
    from kiln.ops.conv import conv_grad_data, conv_grad_weight
    _, _, st, dl, pad, groups = case
    a = dict(stride=st, dilation=dl, pad=pad, groups=groups)
    with dnnl.library.disabled():
        gx = conv_grad_data.impl(g, w, in_shape=x.shape[2:], **a)
        gw = conv_grad_weight.impl(x, g, kernel=w.shape[2:], **a)
    return gx, gw


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c[0]}-{c[1]}-g{c[5]}")
def test_shared_copy_equals_the_two_ops_and_own_kernels(case):
    ops = _ops()
    _, _, st, dl, pad, groups = case
    x, w, g = _data(case)
    gx, gw = ops.conv_backward(g, x, w, st, dl, pad, groups)
    # the same primitives on the same values: bit for bit what the two calls give
    onp.testing.assert_array_equal(gx, ops.conv_backward_data(g, w, x.shape, st, dl, pad,
                                                               groups))
    onp.testing.assert_array_equal(gw, ops.conv_backward_weights(x, g, w.shape, st, dl, pad,
                                                                  groups))
    rx, rw = _own_kernels(case, x, w, g)
    onp.testing.assert_allclose(gx, rx, rtol=1e-4, atol=1e-4)
    onp.testing.assert_allclose(gw, rw, rtol=1e-4, atol=1e-3)


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c[0]}-{c[1]}-g{c[5]}")
def test_bias_gradient_inside_the_weights_primitive(case):
    ops = _ops()
    _, _, st, dl, pad, groups = case
    x, w, g = _data(case, seed=8)
    gx, gw, gb = ops.conv_backward(g, x, w, st, dl, pad, groups, bias=True)
    plain = ops.conv_backward(g, x, w, st, dl, pad, groups)
    onp.testing.assert_array_equal(gx, plain[0])
    onp.testing.assert_allclose(gw, plain[1], rtol=1e-5, atol=1e-5)
    want = g.astype("float64").sum(axis=tuple(i for i in range(g.ndim) if i != 1))
    onp.testing.assert_allclose(gb, want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("case", CASES[:3] + CASES[5:7], ids=lambda c: f"{c[0]}-{c[1]}")
def test_shared_copy_matches_pytorch(case):
    torch = pytest.importorskip("torch")
    ops = _ops()
    _, _, st, dl, pad, groups = case
    x, w, g = _data(case, seed=1)
    gx, gw = ops.conv_backward(g, x, w, st, dl, pad, groups)
    nsp = len(st)
    tx = torch.tensor(x, requires_grad=True)
    tw = torch.tensor(w, requires_grad=True)
    # torch pads symmetrically: pad the input itself for kiln's (lo, hi) pairs
    flat = []
    for d in reversed(range(nsp)):
        flat += [pad[2 * d], pad[2 * d + 1]]
    conv = {1: torch.nn.functional.conv1d, 2: torch.nn.functional.conv2d,
            3: torch.nn.functional.conv3d}[nsp]
    y = conv(torch.nn.functional.pad(tx, flat), tw, stride=st, dilation=dl, groups=groups)
    y.backward(torch.tensor(g))
    onp.testing.assert_allclose(gx, tx.grad.numpy(), rtol=1e-4, atol=1e-4)
    onp.testing.assert_allclose(gw, tw.grad.numpy(), rtol=1e-4, atol=1e-3)


def test_shared_copy_on_a_fresh_thread_and_after_a_larger_op():
    """The copy and both ops' transient parts share the calling thread's buffer: right
    after it is made (a fresh thread), and after a larger op has grown it."""
    ops = _ops()
    case = CASES[0]
    x, w, g = _data(case, seed=2)
    want = ops.conv_backward(g, x, w, *case[2:])
    out = []
    t = threading.Thread(target=lambda: out.append(ops.conv_backward(g, x, w, *case[2:])))
    t.start()
    t.join()
    big = CASES[7]
    ops.conv_backward(*_data(big)[::-1][:1], *_data(big)[:2], *big[2:])
    again = ops.conv_backward(g, x, w, *case[2:])
    for got in (out[0], again):
        onp.testing.assert_array_equal(got[0], want[0])
        onp.testing.assert_array_equal(got[1], want[1])


def test_ops_in_use_are_not_evicted(monkeypatch):
    """With the op cache full, making the weights op must not free the data op just fetched
    for the same call (the cache drops the least recently used)."""
    ops = _ops()
    monkeypatch.setattr(ops, "MAX_OPS", 2)
    for case in CASES[:4] + CASES[:2]:
        x, w, g = _data(case, seed=3)
        gx, gw = ops.conv_backward(g, x, w, *case[2:])
        rx, rw = _own_kernels(case, x, w, g)
        onp.testing.assert_allclose(gx, rx, rtol=1e-4, atol=1e-4)
        onp.testing.assert_allclose(gw, rw, rtol=1e-4, atol=1e-3)


def _net(activation, use_bias):
    net = nn.Sequential()
    net.add(nn.Conv2D(16, kernel_size=3, padding=1, activation=activation, use_bias=use_bias),
            nn.Conv2D(8, kernel_size=3, strides=2, activation=activation, use_bias=use_bias))
    net.initialize(kiln.init.Xavier())
    return net


def _equals_own_kernels_and_hybridized(got, grads, net, x):
    """got (eager gradients on oneDNN) equals grads(net, x) on kiln's own kernels and
    hybridized."""
    with dnnl.library.disabled():
        want = grads(net, x)
    for a, b in zip(got, want):
        onp.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-4)
    net.hybridize()
    for a, b in zip(got, grads(net, x)):
        onp.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-4)


def _grads(net, x):
    with autograd.record():
        y = net(x)
        loss = (y * y).sum()
    loss.backward()
    return [p.grad().asnumpy().copy() for p in net.collect_params().values()]


@pytest.mark.parametrize("activation,use_bias", [("relu", True), (None, True), (None, False)])
def test_eager_backward_takes_the_shared_path_and_equals_reference(monkeypatch, activation,
                                                                   use_bias):
    ops = _ops()
    calls = []
    real = ops.conv_backward
    monkeypatch.setattr(ops, "conv_backward",
                        lambda *a, **k: calls.append(1) or real(*a, **k))
    net = _net(activation, use_bias)
    x = np.array(onp.random.default_rng(4).standard_normal((4, 3, 12, 12)).astype("float32"))
    x.attach_grad()
    got = _grads(net, x)
    # x has a gradient too: both convolutions take both halves at once
    assert len(calls) == 2
    _equals_own_kernels_and_hybridized(got, _grads, net, x)


def test_second_order_gradient_keeps_the_recorded_path():
    """Inside a recorded backward (create_graph) the halves must stay on the tape."""
    rng = onp.random.default_rng(5)
    x = np.array(rng.standard_normal((2, 4, 6, 6)).astype("float32"))
    w = np.array(rng.standard_normal((5, 4, 3, 3)).astype("float32"))
    x.attach_grad()
    w.attach_grad()
    with autograd.record():
        y = kiln.npx.convolution(x, w, kernel=(3, 3), pad=(1, 1), num_filter=5, no_bias=True)
        gx, = autograd.grad((y * y).sum(), [x], create_graph=True)
        z = (gx * gx).sum()
    z.backward()
    got = w.grad.asnumpy().copy()
    with dnnl.library.disabled():
        with autograd.record():
            y = kiln.npx.convolution(x, w, kernel=(3, 3), pad=(1, 1), num_filter=5,
                                     no_bias=True)
            gx, = autograd.grad((y * y).sum(), [x], create_graph=True)
            z = (gx * gx).sum()
        z.backward()
    onp.testing.assert_allclose(got, w.grad.asnumpy(), rtol=1e-3, atol=1e-3)


class _Branches(kiln.gluon.nn.Block):
    """One activation read by three convolutions (a GoogLeNet block's branches)."""
    def __init__(self):
        super().__init__()
        self.stem = nn.Conv2D(16, kernel_size=3, padding=1, activation="relu")
        self.a = nn.Conv2D(8, kernel_size=1, activation="relu")
        self.b = nn.Conv2D(8, kernel_size=3, padding=1)
        self.c = nn.Conv2D(8, kernel_size=5, padding=2, strides=2, use_bias=False)

    def forward(self, x):
        t = self.stem(x)
        return (self.a(t) * self.b(t)).sum() + (self.c(t) ** 2).sum()


def _branch_grads(net, x):
    with autograd.record():
        loss = net(x)
    loss.backward()
    return [p.grad().asnumpy().copy() for p in net.collect_params().values()] + [
        x.grad.asnumpy().copy()]


def test_an_activations_blocked_copy_serves_every_convolution_that_reads_it(monkeypatch):
    ops = _ops()
    reused = []
    real = ops._held

    def spy(key, op, keep):
        held, fill, made = real(key, op, keep)
        reused.extend(i for i in keep if held[i] and not fill >> i & 1)
        return held, fill, made
    monkeypatch.setattr(ops, "_held", spy)
    net = _Branches()
    net.initialize(kiln.init.Xavier())
    x = np.array(onp.random.default_rng(6).standard_normal((4, 3, 10, 10)).astype("float32"))
    x.attach_grad()
    got = _branch_grads(net, x)
    assert reused           # later convolutions and the weight gradients read a kept copy
    _equals_own_kernels_and_hybridized(got, _branch_grads, net, x)


def test_a_write_between_forward_and_backward_is_seen_by_the_weight_gradient():
    """The weight gradient reads x as it is at backward time, as it did before copies
    were kept: a kept copy of the old x must not be served."""
    rng = onp.random.default_rng(7)
    x = np.array(rng.standard_normal((2, 16, 8, 8)).astype("float32"))
    w = np.array(rng.standard_normal((16, 16, 3, 3)).astype("float32"))
    w.attach_grad()
    with autograd.record():
        y = kiln.npx.convolution(x, w, kernel=(3, 3), pad=(1, 1), num_filter=16,
                                 no_bias=True)
    x[:] = np.array(rng.standard_normal((2, 16, 8, 8)).astype("float32"))
    y.backward(np.ones(y.shape))
    got = w.grad.asnumpy().copy()
    with dnnl.library.disabled():
        with autograd.record():
            y = kiln.npx.convolution(x, w, kernel=(3, 3), pad=(1, 1), num_filter=16,
                                     no_bias=True)
        y.backward(np.ones(y.shape))
    onp.testing.assert_allclose(got, w.grad.asnumpy(), rtol=1e-4, atol=1e-3)


def test_no_copy_is_kept_past_the_limit(monkeypatch):
    from kiln.backend.dnnl import derived
    monkeypatch.setattr(derived, "limit_bytes", lambda: derived.held_bytes())
    before = derived.held_bytes()
    net = _Branches()
    net.initialize(kiln.init.Xavier())
    x = np.array(onp.random.default_rng(9).standard_normal((4, 3, 10, 10)).astype("float32"))
    x.attach_grad()
    got = _branch_grads(net, x)
    assert derived.held_bytes() == before
    _equals_own_kernels_and_hybridized(got, _branch_grads, net, x)
