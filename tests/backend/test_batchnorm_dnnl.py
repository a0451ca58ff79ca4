"""Eager float32 batch norm on the shim (kiln/backend/dnnl/bnorm.c via bnorm.py): oneDNN's
batch_normalization primitive where the channels are last, bnorm.c's row loops where they
are first. Its outputs, gradients (data, gamma, beta) and running statistics against kiln's
NumPy kernels (the same call with the layer off), float64 references, PyTorch, and the
hybridized network."""
import numpy as onp
import pytest

from kiln import autograd
from kiln import gluon, np, npx
from kiln.backend.dnnl import library as dnnl
from conftest import assert_close

needs_dnnl = pytest.mark.skipif(not dnnl.available(), reason="oneDNN not installed")

R = onp.random.default_rng(7)

# (shape, axis): channels first with rows (NCHW, 3-D, axis 0), channels last (inner 1),
# a dense layer's (N, C)
CASES = [((4, 6, 5, 7), 1), ((3, 5, 33), 1), ((6, 2, 3), 0), ((2, 3, 4, 6), 3),
         ((16, 10), 1), ((5, 4, 3, 8), 2)]


@pytest.fixture
def calls(monkeypatch):
    """How often each function of bnorm.py ran: a test that means the shim must see it."""
    from kiln.backend.dnnl import bnorm
    seen = {}
    for name in ("train", "infer", "backward", "stats"):
        real = getattr(bnorm, name)

        def spy(*a, _real=real, _name=name, **k):
            seen[_name] = seen.get(_name, 0) + 1
            return _real(*a, **k)
        monkeypatch.setattr(bnorm, name, spy)
    return seen


def _inputs(shape, axis, scale=2.0, shift=1.5):
    c = shape[axis]
    x = (R.standard_normal(shape) * scale + shift).astype("float32")
    w = R.standard_normal(shape).astype("float32")
    gamma, beta = R.uniform(0.5, 1.5, c).astype("float32"), R.uniform(-.5, .5, c).astype("float32")
    return x, w, gamma, beta


def _train_step(x, w, gamma, beta, axis, fix_gamma=False, momentum=0.9, eps=1e-5):
    """y, x.grad, gamma.grad, beta.grad, running mean and var after one eager step."""
    c = x.shape[axis]
    xs = [np.array(v) for v in (x, gamma, beta)]
    for v in xs:
        v.attach_grad()
    rm, rv = np.array(onp.full(c, 0.25, x.dtype)), np.array(onp.full(c, 2.0, x.dtype))
    with autograd.record():
        y = npx.batch_norm(*xs, rm, rv, eps=eps, momentum=momentum, fix_gamma=fix_gamma,
                           axis=axis)
        (y * np.array(w)).sum().backward()
    return [y.asnumpy()] + [v.grad.asnumpy() for v in xs] + [rm.asnumpy(), rv.asnumpy()]


def _reference(x, w, gamma, beta, axis, fix_gamma=False, momentum=0.9, eps=1e-5):
    """The same step in float64 NumPy, by the textbook formulas."""
    x, w, gamma, beta = (v.astype("float64") for v in (x, w, gamma, beta))
    red = tuple(i for i in range(x.ndim) if i != axis)
    b = tuple(x.shape[axis] if i == axis else 1 for i in range(x.ndim))
    m = x.size // x.shape[axis]
    g = onp.ones_like(gamma) if fix_gamma else gamma
    mean, var = x.mean(red), x.var(red)
    r = 1 / onp.sqrt(var + eps)
    xhat = (x - mean.reshape(b)) * r.reshape(b)
    y = xhat * g.reshape(b) + beta.reshape(b)
    dbeta, dgamma = w.sum(red), (w * xhat).sum(red)
    dx = (g * r).reshape(b) * (w - dbeta.reshape(b) / m - xhat * dgamma.reshape(b) / m)
    rm = 0.25 * momentum + mean * (1 - momentum)
    rv = 2.0 * momentum + var * (1 - momentum)
    return [y, dx, dgamma if not fix_gamma else onp.zeros_like(dgamma), dbeta, rm, rv]


NAMES = ("y", "dx", "dgamma", "dbeta", "running_mean", "running_var")


def _check(got, want, rtol, atol):
    for name, a, b in zip(NAMES, got, want):
        assert_close(a, b, rtol=rtol, atol=atol, msg=name)


@needs_dnnl
@pytest.mark.parametrize("shape,axis", CASES)
def test_training_step_matches_numpy_kernels_and_float64(shape, axis, calls):
    x, w, gamma, beta = _inputs(shape, axis)
    fast = _train_step(x, w, gamma, beta, axis)
    assert calls.get("train") == 1 and calls.get("backward") == 1
    with dnnl.disabled():
        slow = _train_step(x, w, gamma, beta, axis)
    assert calls.get("train") == 1 and calls.get("backward") == 1
    _check(fast, slow, 2e-5, 2e-5)
    _check(fast, _reference(x, w, gamma, beta, axis), 2e-5, 2e-5)


@pytest.mark.parametrize("dnnl_on", [pytest.param(True, marks=needs_dnnl), False])
@pytest.mark.parametrize("shape,axis", [((4, 6, 5, 7), 1), ((2, 3, 4, 6), 3), ((16, 10), 1)])
def test_training_gradients_match_torch(shape, axis, dnnl_on):
    torch = pytest.importorskip("torch")
    x, w, gamma, beta = _inputs(shape, axis)
    if dnnl_on:
        got = _train_step(x, w, gamma, beta, axis)
    else:
        with dnnl.disabled():
            got = _train_step(x, w, gamma, beta, axis)
    ts = [torch.tensor(v.astype("float64"), requires_grad=True) for v in (x, gamma, beta)]
    rm, rv = torch.full((x.shape[axis],), 0.25, dtype=torch.float64), \
        torch.full((x.shape[axis],), 2.0, dtype=torch.float64)
    ty = torch.nn.functional.batch_norm(ts[0].movedim(axis, 1), rm, rv, ts[1], ts[2],
                                        training=True, momentum=0.1,
                                        eps=1e-5).movedim(1, axis)
    (ty * torch.tensor(w.astype("float64"))).sum().backward()
    want = [ty.detach().numpy()] + [t.grad.numpy() for t in ts]
    _check(got[:4], want, 2e-5, 2e-5)
    # PyTorch keeps the unbiased variance as its running one; kiln, as MXNet, the biased
    assert_close(got[4], rm.numpy(), rtol=1e-5, atol=1e-6)


@needs_dnnl
def test_fix_gamma_and_momentum(calls):
    x, w, gamma, beta = _inputs((3, 4, 6, 5), 1)
    got = _train_step(x, w, gamma, beta, 1, fix_gamma=True, momentum=0.7, eps=1e-3)
    assert calls.get("backward") == 1
    want = _reference(x, w, gamma, beta, 1, fix_gamma=True, momentum=0.7, eps=1e-3)
    _check(got, want, 2e-5, 2e-5)


@needs_dnnl
@pytest.mark.parametrize("shape,axis", CASES)
def test_mean_large_against_the_spread(shape, axis):
    """A mean of 1000 with a spread of 0.01 (float32 holds x to about 6e-5, so the
    normalized values and dx carry errors near 1e-3 of their size on either path): the
    shim is no further from the float64 reference than the NumPy kernels, and its running
    variance keeps three digits."""
    x, w, gamma, beta = _inputs(shape, axis, scale=0.01, shift=1000.0)
    fast = _train_step(x, w, gamma, beta, axis)
    with dnnl.disabled():
        slow = _train_step(x, w, gamma, beta, axis)
    want = _reference(x, w, gamma, beta, axis)
    for name, a, b, c in zip(NAMES, fast, slow, want):
        size = onp.abs(c).max()
        err_fast, err_slow = onp.abs(a - c).max(), onp.abs(b - c).max()
        assert err_fast <= 2 * err_slow + 1e-4 * size, (name, err_fast, err_slow)
        assert err_fast <= 1e-2 * size, (name, err_fast, size)
    assert_close(fast[5], want[5], rtol=1e-3, atol=1e-8)


@needs_dnnl
@pytest.mark.parametrize("shape,axis", CASES)
def test_inference_matches_numpy_kernels(shape, axis, calls):
    x, _, gamma, beta = _inputs(shape, axis)
    c = shape[axis]
    rm, rv = R.uniform(-1, 1, c).astype("float32"), R.uniform(0.5, 2, c).astype("float32")

    def run():
        return npx.batch_norm(np.array(x), np.array(gamma), np.array(beta), np.array(rm),
                              np.array(rv), eps=1e-3, fix_gamma=False, axis=axis).asnumpy()
    fast = run()
    assert calls.get("infer") == 1
    with dnnl.disabled():
        slow = run()
    assert_close(fast, slow, rtol=1e-5, atol=1e-5)


@needs_dnnl
@pytest.mark.parametrize("shape,axis", [((4, 6, 5, 7), 1), ((2, 3, 4, 6), 3), ((16, 10), 1)])
def test_nan_propagates_as_in_numpy_kernels(shape, axis):
    x, w, gamma, beta = _inputs(shape, axis)
    index = [0] * len(shape)
    index[axis] = 1
    x[tuple(index)] = onp.nan
    fast = _train_step(x, w, gamma, beta, axis)
    with dnnl.disabled():
        slow = _train_step(x, w, gamma, beta, axis)
    for name, a, b in zip(NAMES, fast, slow):
        assert (onp.isnan(a) == onp.isnan(b)).all(), name
        assert onp.isnan(a).any() == (name != "dbeta"), name    # dbeta = sum(g) only
        ok = ~onp.isnan(b)
        assert_close(a[ok], b[ok], rtol=2e-5, atol=2e-5, msg=name)


@needs_dnnl
def test_float64_stays_on_numpy(calls):
    x, w, gamma, beta = (v.astype("float64") for v in _inputs((3, 4, 5), 1))
    got = _train_step(x, w, gamma, beta, 1)
    assert not calls
    _check(got, _reference(x, w, gamma, beta, 1), 1e-10, 1e-10)


def _net():
    net = gluon.nn.HybridSequential()
    net.add(gluon.nn.Conv2D(6, 3, padding=1), gluon.nn.BatchNorm(), gluon.nn.Activation("relu"),
            gluon.nn.Flatten(), gluon.nn.Dense(5), gluon.nn.BatchNorm())
    net.initialize()
    return net


def _net_step(net, x):
    with autograd.record():
        y = net(x)
        (y * y).sum().backward()
    params = net.collect_params()
    grads = {k: p.grad().asnumpy() for k, p in params.items() if p.grad_req != "null"}
    stats = {k: p.data().asnumpy() for k, p in params.items() if "running" in k}
    return y.asnumpy(), grads, stats


@needs_dnnl
def test_hybridized_network_equals_eager(calls):
    """Conv, BatchNorm (channels first), ReLU, Dense, BatchNorm (N, C): the eager shim
    path against the compiled step, outputs, every gradient and the running statistics."""
    x = np.array(R.standard_normal((4, 3, 8, 8)).astype("float32"))
    eager, hybrid = _net(), _net()
    eager(x)
    hybrid(x)
    for (_, a), (_, b) in zip(sorted(eager.collect_params().items()),
                              sorted(hybrid.collect_params().items())):
        b.set_data(a.data())
    hybrid.hybridize()
    got_e = _net_step(eager, x)
    assert calls.get("train") == 2 and calls.get("backward") == 2
    got_h = _net_step(hybrid, x)
    assert_close(got_e[0], got_h[0], rtol=1e-4, atol=1e-4)
    for part in (1, 2):
        assert got_e[part].keys() == got_h[part].keys()
        for k in got_e[part]:
            assert_close(got_e[part][k], got_h[part][k], rtol=1e-4, atol=1e-4, msg=k)
