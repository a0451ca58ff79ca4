"""power with a constant exponent of 0.5 or 2 in generated C: a square root or a product
(backend/c/elementwise.py), as NumPy's power loop computes a broadcast exponent of these
values, so compiled equals eager at every input, the signed zeros, infinities and NaN
included (-0 ** 0.5 is -0 and -inf ** 0.5 NaN there, unlike C's pow), forward and
backward. Adam's update reads sqrt(v) this way."""
import warnings

import numpy as onp
import pytest

import kiln
from kiln import autograd, np
from kiln.backend.c import build

pytestmark = pytest.mark.skipif(not build.available(), reason="no C compiler")

SPECIALS = [0.0, -0.0, 1.0, -1.0, 4.0, 2.0, 0.5, onp.inf, -onp.inf, onp.nan, 1e-45,
            -1e-45, 1e-38, 3.4e38, -3.4e38, 1.7e19, 1e-20]


def _inputs(dtype):
    rng = onp.random.default_rng(0)
    x = onp.concatenate([onp.array(SPECIALS), rng.standard_normal(500) * 100,
                         rng.random(500) * 1e-30])
    return x.astype(dtype)


def _compiled(fn, x):
    f = kiln.hybridize(fn, backend="c")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = f(np.array(x)).asnumpy()
    (entry,) = f._cached.entries.values()
    return out, entry.program.source


def _same(got, want):
    nan = onp.isnan(want)
    assert (onp.isnan(got) == nan).all()
    # a zero's sign too: pow(-0, 0.5) is +0 where NumPy's (and so eager's) is -0
    assert (onp.signbit(got[~nan]) == onp.signbit(want[~nan])).all()
    onp.testing.assert_array_equal(got[~nan], want[~nan])


@pytest.mark.parametrize("dtype", [onp.float32, onp.float64])
@pytest.mark.parametrize("exponent,form", [(0.5, " = sqrt"), (2, " * ")])
def test_constant_exponent_equals_eager_power(dtype, exponent, form):
    x = _inputs(dtype)
    got, source = _compiled(lambda v: v ** exponent, x)
    assert form in source and " = kiln_vm_pow" not in source
    with onp.errstate(all="ignore"):
        want = np.array(x).__pow__(exponent).asnumpy()     # kiln eager: NumPy's power
    _same(got, want)


def test_other_exponents_keep_pow():
    x = _inputs(onp.float32)
    got, source = _compiled(lambda v: v ** 1.5, x)
    assert " = kiln_vm_pow" in source
    with onp.errstate(all="ignore"):
        want = onp.power(x, onp.float32(1.5))
    nan = onp.isnan(want)
    assert (onp.isnan(got) == nan).all()
    onp.testing.assert_allclose(got[~nan], want[~nan], rtol=1e-6)


@pytest.mark.parametrize("exponent", [0.5, 2])
def test_gradient_of_constant_exponent_equals_eager(exponent):
    x = onp.abs(_inputs(onp.float32)[20:]) + 0.25

    def loss(v):
        with autograd.record():
            y = (v ** exponent).sum()
        y.backward()
        return v.grad

    def run(v, compiled):
        v = np.array(v)
        v.attach_grad()
        if compiled:
            f = kiln.hybridize(lambda a: a ** exponent, backend="c")
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                with autograd.record():
                    y = f(v).sum()
            y.backward()
            return v.grad.asnumpy()
        return loss(v).asnumpy()
    onp.testing.assert_allclose(run(x, True), run(x, False), rtol=1e-6)
