"""Values kept with eager arrays (kiln/backend/dnnl/derived.py): max pooling's workspace
from a recorded forward serves its backward. A kept value must never be served for an
array that kiln wrote into since, nor outlive its array."""
import gc

import numpy as onp
import pytest

import kiln
from kiln import autograd
from kiln import np, npx
from kiln.backend import dnnl
from kiln.backend.dnnl import derived

pytestmark = pytest.mark.skipif(not dnnl.available(), reason="oneDNN not installed")


def test_kept_value_is_served_until_a_write_or_the_arrays_death():
    gc.collect()       # arrays of earlier tests must not die (and leave) while this one counts
    a = onp.zeros(4, onp.float32)
    derived.put(a, "k", 1)
    assert derived.get(a, "k") == 1
    assert derived.get(a, "other") is None
    assert derived.get(onp.zeros(4, onp.float32), "k") is None
    before = derived.size()
    x = np.ones(3)
    x[0] = 5.0                      # a counted write: every kept value is stale now
    assert derived.get(a, "k") is None
    derived.put(a, "k", 2)
    assert derived.get(a, "k") == 2
    del a
    gc.collect()
    assert derived.size() == before - 1


def _pool_step(x, grad_of_x=True):
    with autograd.record():
        y = npx.pooling(x, kernel=(3, 3), stride=(2, 2), pad=(1, 1), pool_type="max")
        loss = (y * y).sum()
    loss.backward()
    return y.asnumpy(), x.grad.asnumpy().copy()


def test_max_pool_backward_takes_the_forwards_workspace(monkeypatch):
    from kiln.backend.dnnl import ops
    made = []
    real = ops._pool_with_workspace
    monkeypatch.setattr(ops, "_pool_with_workspace", lambda *a: made.append(1) or real(*a))
    rng = onp.random.default_rng(0)
    xv = rng.standard_normal((4, 16, 13, 13)).astype("float32")
    xv[0, 0, :3, :3] = 1.0          # ties: the first maximum of a window takes the gradient
    x = np.array(xv)
    x.attach_grad()
    y, gx = _pool_step(x)
    assert len(made) == 1           # made once, in the forward, not again in the backward
    with dnnl.library.disabled():
        y0, gx0 = _pool_step(x)
    onp.testing.assert_array_equal(y, y0)
    onp.testing.assert_allclose(gx, gx0, rtol=1e-6, atol=1e-6)


def test_max_pool_backward_after_a_write_into_its_input():
    """x written between forward and backward: the backward must see the new values, as
    it did when it always ran the forward again."""
    rng = onp.random.default_rng(1)
    x = np.array(rng.standard_normal((2, 8, 9, 9)).astype("float32"))
    x.attach_grad()
    with autograd.record():
        y = npx.pooling(x, kernel=(2, 2), stride=(2, 2), pool_type="max")
    x[:] = np.array(rng.standard_normal((2, 8, 9, 9)).astype("float32"))
    y.backward()
    got = x.grad.asnumpy().copy()
    with dnnl.library.disabled():
        with autograd.record():
            y = npx.pooling(x, kernel=(2, 2), stride=(2, 2), pool_type="max")
        y.backward()
    # both backwards read x as it is now
    onp.testing.assert_array_equal(got, x.grad.asnumpy())


def test_pool_training_step_equals_hybridized():
    from kiln.gluon import nn
    net = nn.Sequential()
    net.add(nn.Conv2D(8, kernel_size=3, padding=1, activation="relu"),
            nn.MaxPool2D(pool_size=3, strides=2, padding=1), nn.Dense(3))
    net.initialize(kiln.init.Xavier())
    x = np.array(onp.random.default_rng(2).standard_normal((4, 3, 10, 10)).astype("float32"))

    def grads():
        with autograd.record():
            loss = (net(x) ** 2).sum()
        loss.backward()
        return [p.grad().asnumpy().copy() for p in net.collect_params().values()]
    eager = grads()
    net.hybridize()
    for a, b in zip(eager, grads()):
        onp.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-4)


def test_stale_values_are_let_go_at_the_next_filing():
    """An array kept past its step (a batch the caller holds) keeps no stale value alive."""
    import weakref
    held = onp.zeros(4, onp.float32)

    class Value:
        pass
    value = Value()
    ref = weakref.ref(value)
    derived.put(held, "k", value)
    del value
    x = np.ones(3)
    x[0] = 2.0                      # a counted write
    derived.put(onp.zeros(2, onp.float32), "other", 1)
    gc.collect()
    assert ref() is None


def test_numpy_programs_keep_nothing_with_their_reused_buffers(monkeypatch):
    """The NumPy executor rewrites its buffers on each call without a counted write: a
    blocked copy kept with one of them in the first call must not serve the second."""
    from kiln.gluon import nn
    monkeypatch.setenv("KILN_BACKEND", "numpy")

    class Net(nn.HybridBlock):
        def __init__(self):
            super().__init__()
            self.c1 = nn.Conv2D(16, 3, padding=1)
            self.c2 = nn.Conv2D(16, 3, padding=1)

        def forward(self, x):
            return self.c2(self.c1(x) * 2.0 + 1.0)     # c2 reads an executor buffer
    net = Net()
    net.initialize(kiln.init.Xavier())
    rng = onp.random.default_rng(3)
    xs = [np.array(rng.standard_normal((2, 3, 8, 8)).astype("float32")) for _ in range(2)]

    def outputs():
        with autograd.record():
            ys = [net(x) for x in xs]
            (ys[0] * ys[1]).sum().backward()
        return [y.asnumpy() for y in ys] + [net.c2.weight.grad().asnumpy().copy()]
    eager = outputs()
    net.hybridize()
    for a, b in zip(outputs(), eager):
        onp.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-3)
