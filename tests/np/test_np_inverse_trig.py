"""np.arcsin / arccos / arctan: values as NumPy's, gradients, and the compiled (C) graph."""
import numpy as onp
import pytest

import kiln
from kiln import autograd
from kiln import np


@pytest.mark.parametrize("name", ["arcsin", "arccos", "arctan"])
def test_values_and_gradients(name):
    x0 = onp.linspace(-0.95, 0.95, 7).astype(onp.float32)
    x = np.array(x0)
    x.attach_grad()
    with autograd.record():
        y = getattr(np, name)(x)
    y.backward()
    onp.testing.assert_allclose(y.asnumpy(), getattr(onp, name)(x0), rtol=1e-6, atol=1e-7)
    expected = {"arcsin": 1 / onp.sqrt(1 - x0 ** 2), "arccos": -1 / onp.sqrt(1 - x0 ** 2),
                "arctan": 1 / (1 + x0 ** 2)}[name]
    onp.testing.assert_allclose(x.grad.asnumpy(), expected, rtol=1e-5)
    assert getattr(np, name)(np.array([0, 1])).dtype == onp.float32   # ints compute in float


@pytest.mark.parametrize("backend", ["c", "numpy"])
def test_hybridized_graph_equals_eager(backend):
    def f(x):
        return np.arccos(x * 0.5) + np.arcsin(x * 0.25) * np.arctan(x * 3)
    x = np.array(onp.random.RandomState(0).uniform(-1, 1, (4, 5)).astype(onp.float32))
    expected = f(x).asnumpy()
    compiled = kiln.hybridize(f, backend=backend)
    onp.testing.assert_allclose(compiled(x).asnumpy(), expected, rtol=1e-5, atol=1e-6)
