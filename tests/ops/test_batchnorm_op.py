"""npx.batch_norm on the fused primitives (kiln/ops/batchnorm.py): the same function as the
composed formula it replaced, PyTorch's batch_norm, and on both compiled backends."""
import numpy as onp
import pytest

from kiln import autograd
from kiln import np, npx
from kiln.base import KilnError
from kiln.fuzz.compare import compare
from conftest import assert_close

R = onp.random.default_rng(31)


def composed(x, gamma, beta, rm, rv, eps, momentum, fix_gamma, use_global_stats, axis,
             training):
    """The formula npx.batch_norm was built from before the fused primitives."""
    red = tuple(i for i in range(x.ndim) if i != axis)
    shape = tuple(x.shape[axis] if i == axis else 1 for i in range(x.ndim))
    if training and not use_global_stats:
        mean = x.mean(red, keepdims=True)
        var = ((x - mean) ** 2).mean(red, keepdims=True)
        rm = rm * momentum + mean.reshape(-1) * (1 - momentum)
        rv = rv * momentum + var.reshape(-1) * (1 - momentum)
    else:
        mean, var = rm.reshape(shape), rv.reshape(shape)
    g = onp.ones_like(gamma) if fix_gamma else gamma
    y = (x - mean) / onp.sqrt(var + eps) * g.reshape(shape) + beta.reshape(shape)
    return y, rm, rv, mean.reshape(-1), var.reshape(-1)


def _inputs(shape, axis, dtype):
    c = shape[axis]
    return ([(R.standard_normal(shape) * 2 + 1.5).astype(dtype)]
            + [R.uniform(0.5, 1.5, c).astype(dtype) for _ in range(2)]
            + [R.uniform(-0.5, 0.5, c).astype(dtype), R.uniform(0.5, 2, c).astype(dtype)])


SETTINGS = [dict(axis=1, fix_gamma=False), dict(axis=1, fix_gamma=True),
            dict(axis=3, fix_gamma=False), dict(axis=1, fix_gamma=False,
                                                use_global_stats=True)]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("training", [True, False])
@pytest.mark.parametrize("setting", range(len(SETTINGS)))
def test_matches_the_composed_formula(dtype, training, setting):
    kw = dict(dict(eps=1e-3, momentum=0.9, use_global_stats=False), **SETTINGS[setting])
    x, gamma, beta, rm, rv = _inputs((3, 4, 2, 5), kw["axis"], dtype)
    want_y, want_rm, want_rv, want_mean, want_var = composed(
        x.astype("float64"), *(v.astype("float64") for v in (gamma, beta, rm, rv)),
        training=training, **kw)
    k_rm, k_rv = np.array(rm), np.array(rv)
    with autograd.train_mode() if training else autograd.predict_mode():
        y, mean, var = npx.batch_norm(np.array(x), np.array(gamma), np.array(beta), k_rm, k_rv,
                                      output_mean_var=True, **kw)
    tol = 1e-5 if dtype == "float32" else 1e-12
    assert y.dtype == onp.dtype(dtype)
    for got, want in [(y, want_y), (k_rm, want_rm), (k_rv, want_rv), (mean, want_mean),
                      (var, want_var)]:
        assert_close(got.asnumpy(), want, rtol=tol, atol=tol)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("axis", [1, -1])
def test_training_gradients_match_torch(dtype, axis):
    torch = pytest.importorskip("torch")
    x, gamma, beta, rm, rv = _inputs((4, 3, 3, 5), axis, dtype)
    w = R.standard_normal(x.shape).astype(dtype)
    xs = [np.array(v) for v in (x, gamma, beta)]
    for v in xs:
        v.attach_grad()
    with autograd.record():
        y = npx.batch_norm(*xs, np.array(rm), np.array(rv), eps=1e-5, fix_gamma=False,
                           axis=axis)
        (y * np.array(w)).sum().backward()
    ts = [torch.tensor(v, requires_grad=True) for v in (x, gamma, beta)]
    ty = torch.nn.functional.batch_norm(ts[0].movedim(axis, 1), None, None, ts[1], ts[2],
                                        training=True, eps=1e-5).movedim(1, axis)
    (ty * torch.tensor(w)).sum().backward()
    tol = 2e-4 if dtype == "float32" else 1e-10
    assert_close(y.asnumpy(), ty.detach().numpy(), rtol=tol, atol=tol)
    for k, t in zip(xs, ts):
        assert_close(k.grad.asnumpy(), t.grad.numpy(), rtol=tol, atol=tol)


def _bn_step(axis, fix_gamma):
    def step(x, gamma, beta):
        rm = np.zeros(x.shape[axis], dtype=x.dtype)
        rv = np.ones(x.shape[axis], dtype=x.dtype)
        y, mean, var = npx.batch_norm(x, gamma, beta, rm, rv, eps=1e-4, fix_gamma=fix_gamma,
                                      axis=axis, output_mean_var=True)
        weights = np.sin(np.arange(y.size, dtype=y.dtype)).reshape(y.shape)
        return y * weights, mean, var, rm, rv
    return step


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("axis,shape,fix_gamma", [(1, (4, 3, 5, 6), False),
                                                  (-1, (2, 5, 4, 3), False),
                                                  (1, (9, 4), True), (2, (3, 2, 17), False)])
def test_compiled_equals_eager(dtype, axis, shape, fix_gamma):
    c = shape[axis]

    def draw():
        return [np.array((R.standard_normal(s) * 3 + 2).astype(dtype))
                for s in (shape, (c,), (c,))]
    seen = {}
    with autograd.train_mode():
        findings = compare(_bn_step(axis, fix_gamma), draw(), draw(), strict=True,
                           observe=seen)
    assert not findings, "\n".join(map(repr, findings))
    assert {"batch_norm_train", "batch_norm_stats"} <= seen["ops"]
    assert seen["fallbacks"] == 0


def test_mismatched_parameters_get_a_clear_error():
    x = np.zeros((2, 3, 4))
    with autograd.train_mode(), pytest.raises(KilnError, match="batch_norm_train.*gamma"):
        npx.batch_norm(x, np.ones(4), np.zeros(3), np.zeros(3), np.ones(3), fix_gamma=False)
    with autograd.train_mode(), pytest.raises(KilnError, match="batch_norm_train.*one channel"):
        npx.batch_norm(np.zeros((2, 0, 3)), np.ones(0), np.zeros(0), np.zeros(0), np.ones(0))
    with pytest.raises(KilnError, match="batch_norm_stats.*axis"):
        from kiln.ops import REGISTRY
        REGISTRY["batch_norm_stats"](x, axis=5)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("axis,layout", [(1, "contiguous"), (-1, "contiguous"),
                                         (1, "strided"), (0, "contiguous")])
def test_eager_inference_shortcut_equals_the_taped_composite(dtype, axis, layout):
    """Untaped inference runs kiln/ops/batchnorm.py's normalize_values; recording (the
    gradients of use_global_stats) runs the composite. Both give the same values, also
    when the mean is large against the spread."""
    shape = (5, 3, 4, 66) if layout == "strided" else (6, 3, 4, 33)
    xv = (R.standard_normal(shape) * 0.01 + 100).astype(dtype)
    if layout == "strided":
        xv = xv[..., ::2]
    c = xv.shape[axis]
    gamma, beta, rm, rv = (np.array(v) for v in _inputs((c,), 0, dtype)[1:])
    rm = rm + 100
    kw = dict(eps=1e-3, fix_gamma=False, use_global_stats=True, axis=axis)
    with autograd.predict_mode():
        fast = npx.batch_norm(np.array(xv), gamma, beta, rm, rv, **kw)
    x = np.array(xv)
    x.attach_grad()
    with autograd.record(train_mode=False):
        taped = npx.batch_norm(x, gamma, beta, rm, rv, **kw)
    taped.backward()
    assert x.grad is not None and fast.dtype == onp.dtype(dtype)
    tol = 1e-5 if dtype == "float32" else 1e-12
    assert_close(fast.asnumpy(), taped.asnumpy(), rtol=tol, atol=tol)
    want = composed(xv.astype("float64"), *(v.asnumpy().astype("float64")
                                            for v in (gamma, beta, rm, rv)),
                    training=False, momentum=0.9, **dict(kw, axis=axis % xv.ndim))[0]
    assert_close(fast.asnumpy(), want, rtol=tol, atol=tol)


@pytest.mark.parametrize("axis", [1, -1])
def test_eager_training_reuses_the_kernels_statistics(axis):
    """Eager training updates the running statistics from batch_norm_train's own mean and
    variance (stats_of_last_train): the values batch_norm_stats and the formula give."""
    from kiln.ops.batchnorm import stats_of_last_train
    kw = dict(eps=1e-3, momentum=0.9, fix_gamma=False, use_global_stats=False, axis=axis)
    x, gamma, beta, rm, rv = _inputs((3, 4, 2, 5), axis, "float32")
    runs = []
    for output_mean_var in (False, True):     # True: the batch_norm_stats op
        k_rm, k_rv = np.array(rm), np.array(rv)
        xa = np.array(x)
        xa.attach_grad()
        with autograd.record():
            npx.batch_norm(xa, np.array(gamma), np.array(beta), k_rm, k_rv,
                           output_mean_var=output_mean_var, **kw)
        runs.append((k_rm.asnumpy(), k_rv.asnumpy()))
    want = composed(x.astype("float64"), *(v.astype("float64") for v in (gamma, beta, rm, rv)),
                    training=True, **dict(kw, axis=axis % x.ndim))
    for got in runs:
        assert_close(got[0], want[1], rtol=1e-5, atol=1e-6)
        assert_close(got[1], want[2], rtol=1e-5, atol=1e-6)
    assert_close(runs[0][1], runs[1][1], rtol=1e-6, atol=1e-7)
    # the kernel's statistics go only to the array it ran on, once
    from kiln.ops import REGISTRY
    xa = np.array(x)
    REGISTRY["batch_norm_train"](xa, np.array(gamma), np.array(beta), eps=1e-3,
                                 axis=axis % x.ndim)
    assert stats_of_last_train(onp.array(x)) is None
    assert stats_of_last_train(xa.asnumpy()) is None
