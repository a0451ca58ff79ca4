"""The `scan` op (kiln/ops/scan.py) compiled on both backends against eager Python loops:
values and gradients of every operand, forward and reversed, with a state the body passes
through unchanged, a matmul whose product the forward keeps for backward, and gradients
arriving on every result."""
import numpy as onp
import pytest

import kiln
from kiln.backend.c import build as c_build
from kiln import np, autograd
from kiln.gluon.rnn import time_loop
from test_backend_c_control import assert_compiled


def model(reverse):
    def f(xs, h, keep, w):
        def step(x_t, states):       # reads w from outside: a loop invariant
            h, keep = states
            new = np.tanh(np.matmul(h, w) + 0.1 + x_t * 0.5) + keep
            return new * x_t, [new, keep]
        ys, (last, kept) = time_loop.run(step, xs, [h, keep], reverse=reverse)
        return ys * 2, last, kept
    return f


def run(fn, values):
    arrays = [np.array(v) for v in values]
    for a in arrays:
        a.attach_grad()
    heads = [onp.linspace(-1, 1, 24).reshape(4, 2, 3), onp.full((2, 3), 0.3),
             onp.full((2, 3), -0.7)]
    with autograd.record():
        outs = fn(*arrays)
        loss = sum((o * np.array(h.astype("float32"))).sum() for o, h in zip(outs, heads))
    loss.backward()
    return [o.asnumpy() for o in outs] + [a.grad.asnumpy() for a in arrays]


@pytest.mark.parametrize("backend", ["c", "numpy"])
@pytest.mark.parametrize("reverse", [False, True])
def test_compiled_scan_equals_eager_loop(backend, reverse):
    if backend == "c" and not c_build.available():
        pytest.skip("no working C compiler: the C case would run on the NumPy executor")
    rng = onp.random.default_rng(0)
    values = [rng.normal(size=s).astype("float32")
              for s in ((4, 2, 3), (2, 3), (2, 3), (3, 3))]
    eager = run(model(reverse), values)
    fn = kiln.hybridize(model(reverse), backend=backend)
    compiled = run(fn, values)
    if backend == "c":
        assert_compiled(fn._cached)
    for a, b in zip(compiled, eager):
        onp.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
