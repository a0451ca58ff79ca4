"""The C backend's transcendental functions (csrc/vector_math.h) against NumPy: within 4 ulp
over the whole float range (subnormals, the largest finite values, infinities and NaN
included), with libmvec and without it (KILN_VECTOR_MATH=0), and the same bits for the
same input wherever it sits in a loop.

The reference is NumPy's float64 function rounded to float32 (for erf, math.erf); the
error is counted in units of the float32 spacing at the reference value.
"""
import math

import numpy as onp
import pytest

import kiln
from kiln import np, npx
from kiln.backend.c import build, vector_math

ULP = 4.0


@pytest.fixture(autouse=True)
def _needs_compiler():
    try:
        build.compiler()
    except build.CompilerUnavailable:
        pytest.skip("no C compiler")


@pytest.fixture(params=["libmvec", "scalar"])
def configuration(request, monkeypatch):
    """Both configurations: the vector library where this machine has it, and without."""
    if request.param == "libmvec" and not vector_math.enabled():
        pytest.skip("libmvec is not usable here")
    if request.param == "scalar":
        monkeypatch.setenv("KILN_VECTOR_MATH", "0")
    return request.param


def _floats():
    """Every exponent, both signs, subnormals, extremes and the special values."""
    rng = onp.random.default_rng(0)
    bits = rng.integers(0, 1 << 32, size=200_000, dtype=onp.uint64).astype(onp.uint32)
    special = onp.float32([0.0, -0.0, onp.inf, -onp.inf, onp.nan, 1e-45, -1e-45, 1e-38,
                           -1e-38, 3.4028235e38, -3.4028235e38, 1.0, -1.0, 0.5, 88.72, -87.3,
                           -103.9, 9.0, -9.0, 3.9, 0.625])
    return onp.concatenate([bits.view(onp.float32), special,
                            onp.linspace(-12, 12, 4001, dtype=onp.float32)])


_erf64 = onp.vectorize(math.erf, otypes=[onp.float64])

FUNCTIONS = {
    "exp": (np.exp, onp.exp), "log": (np.log, onp.log), "tanh": (np.tanh, onp.tanh),
    "sin": (np.sin, onp.sin), "cos": (np.cos, onp.cos),
    "erf": (lambda a: kiln.np.special.erf(a), _erf64),
    "sigmoid": (npx.sigmoid, lambda a: 1 / (1 + onp.exp(-a))),
}


def _ulp_error(got, ref64):
    ref = ref64.astype(onp.float32)
    both_nan = onp.isnan(got) & onp.isnan(ref)
    same = (got == ref) | both_nan
    spacing = onp.spacing(onp.abs(ref)).astype(onp.float64)
    spacing[~onp.isfinite(spacing)] = onp.inf
    err = onp.where(same, 0.0, onp.abs(got.astype(onp.float64) - ref64) / spacing)
    return onp.where(onp.isfinite(ref) | same, err, onp.inf)


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_within_documented_ulp_of_numpy_over_the_float_range(name, configuration):
    ours, reference = FUNCTIONS[name]
    x = _floats()
    if name in ("sin", "cos"):
        x = x[onp.abs(x) < 1e5]      # far arguments: both are correct to their own ulp
    with onp.errstate(all="ignore"):
        ref = reference(x.astype(onp.float64))
        got = kiln.hybridize(ours, backend="c")(np.array(x)).asnumpy()
        err = _ulp_error(got, ref)
    worst = int(onp.argmax(err))
    assert err[worst] <= ULP, (name, configuration, float(x[worst]), float(got[worst]),
                               float(ref[worst]))


def test_power_within_documented_ulp(configuration):
    rng = onp.random.default_rng(1)
    a = onp.abs(rng.normal(size=50_000) * 10).astype(onp.float32)
    b = (rng.normal(size=50_000) * 4).astype(onp.float32)
    a[:8] = [0.0, onp.inf, onp.nan, 1.0, 2.0, 1e-40, 3.0, 0.5]
    b[:8] = [2.0, 0.5, 1.0, onp.nan, -1.0, 0.5, onp.inf, -onp.inf]
    got = kiln.hybridize(lambda x, y: x ** y, backend="c")(np.array(a), np.array(b)).asnumpy()
    with onp.errstate(all="ignore"):
        ref = onp.power(a.astype(onp.float64), b.astype(onp.float64))
        assert _ulp_error(got, ref).max() <= ULP


@pytest.mark.parametrize("name", ["exp", "erf", "tanh", "log", "sigmoid"])
def test_same_input_same_bits_at_every_position(name, configuration):
    # lengths around the vector widths: whole vectors, narrower variants, single elements
    ours = FUNCTIONS[name][0]
    compiled = kiln.hybridize(lambda a: ours(a) * 3, backend="c")
    for n in (1, 3, 8, 15, 16, 17, 31, 33, 45):
        out = compiled(np.full((n,), 0.7312, dtype="float32")).asnumpy()
        assert len(set(out.tolist())) == 1, (name, n)


def test_gelu_and_its_gradient_match_eager(configuration):
    x = onp.concatenate([onp.linspace(-8, 8, 1001, dtype=onp.float32),
                         onp.float32([onp.inf, -onp.inf, onp.nan, 0.0, -0.0])])
    for approximation in ("erf", "tanh"):
        def f(a):
            return npx.gelu(a, approximation=approximation)
        got, dgot = _value_and_grad(kiln.hybridize(f, backend="c"), x)
        want, dwant = _value_and_grad(f, x)
        # 1 + erf(x / sqrt 2) cancels below x = -3.5: a 1-ulp difference in erf is then
        # an absolute one of 1e-7 * |x| in GELU
        onp.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
        onp.testing.assert_allclose(dgot, dwant, rtol=1e-5, atol=1e-5)


def test_double_precision_functions(configuration):
    x = onp.linspace(-20, 20, 3001)
    for ours, ref in ((np.exp, onp.exp), (np.tanh, onp.tanh), (np.sin, onp.sin)):
        got = kiln.hybridize(ours, backend="c")(np.array(x, dtype="float64")).asnumpy()
        onp.testing.assert_allclose(got, ref(x), rtol=1e-14, atol=1e-300)


def _value_and_grad(fn, x):
    a = np.array(x)
    a.attach_grad()
    with kiln.autograd.record():
        y = fn(a)
    y.backward()
    return y.asnumpy(), a.grad.asnumpy()
