"""Two wrong-result classes differential fuzzing found (issue 24), compiled against eager
on both backends (kiln.fuzz.compare: forward, a second call, new values, arguments
afterwards, gradients):

- prod's gradient divided by the factor it differentiates, so a factor that the compiled
  dot rounded to an exact 0 (eager: 1.5e-8) gave NaN where eager gave a number;
- a 0-d value through npx.leaky_relu came back with shape (1,) eagerly (the float32 kernel
  went through NumPy's ascontiguousarray), () compiled.
"""
import numpy as onp
import pytest

from kiln import autograd, np, npx
from kiln.fuzz.compare import compare

pytestmark = pytest.mark.filterwarnings("ignore::kiln.graph.capture.KilnTraceWarning")


def assert_equal_everywhere(fn, *args, new=None):
    findings = compare(fn, list(args), list(new) if new is not None else None, strict=True)
    assert not findings, "\n".join(map(repr, findings))


def dot_then_prod(a0, a1):
    v2 = np.minimum(a0, a1)
    v7 = np.dot(v2, (np.arange(18, dtype='float32').reshape((2, 3, 3)) * 0.1 - 0.3))
    return np.prod(v7, axis=1)


def test_prod_of_a_dot_that_rounds_to_zero():
    a0 = np.array([-0.25, 0.0, 1.0], dtype="float32")
    a1 = np.array([[1.75], [-1.75], [1.75]], dtype="float32")
    assert_equal_everywhere(dot_then_prod, a0, a1,
                            new=[np.array([1.0, 1.0, 1.0], dtype="float32"), a1 * -1])


@pytest.mark.parametrize("factors", [
    "a * (a > 0)", "np.where(np.abs(a) < 1, 0, a)", "np.floor(a / 2)", "a * 0"])
@pytest.mark.parametrize("axis", [None, 0, 1, -1])
def test_prod_over_runs_with_zeros(factors, axis):
    def f(a):
        return np.prod(eval(factors), axis=axis)
    a = np.array([[1.5, 0.0, -2.0, 0.5], [0.0, 0.0, 1.0, 2.0], [-0.5, 1.5, 2.0, 1.25]],
                 dtype="float32")
    assert_equal_everywhere(f, a, new=[a * -1])


def all_then_leaky_relu(a0):
    v5 = np.all(a0 > -1)
    v6 = 1.0 / (np.abs(v5) + 1)
    return npx.leaky_relu(v6, slope=0.1)


def test_leaky_relu_of_a_0d_value():
    a0 = np.array(onp.random.default_rng(24).uniform(-2, 2, (7, 2, 4)).astype("float32"))
    assert all_then_leaky_relu(a0).shape == ()
    assert_equal_everywhere(all_then_leaky_relu, a0, new=[a0 * 0])


ACTIVATIONS = ["npx.leaky_relu(z, slope=0.1)", "npx.leaky_relu(z)", "npx.relu(z)",
               "npx.sigmoid(z)", "npx.gelu(z)", "npx.gelu(z, approximation='tanh')",
               "npx.elu(z)", "npx.selu(z)", "npx.softplus(z)", "npx.softsign(z)",
               "npx.silu(z)", "npx.activation(z, act_type='softrelu')",
               "npx.leaky_relu(z, act_type='elu', slope=0.5)",
               "npx.leaky_relu(z, act_type='gelu')", "npx.smooth_l1(z)"]


@pytest.mark.parametrize("activation", ACTIVATIONS)
def test_activations_keep_a_0d_value_0d_with_its_gradient(activation):
    def f(a):
        z = a.sum() * 0.5      # noqa: F841 -- read by eval(activation)
        return eval(activation)
    a = np.array([[0.5, -1.25], [2.0, 0.25]], dtype="float32")
    x = a.copy()
    x.attach_grad()
    with autograd.record():
        y = f(x)
    y.backward()
    assert y.shape == () and x.grad.shape == (2, 2)
    assert_equal_everywhere(f, a, new=[a * -1])
