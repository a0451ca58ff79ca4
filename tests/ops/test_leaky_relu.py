"""npx.leaky_relu ('leaky'): x times a factor of 1 or slope (kiln/npx/nn.py) gives the bits of
where(x > 0, x, x * slope), forward and backward, eager and compiled, and PyTorch's values."""
import numpy as onp
import pytest

from kiln import autograd
from kiln import np, npx
from kiln.gluon import nn
from conftest import assert_close

SLOPES = [0.0, 0.01, 0.2, 0.3, 1 / 3, 1.0, 1.5, -0.5]


def _values(dtype):
    x = onp.random.default_rng(7).standard_normal((4, 3, 5)).astype(dtype)
    x.flat[:6] = [0.0, -0.0, onp.inf, -onp.inf, 1e-30, -1e-30]
    return x


def _value_and_grad(f, xv, gv):
    x = np.array(xv)
    x.attach_grad()
    with autograd.record():
        y = f(x)
    y.backward(np.array(gv))
    return y.asnumpy(), x.grad.asnumpy()


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("slope", SLOPES)
def test_same_bits_as_the_where_form(dtype, slope):
    xv = _values(dtype)
    gv = onp.random.default_rng(8).standard_normal(xv.shape).astype(dtype)
    with onp.errstate(invalid="ignore"):
        got = _value_and_grad(lambda x: npx.leaky_relu(x, act_type="leaky", slope=slope),
                              xv, gv)
        want = _value_and_grad(lambda x: np.where(x > 0, x, x * slope), xv, gv)
    assert got[0].dtype == onp.dtype(dtype)
    for a, b in zip(got, want):
        onp.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("slope", [0.0, 0.2, 1.5])
def test_matches_torch(slope):
    torch = pytest.importorskip("torch")
    xv = onp.random.default_rng(9).standard_normal((3, 7)).astype("float32")
    y, gx = _value_and_grad(lambda x: npx.leaky_relu(x, act_type="leaky", slope=slope), xv,
                            onp.ones_like(xv))
    t = torch.tensor(xv, requires_grad=True)
    want = torch.nn.functional.leaky_relu(t, slope)
    want.sum().backward()
    assert_close(y, want.detach().numpy(), rtol=1e-6, atol=1e-6)
    assert_close(gx, t.grad.numpy(), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("slope", [0.2, 1.5])
def test_compiled_equals_eager(slope):
    xv = _values("float32")[..., 1:]     # finite values: no NaN to compare
    xv = onp.nan_to_num(xv, posinf=3.0, neginf=-3.0)
    gv = onp.random.default_rng(10).standard_normal(xv.shape).astype("float32")
    eager = _value_and_grad(nn.LeakyReLU(slope), xv, gv)
    block = nn.LeakyReLU(slope)
    block.hybridize()
    compiled = _value_and_grad(block, xv, gv)
    for a, b in zip(compiled, eager):
        assert_close(a, b, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("value", [2.0, -2.0])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_a_0d_value_stays_0d(value, dtype):
    """Issue 24: the one-pass float32 kernel made a 0-d input shape (1,) (NumPy's
    ascontiguousarray does that), and its gradient could not go back into the 0-d input.
    NumPy and MXNet's numpy interface keep 0-d values 0-d, as the compiled code does."""
    y, gx = _value_and_grad(lambda x: npx.leaky_relu(x, slope=0.1),
                            onp.array(value, dtype), onp.array(3.0, dtype))
    assert y.shape == () and gx.shape == ()
    factor = 1.0 if value > 0 else 0.1
    assert_close(y, value * factor, rtol=1e-6, atol=0)
    assert_close(gx, 3.0 * factor, rtol=1e-6, atol=0)
