"""kiln's added NumPy functions (MXNet's np.einsum, np.diff, np.arctan2, np.cov, ...), all
generated from one case table (np_composed_cases.py): values against NumPy, gradients against
finite differences and PyTorch, hybridized (both backends) against eager. The eager-only
functions (bincount, histogram, ...) compare to NumPy at the end."""
import numpy as onp
import pytest

from kiln import autograd
from kiln import np
from kiln.fuzz.compare import compare
from conftest import assert_close, numeric_grad, to_np, wrap
from np_composed_cases import CASES

NAMES = sorted(CASES)


def _out(case, values):
    return case.fn(*[wrap(v) for v in values])


@pytest.mark.parametrize("name", NAMES)
def test_values_equal_numpy(name):
    case = CASES[name]
    out = _out(case, case.inputs)
    expected = case.ref(*case.inputs)
    assert out.shape == onp.shape(expected), (out.shape, onp.shape(expected))
    assert_close(out, onp.asarray(expected), rtol=1e-9, atol=1e-12, msg=name)


def _grads(case, proj):
    xs = [wrap(v) for v in case.inputs]
    which = [i for i, v in enumerate(case.inputs) if onp.asarray(v).dtype.kind == "f"]
    for i in which:
        xs[i].attach_grad()
    with autograd.record():
        loss = (case.fn(*xs) * wrap(proj)).sum()
    loss.backward()
    return which, [to_np(xs[i].grad) for i in which]


@pytest.mark.parametrize("name", [n for n in NAMES if CASES[n].grad])
def test_gradients_equal_finite_differences(name):
    case = CASES[name]
    proj = onp.random.default_rng(7).standard_normal(_out(case, case.inputs).shape)
    which, grads = _grads(case, proj)

    def f(*vals):
        return float((to_np(_out(case, vals)) * proj).sum())
    for i, g in zip(which, grads):
        num = numeric_grad(f, [onp.asarray(v) for v in case.inputs], i)
        assert_close(g, num, rtol=1e-5, atol=1e-6, msg=f"{name}: input {i}")


@pytest.mark.parametrize("name", [n for n in NAMES if CASES[n].torch is not None])
def test_values_and_gradients_equal_torch(name):
    torch = pytest.importorskip("torch")
    case = CASES[name]
    tin = [torch.tensor(onp.asarray(v)) for v in case.inputs]
    for t in tin:
        t.requires_grad_(t.dtype.is_floating_point)
    ref = case.torch(*tin)
    out = _out(case, case.inputs)
    assert_close(out, ref.detach().numpy(), rtol=1e-9, atol=1e-12, msg=name)
    proj = onp.random.default_rng(7).standard_normal(out.shape)
    (ref * torch.tensor(proj)).sum().backward()
    which, grads = _grads(case, proj)
    for i, g in zip(which, grads):
        assert_close(g, tin[i].grad.numpy(), rtol=1e-7, atol=1e-9, msg=f"{name}: input {i}")


@pytest.mark.parametrize("name", [n for n in NAMES if CASES[n].trace])
def test_hybridized_equals_eager(name):
    case = CASES[name]
    rng = onp.random.default_rng(11)

    def f32(v):
        v = onp.asarray(v)
        return np.array(v.astype(onp.float32)) if v.dtype.kind == "f" else np.array(v)

    def fresh(v):
        v = onp.asarray(v)
        return f32(v + rng.uniform(0.0, 0.05, v.shape)) if v.dtype.kind == "f" else f32(v)
    args = [f32(v) for v in case.inputs]
    findings = compare(case.fn, args, [fresh(v) for v in case.inputs], grad=case.grad,
                       strict=True)
    assert not findings, "\n".join(map(repr, findings))


def test_float32_stays_float32_and_ints_compute_in_float():
    x = np.array([1.0, 2.0, 3.0])
    for fn in (np.cbrt, np.arcsinh, np.degrees, np.diff, np.fix):
        assert fn(x).dtype == onp.float32, fn.__name__
    assert np.arctan2(np.array([1, 2], dtype="int32"), 1).dtype == onp.float32
    assert np.float_power(x, 2).dtype == onp.float64      # NumPy's float_power is float64


def test_bitwise_names_and_errors():
    a = np.array([12, 10], dtype="int64")
    assert np.bitwise_and(a, 6).tolist() == [4, 2]
    assert np.bitwise_or(a, 1).tolist() == [13, 11]
    assert np.bitwise_xor(a, a).tolist() == [0, 0]
    assert np.bitwise_not(a).tolist() == [-13, -11] and np.invert(a).tolist() == [-13, -11]
    with pytest.raises(Exception, match="bitwise_and: expected integer or boolean"):
        np.bitwise_and(np.array([1.5]), 1)


def test_einsum_errors_name_the_problem():
    with pytest.raises(Exception, match="einsum"):
        np.einsum("ij,jk->ik", np.ones((2, 3)))
    with pytest.raises(Exception, match="einsum"):
        np.einsum("ijk", np.ones((2, 3)))
    with pytest.raises(Exception, match="output subscripts"):
        np.einsum("ij->ik", np.ones((2, 3)))
    with pytest.raises(Exception, match="label 'j' has sizes 3 and 4"):
        np.einsum("ij,jk->ik", np.ones((2, 3)), np.ones((4, 5)))


_I = onp.random.default_rng(3).integers(0, 7, 20)
_X = onp.random.default_rng(4).uniform(-2, 2, 30).astype(onp.float32)
EAGER = {
    "bincount": (lambda m, x: m.bincount(x, minlength=9), [_I]),
    "bincount_weights": (lambda m, x, w: m.bincount(x, weights=w), [_I, _X[:20]]),
    "histogram": (lambda m, x: m.histogram(x, bins=4, range=(-2, 2)), [_X]),
    "histogram_edges": (lambda m, x, b: m.histogram(x, bins=b), [_X, onp.array([-2, 0, 1, 2.0])]),
    "digitize": (lambda m, x: m.digitize(x, onp.array([-1.0, 0.0, 1.0])), [_X]),
    "argpartition": (lambda m, x: m.sort(x[m.argpartition(x, 4)[:4]]), [_X]),
    "searchsorted": (lambda m, x: m.searchsorted(m.sort(x), onp.array([0.0, 1.0])), [_X]),
    "flatnonzero": (lambda m, x: m.flatnonzero(x > 0), [_X]),
    "array_equiv": (lambda m, x: m.array_equiv(x, x[:1]), [_X.reshape(6, 5)]),
    "isin": (lambda m, x: m.isin(x, onp.array([1, 2])), [_I]),
    "union1d": (lambda m, x, y: m.union1d(x, y), [_I[:5], _I[5:9]]),
    "percentile": (lambda m, x: m.percentile(x, 30), [_X]),
    "unravel_index": (lambda m, x: m.unravel_index(x, (3, 4)), [_I]),
    "hamming": (lambda m: m.hamming(5), []),
    "diag_indices_from": (lambda m, x: m.diag_indices_from(x), [_X[:9].reshape(3, 3)]),
    "nanmax": (lambda m, x: m.nanmax(m.where(x > 1, m.nan, x)), [_X]),
}


@pytest.mark.parametrize("name", sorted(EAGER))
def test_eager_functions_equal_numpy(name):
    fn, inputs = EAGER[name]
    got = fn(np, *[np.array(v, dtype=v.dtype) for v in inputs])
    expected = fn(onp, *inputs)
    got = got if isinstance(got, (tuple, list)) else [got]
    expected = expected if isinstance(expected, (tuple, list)) else [expected]
    for g, e in zip(got, expected):
        e = onp.asarray(e)
        g = to_np(g) if not isinstance(g, (bool, onp.bool_)) else g
        onp.testing.assert_allclose(g, e, rtol=1e-6, err_msg=name)
        if e.dtype == onp.float64 and all(v.dtype != onp.float64 for v in inputs):
            assert onp.asarray(g).dtype == onp.float32, name   # MXNet's default float


def test_mxnet_dtypes_of_eager_results():
    """As MXNet 1.9.1 returns them: integer counts, float32 edges of float32 data."""
    counts, edges = np.histogram(np.array([0.1, 0.5, 0.7, 2.0]), bins=3, range=(0, 2))
    assert counts.dtype == onp.int64 and edges.dtype == onp.float32
    assert counts.tolist() == [2, 1, 1]
    assert np.bincount(np.array([1, 2, 2, 5], dtype="int64")).tolist() == [0, 1, 2, 0, 0, 1]


def test_constants():
    assert onp.isnan(np.NAN) and onp.isnan(np.NaN) and np.PINF == onp.inf
    assert np.NINF == -onp.inf and np.PZERO == 0.0 and onp.signbit(np.NZERO)
