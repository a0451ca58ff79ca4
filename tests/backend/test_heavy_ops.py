"""The heavy primitives (conv, pool and their gradients) on oneDNN against kiln's own
kernels (their windows decompositions) and PyTorch, over hypothesis-drawn shapes, strides,
paddings, dilations and groups; hybridized against eager; errors; the library turned off."""
import contextlib
import os
import subprocess
import sys

import numpy as onp
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import kiln
from kiln import autograd
from kiln import np, npx
from kiln.backend import dnnl
from kiln.base import KilnError
from kiln.gluon import nn
from kiln.ndarray import ndarray
from kiln.ops import REGISTRY
from paths import ROOT

FEW = settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
needs_dnnl = pytest.mark.skipif(not dnnl.available(), reason="oneDNN not installed")


def _call(name, *arrays, **attrs):
    return REGISTRY[name](*[ndarray._wrap(a) for a in arrays], **attrs).asnumpy()


def _both(name, *arrays, **attrs):
    """(oneDNN result, kiln's own result) of one primitive."""
    fast = _call(name, *arrays, **attrs)
    with dnnl.disabled():
        slow = _call(name, *arrays, **attrs)
    return fast, slow


def _close(a, b, scale=1.0):
    onp.testing.assert_allclose(a, b, rtol=2e-4, atol=2e-4 * scale)


@st.composite
def conv_cases(draw):
    nsp = draw(st.integers(1, 3))
    groups = draw(st.integers(1, 3))
    cg, fg = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    kernel = tuple(draw(st.integers(1, 3)) for _ in range(nsp))
    stride = tuple(draw(st.integers(1, 3)) for _ in range(nsp))
    dilation = tuple(draw(st.integers(1, 2)) for _ in range(nsp))
    pad = tuple(draw(st.integers(0, 2)) for _ in range(2 * nsp))
    size = tuple(max(draw(st.integers(1, 7)), dilation[i] * (kernel[i] - 1) + 1 - pad[2 * i]
                     - pad[2 * i + 1]) for i in range(nsp))
    n = draw(st.integers(1, 2))
    rng = onp.random.default_rng(draw(st.integers(0, 2 ** 16)))
    x = rng.standard_normal((n, groups * cg) + size).astype(onp.float32)
    w = rng.standard_normal((groups * fg, cg) + kernel).astype(onp.float32)
    return x, w, dict(stride=stride, dilation=dilation, pad=pad, groups=groups)


@needs_dnnl
@FEW
@given(conv_cases())
def test_conv_and_gradients_match_own_kernels(case):
    x, w, a = case
    y, y_ref = _both("conv", x, w, **a)
    _close(y, y_ref, onp.abs(y_ref).max())
    g = onp.random.default_rng(1).standard_normal(y.shape).astype(onp.float32)
    gx, gx_ref = _both("conv_grad_data", g, w, in_shape=x.shape[2:], **a)
    _close(gx, gx_ref, onp.abs(gx_ref).max())
    gw, gw_ref = _both("conv_grad_weight", x, g, kernel=w.shape[2:], **a)
    _close(gw, gw_ref, onp.abs(gw_ref).max())


@FEW
@given(conv_cases())
def test_conv_matches_pytorch(case):
    torch = pytest.importorskip("torch")
    F = torch.nn.functional
    x, w, a = case
    nsp = x.ndim - 2
    tx, tw = torch.tensor(x, requires_grad=True), torch.tensor(w, requires_grad=True)
    widths = [p for i in reversed(range(nsp)) for p in (a["pad"][2 * i], a["pad"][2 * i + 1])]
    ty = getattr(F, f"conv{nsp}d")(F.pad(tx, widths), tw, stride=a["stride"],
                                    dilation=a["dilation"], groups=a["groups"])
    g = onp.random.default_rng(2).standard_normal(tuple(ty.shape)).astype(onp.float32)
    ty.backward(torch.tensor(g))
    kx, kw = np.array(x), np.array(w)
    kx.attach_grad()
    kw.attach_grad()
    with autograd.record():
        ky = REGISTRY["conv"](kx, kw, **a)
    ky.backward(np.array(g))
    scale = max(1.0, float(onp.abs(g).max()) * x.size ** 0.5)
    _close(ky.asnumpy(), ty.detach().numpy(), scale)
    _close(kx.grad.asnumpy(), tx.grad.numpy(), scale)
    _close(kw.grad.asnumpy(), tw.grad.numpy(), scale)


@st.composite
def pool_cases(draw):
    nsp = draw(st.integers(1, 3))
    kind = draw(st.sampled_from(["max", "avg", "avg_valid"]))
    kernel = tuple(draw(st.integers(1, 3)) for _ in range(nsp))
    stride = tuple(draw(st.integers(1, 3)) for _ in range(nsp))
    pad = tuple(draw(st.integers(0, kernel[i // 2] - 1)) for i in range(2 * nsp))
    size = tuple(max(draw(st.integers(1, 6)), kernel[i] - pad[2 * i] - pad[2 * i + 1])
                 for i in range(nsp))
    shape = (draw(st.integers(1, 2)), draw(st.integers(1, 3))) + size
    rng = onp.random.default_rng(draw(st.integers(0, 2 ** 16)))
    # distinct values: no ties, so the maximum of every window is unique
    x = (rng.permutation(int(onp.prod(shape))).reshape(shape) * 0.01).astype(onp.float32)
    return x, dict(kind=kind, kernel=kernel, stride=stride, pad=pad)


@needs_dnnl
@FEW
@given(pool_cases())
def test_pool_and_gradient_match_own_kernels(case):
    x, a = case
    y, y_ref = _both("pool", x, **a)
    _close(y, y_ref, onp.abs(y_ref).max())
    g = onp.random.default_rng(3).standard_normal(y.shape).astype(onp.float32)
    gx, gx_ref = _both("pool_grad", g, x, **a)
    _close(gx, gx_ref, onp.abs(gx_ref).max())


def test_max_pool_gradient_goes_to_the_first_maximum_like_pytorch():
    torch = pytest.importorskip("torch")
    x = onp.zeros((1, 1, 4, 4), onp.float32)        # all ties, as after a ReLU
    g = onp.arange(4, dtype=onp.float32).reshape(1, 1, 2, 2) + 1
    tx = torch.tensor(x, requires_grad=True)
    torch.nn.functional.max_pool2d(tx, 2).backward(torch.tensor(g))
    for off in (False, True):
        if off:
            with dnnl.disabled():
                got = _call("pool_grad", g, x, kind="max", kernel=(2, 2), stride=(2, 2),
                            pad=(0, 0, 0, 0))
        else:
            got = _call("pool_grad", g, x, kind="max", kernel=(2, 2), stride=(2, 2),
                        pad=(0, 0, 0, 0))
        onp.testing.assert_array_equal(got, tx.grad.numpy())


def _lenet():
    net = nn.HybridSequential()
    net.add(nn.Conv2D(6, kernel_size=5, padding=2, activation="relu"),
            nn.MaxPool2D(pool_size=2, strides=2),
            nn.Conv2D(16, kernel_size=3, groups=2, activation="relu"),
            nn.AvgPool2D(pool_size=2, strides=2, padding=1, count_include_pad=False),
            nn.Conv2DTranspose(4, kernel_size=3, strides=2), nn.BatchNorm(),
            nn.GlobalAvgPool2D(), nn.Dense(10))
    return net


def _loss_and_grads(net, x, y):
    loss_fn = kiln.gluon.loss.SoftmaxCrossEntropyLoss()
    with autograd.record():
        loss = loss_fn(net(x), y).mean()
    loss.backward()
    return float(loss.asnumpy()), [p.grad().asnumpy().copy()
                                   for p in net.collect_params().values() if p.grad_req != "null"]


@pytest.mark.parametrize("library", ["on", "off"])
def test_hybridized_matches_eager(library):
    x = np.array(onp.random.default_rng(0).standard_normal((4, 2, 12, 12)).astype("float32"))
    y = np.array(onp.array([1, 3, 0, 9], dtype="float32"))
    if library == "on" and not dnnl.available():
        pytest.skip("oneDNN not installed")
    ctx = dnnl.disabled() if library == "off" else _nothing()
    with ctx:
        net = _lenet()
        net.initialize(init=kiln.init.Xavier())
        eager = _loss_and_grads(net, x, y)
        net.hybridize()
        compiled = _loss_and_grads(net, x, y)
    assert abs(eager[0] - compiled[0]) < 1e-5 * max(1.0, abs(eager[0]))
    for a, b in zip(eager[1], compiled[1]):
        onp.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)


class _nothing:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


@needs_dnnl
def test_library_and_own_kernels_train_alike():
    x = np.array(onp.random.default_rng(4).standard_normal((4, 2, 12, 12)).astype("float32"))
    y = np.array(onp.array([1, 3, 0, 9], dtype="float32"))
    net = _lenet()
    net.initialize(init=kiln.init.Xavier())
    fast = _loss_and_grads(net, x, y)
    with dnnl.disabled():
        slow = _loss_and_grads(net, x, y)
    assert abs(fast[0] - slow[0]) < 1e-4 * max(1.0, abs(slow[0]))
    for a, b in zip(fast[1], slow[1]):
        onp.testing.assert_allclose(a, b, rtol=1e-3, atol=1e-4)


def test_bad_shapes_are_clear_errors():
    x = np.array(onp.ones((1, 3, 5, 5), "float32"))
    with pytest.raises(KilnError, match=r"conv: .*3 channels.*expects 4"):
        REGISTRY["conv"](x, np.array(onp.ones((2, 4, 3, 3), "float32")), stride=(1, 1),
                         dilation=(1, 1), pad=(0, 0, 0, 0))
    with pytest.raises(KilnError, match="larger than the padded input"):
        npx.convolution(x, np.array(onp.ones((2, 3, 7, 7), "float32")), kernel=(7, 7),
                        num_filter=2)
    with pytest.raises(KilnError, match="pool: .*pad"):
        npx.pooling(x, kernel=(2, 2), pad=(2, 2))
    with pytest.raises(KilnError, match="conv_grad_data: gradient of shape"):
        REGISTRY["conv_grad_data"](np.array(onp.ones((1, 2, 4, 4), "float32")),
                                   np.array(onp.ones((2, 3, 3, 3), "float32")), in_shape=(5, 5),
                                   stride=(1, 1), dilation=(1, 1), pad=(0, 0, 0, 0))


def test_minus_infinity_attributes_are_tagged_in_json():
    from kiln.export.attrs import encode, decode
    assert encode(-onp.inf) == {"float": "-inf"}
    assert decode({"float": "-inf"}, "test") == -onp.inf


_OFF = """
import numpy as onp
import kiln
from kiln import autograd, np
from kiln.backend import dnnl
from kiln.gluon import nn
assert not dnnl.available() and "KILN_DNNL=0" in dnnl.unavailable_reason()
net = nn.HybridSequential()
net.add(nn.Conv2D(4, 3, padding=1, activation="relu"), nn.BatchNorm(), nn.MaxPool2D(2),
        nn.Dense(3))
net.initialize()
x = np.array(onp.random.default_rng(0).standard_normal((2, 1, 6, 6)).astype("float32"))
with autograd.record():
    eager_training = net(x).asnumpy()
eager = net(x).asnumpy()
net.hybridize()
onp.testing.assert_allclose(net(x).asnumpy(), eager, rtol=1e-5, atol=1e-6)
with autograd.record():
    onp.testing.assert_allclose(net(x).asnumpy(), eager_training, rtol=1e-5, atol=1e-5)
print("ok")
"""


def test_kiln_works_with_the_library_turned_off():
    env = dict(os.environ, KILN_DNNL="0")
    res = subprocess.run([sys.executable, "-c", _OFF], capture_output=True, text=True,
                         env=env, timeout=300, cwd=ROOT)
    assert res.returncode == 0 and "ok" in res.stdout, res.stderr[-2000:]


@needs_dnnl
def test_compiled_code_calls_the_library_and_sees_weight_writes():
    from kiln.backend.c import build
    if not build.available():
        pytest.skip("no C compiler")
    net = nn.HybridSequential()
    net.add(nn.Conv2D(4, 3, padding=1, activation="relu"), nn.MaxPool2D(2), nn.Dense(3))
    net.initialize()
    x = np.array(onp.random.default_rng(5).standard_normal((2, 3, 8, 8)).astype("float32"))
    eager = net(x).asnumpy()
    net.hybridize()
    onp.testing.assert_allclose(net(x).asnumpy(), eager, rtol=1e-5, atol=1e-6)
    sources = [getattr(e.program, "source", "")
               for e in net.__dict__["_kiln_cached"].entries.values()]
    assert any("kiln_dnnl_run" in s for s in sources), "the conv did not compile to a call"
    w = net[0].weight
    for write in (lambda: w.set_data(w.data() * 0.5),
                  lambda: w.data().__setitem__(slice(None), w.data() + 0.25),
                  lambda: w.data().__iadd__(0.125)):
        net(x)                                     # the reordered weight is cached now
        write()
        with dnnl.disabled():
            want = _eager_copy(net, x)
        onp.testing.assert_allclose(net(x).asnumpy(), want, rtol=1e-5, atol=1e-5)


def _eager_copy(net, x):
    """The net's output run eagerly on its current parameters."""
    net.hybridize(active=False)
    try:
        return net(x).asnumpy()
    finally:
        net.hybridize()


def test_eager_float32_matmul_on_the_runtime_matches_numpy():
    rng = onp.random.default_rng(6)
    a = rng.standard_normal((96, 80)).astype("float32")
    b = rng.standard_normal((80, 72)).astype("float32")
    for x, y in ((a, b), (onp.asfortranarray(a), b), (a, onp.asfortranarray(b)),
                 (a[:, :40], b[:40])):
        got = np.matmul(np.array(x), np.array(y)).asnumpy()
        onp.testing.assert_allclose(got, x.astype("float64") @ y, rtol=1e-4, atol=1e-4)


def test_unused_input_gradient_is_not_computed(monkeypatch):
    calls = []
    prim = REGISTRY["conv_grad_data"]
    real = prim.impl
    monkeypatch.setattr(prim, "impl", lambda *a, **k: calls.append(1) or real(*a, **k))
    x = np.array(onp.ones((1, 2, 5, 5), "float32"))
    w = np.array(onp.ones((3, 2, 3, 3), "float32"))
    w.attach_grad()
    with autograd.record():
        y = REGISTRY["conv"](x, w, stride=(1, 1), dilation=(1, 1), pad=(0, 0, 0, 0))
    y.backward()
    assert not calls and float(w.grad.asnumpy()[0, 0, 0, 0]) == 9.0


@needs_dnnl
def test_threads_calling_one_kernel_at_once_get_right_answers():
    import threading
    rng = onp.random.default_rng(8)
    x = rng.standard_normal((4, 8, 12, 12)).astype("float32")
    w = rng.standard_normal((8, 8, 3, 3)).astype("float32")
    a = dict(stride=(1, 1), dilation=(1, 1), pad=(1, 1, 1, 1))
    want = _call("conv", x, w, **a)
    wrong = []

    def work():
        for _ in range(20):
            if not onp.allclose(_call("conv", x, w, **a), want, rtol=1e-5, atol=1e-5):
                wrong.append(1)
    threads = [threading.Thread(target=work) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not wrong


@pytest.mark.filterwarnings("ignore::kiln.graph.capture.KilnTraceWarning")
def test_more_than_three_spatial_dims_run_on_own_kernels():
    # oneDNN convolves 1 to 3 spatial dims; 4 went to the shim (and 10+ overran its arrays)
    rng = onp.random.default_rng(3)
    x = rng.standard_normal((1, 2, 3, 2, 2, 3)).astype("float32")
    w = rng.standard_normal((2, 2, 2, 1, 2, 2)).astype("float32")
    geo = dict(stride=(1,) * 4, dilation=(1,) * 4, pad=(0, 1) * 4)
    fast, own = _both("conv", x, w, **geo)
    _close(fast, own)
    f = kiln.hybridize(lambda a, b: npx.relu(REGISTRY["conv"](a, b, **geo)))
    _close(f(np.array(x), np.array(w)).asnumpy(), onp.maximum(own, 0))
    fast, own = _both("pool", x, kind="max", kernel=(2,) * 4, stride=(1,) * 4, pad=(0,) * 8)
    _close(fast, own)


_SHIM_RANK = """
import ctypes
from kiln.backend.dnnl.library import shim
lib = shim()
dims = (ctypes.c_int64 * 16)(*([1] * 16))
op = lib.kd_conv(0, 14, dims, dims, dims, dims, dims, dims, dims, 1, 0)
print(op, lib.kd_error().decode())
"""


@needs_dnnl
def test_shim_refuses_spatial_ranks_past_its_arrays():
    res = subprocess.run([sys.executable, "-c", _SHIM_RANK], capture_output=True, text=True,
                         timeout=300, cwd=ROOT)
    assert res.returncode == 0, res.stderr[-2000:]
    assert res.stdout.startswith("None 14 spatial dimensions"), res.stdout


@pytest.mark.parametrize("kind", ["max", "avg_valid"])
def test_pool_refuses_a_pad_that_makes_windows_of_padding_only(kind):
    # avg_valid: oneDNN refused it while kiln's own kernel divided by a count of 0 (NaN)
    x = onp.ones((1, 1, 4, 4), "float32")
    for own in (False, True):
        with dnnl.disabled() if own else contextlib.nullcontext():
            with pytest.raises(KilnError, match="pad smaller than the kernel"):
                _call("pool", x, kind=kind, kernel=(2, 2), stride=(2, 2), pad=(2, 2, 2, 2))



_WAIT_POLICY = """
import os
from kiln.backend.dnnl.library import shim
assert shim() is not None
print(os.environ.get("OMP_WAIT_POLICY"), os.environ.get("GOMP_SPINCOUNT"))
"""


@needs_dnnl
@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("user", [None, ("OMP_WAIT_POLICY", "ACTIVE"), ("GOMP_SPINCOUNT", "7")])
def test_openmp_wait_is_chosen_by_threads_unless_the_user_chose(user, threads, monkeypatch):
    from kiln.backend.dnnl import library
    for name in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT"):
        monkeypatch.delenv(name, raising=False)
    if user:
        monkeypatch.setenv(*user)
    before = dict(os.environ)
    with library._openmp_wait(threads):
        inside = {k: os.environ.get(k) for k in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT")}
    assert dict(os.environ) == before
    if user:
        assert inside[user[0]] == user[1] and len([v for v in inside.values() if v]) == 1
    elif threads == 1:
        assert inside == {"OMP_WAIT_POLICY": "PASSIVE", "GOMP_SPINCOUNT": None}
    else:
        assert inside == {"OMP_WAIT_POLICY": None, "GOMP_SPINCOUNT": library.SHORT_SPIN}
    # a process that loads the library sees its environment as it was before
    res = subprocess.run([sys.executable, "-c", _WAIT_POLICY], capture_output=True, text=True,
                         timeout=300, cwd=ROOT)
    assert res.returncode == 0, res.stderr[-2000:]
    assert res.stdout.split() == [str(os.environ.get("OMP_WAIT_POLICY")),
                                  str(os.environ.get("GOMP_SPINCOUNT"))], res.stdout


@needs_dnnl
@pytest.mark.filterwarnings("ignore::kiln.graph.capture.KilnTraceWarning")
@pytest.mark.parametrize("pad", [(0, 0, 0, 0), (1, 0, 1, 1)])
def test_compiled_max_pool_gradient_reuses_the_forward_workspace(pad):
    from kiln.backend.c import build
    if not build.available():
        pytest.skip("no C compiler")
    a = dict(kind="max", kernel=(3, 2), stride=(2, 1), pad=pad)
    rng = onp.random.default_rng(11)
    x = rng.permutation(2 * 3 * 7 * 6).reshape(2, 3, 7, 6).astype("float32") * 0.1 - 12
    g = rng.standard_normal(_call("pool", x, **a).shape).astype("float32")

    def f(x, g):
        y = REGISTRY["pool"](x, **a)
        # the gradient's input depends on y, so the pool runs first; two gradients share it
        return y, REGISTRY["pool_grad"](g * y, x, **a), REGISTRY["pool_grad"](g, x, **a)
    with dnnl.disabled():
        want = [v.asnumpy() for v in f(np.array(x), np.array(g))]
    c = kiln.hybridize(f, backend="c")
    got = [v.asnumpy() for v in c(np.array(x), np.array(g))]
    for a_, b_ in zip(got, want):
        _close(a_, b_, onp.abs(b_).max())
    source = [e.program.source for e in c._cached.entries.values()][0]
    # one forward pass and two backward ones, no rerun of the forward for each gradient
    assert source.count("kiln_dnnl_run(") == 3, source
