"""Eager float32 leaky ReLU's one-pass shortcut (kiln/npx/fused_leaky.py): the bits of the
composite x * maximum(x > 0, slope) forward and backward, special values included, the
composite under create_graph, and the hybridized block."""
import numpy as onp
import pytest

from kiln import autograd
from kiln import gluon, np, npx
from kiln.backend.dnnl import library as dnnl
from conftest import assert_close

pytestmark = pytest.mark.skipif(not dnnl.available(), reason="oneDNN shim not built")

R = onp.random.default_rng(5)


def _values(shape=(3, 4, 5, 6)):
    x = R.standard_normal(shape).astype("float32")
    flat = x.reshape(-1)
    flat[:8] = [onp.nan, onp.inf, -onp.inf, 0.0, -0.0, 1e-45, -1e-45, -3e38]
    return x


def _step(x, g, slope):
    xa = np.array(x)
    xa.attach_grad()
    with autograd.record():
        y = npx.leaky_relu(xa, act_type="leaky", slope=slope)
    y.backward(np.array(g))
    return y.asnumpy(), xa.grad.asnumpy()


@pytest.mark.parametrize("slope", [0.0, 0.2, 1.0])
def test_same_bits_as_the_composite(slope, monkeypatch):
    from kiln.npx import fused_leaky
    x, g = _values(), R.standard_normal((3, 4, 5, 6)).astype("float32")
    fast = _step(x, g, slope)
    monkeypatch.setattr(fused_leaky, "apply", lambda *a: None)
    slow = _step(x, g, slope)
    for a, b in zip(fast, slow):
        assert a.dtype == b.dtype == onp.float32
        assert a.tobytes() == b.tobytes()


def test_the_shortcut_runs_and_keeps_only_the_output(monkeypatch):
    from kiln.npx import fused_leaky
    lib = dnnl.shim()
    seen = []
    real = lib.kd_leaky_backward

    class Spy:
        def __getattr__(self, name):
            return getattr(lib, name)

        def kd_leaky_backward(self, *a):
            seen.append(a)
            return real(*a)
    monkeypatch.setattr(fused_leaky, "_shim", lambda x: Spy() if x.dtype == onp.float32
                        else None)
    y, dx = _step(_values(), onp.ones((3, 4, 5, 6), "float32"), 0.1)
    assert len(seen) == 1
    assert_close(dx, onp.where(y > 0, 1.0, onp.float32(0.1)))


def test_create_graph_and_float64_use_the_composite():
    x = np.array(R.standard_normal((4, 5)).astype("float32"))
    x.attach_grad()
    with autograd.record():
        y = npx.leaky_relu(x, act_type="leaky", slope=0.3)
        (gx,) = autograd.grad(y.sum() * 2, [x], create_graph=True)
        z = (gx * x).sum()
    z.backward()
    want = onp.where(x.asnumpy() > 0, 2.0, 0.6)
    assert_close(gx.asnumpy(), want)
    assert_close(x.grad.asnumpy(), want)
    x64 = R.standard_normal((4, 5))
    y64 = npx.leaky_relu(np.array(x64), act_type="leaky", slope=0.3).asnumpy()
    assert y64.dtype == onp.float64
    assert_close(y64, x64 * onp.where(x64 > 0, 1.0, 0.3), rtol=1e-15, atol=0)


def test_hybridized_block_equals_eager():
    x = np.array(R.standard_normal((2, 3, 4, 4)).astype("float32"))
    results = []
    for hybrid in (False, True):
        net = gluon.nn.HybridSequential()
        net.add(gluon.nn.Conv2D(4, 3), gluon.nn.LeakyReLU(0.2))
        net.initialize()
        net[0].weight.set_data(np.array(onp.linspace(-1, 1, 4 * 3 * 9, dtype="float32")
                                        .reshape(4, 3, 3, 3)))
        if hybrid:
            net.hybridize()
        with autograd.record():
            y = net(x)
            (y * y).sum().backward()
        results.append((y.asnumpy(), net[0].weight.grad().asnumpy()))
    for a, b in zip(*results):
        assert_close(a, b, rtol=1e-5, atol=1e-5)
