"""Shared helpers for kiln's tests: oracles, finite differences, global-state hygiene.

tests/ mirrors kiln's packages (tests/core, tests/ops, tests/graph, ...). Shared cases and
helpers live in tests/ itself (heavy_cases.py, seed_cells.py, paths.py, ...), and some test
modules borrow another's cases (`from test_grad_registry import CASES`): so tests/ and each
of its package folders are importable by module name, whichever test pytest collects first.
"""
import os
import sys

import numpy as onp
import pytest

import kiln
from kiln import autograd
from kiln.ndarray import ndarray

_TESTS = os.path.dirname(os.path.abspath(__file__))
for _folder in sorted(os.listdir(_TESTS), reverse=True):
    _path = os.path.join(_TESTS, _folder)
    if os.path.isdir(_path) and _folder not in ("fixtures", "__pycache__"):
        if _path not in sys.path:
            sys.path.insert(0, _path)
if _TESTS not in sys.path:
    sys.path.insert(0, _TESTS)


def to_np(x):
    """A NumPy copy of a kiln array (or anything array-like)."""
    if isinstance(x, ndarray):
        return x.asnumpy()
    return onp.asarray(x)


def wrap(value):
    """A kiln array holding exactly this NumPy value (dtype kept)."""
    return ndarray._wrap(onp.array(value))


def compiled_c(fn, *xs):
    """(output, generated C) of fn hybridized on the C backend and called once on NumPy
    values xs (the trace warning silenced)."""
    import warnings
    f = kiln.hybridize(fn, backend="c")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = f(*[kiln.np.array(x) for x in xs]).asnumpy()
    (entry,) = f._cached.entries.values()
    return out, entry.program.source


def outputs_and_gradients(fn, values):
    """fn's outputs on NumPy `values` and the gradients of every value under a loss that
    weighs each output element differently (trace warnings silenced), all as NumPy."""
    import warnings
    arrays = [kiln.np.array(v) for v in values]
    for a in arrays:
        a.attach_grad()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with autograd.record():
            outs = fn(*arrays)
            loss = sum((o * kiln.np.array(onp.linspace(-1, 1, o.size).reshape(o.shape)
                                          .astype("float32"))).sum() for o in outs)
        loss.backward()
    return [o.asnumpy() for o in outs] + [a.grad.asnumpy() for a in arrays]


def assert_close(actual, expected, rtol=1e-5, atol=1e-6, msg=""):
    onp.testing.assert_allclose(to_np(actual), to_np(expected), rtol=rtol, atol=atol,
                                err_msg=msg)


def numeric_grad(f, inputs, index, eps=1e-6):
    """Central finite differences of the scalar f(*inputs) with respect to inputs[index]."""
    x = onp.array(inputs[index], dtype=onp.float64, copy=True)
    grad = onp.zeros_like(x)
    args = list(inputs)
    for i in onp.ndindex(*x.shape):
        orig = x[i]
        x[i] = orig + eps
        args[index] = x.copy()
        hi = f(*args)
        x[i] = orig - eps
        args[index] = x.copy()
        lo = f(*args)
        x[i] = orig
        grad[i] = (hi - lo) / (2 * eps)
    return grad


@pytest.fixture(autouse=True)
def _clean_state():
    """Every test starts outside record() and in predict mode, with a fixed seed."""
    kiln.np.random.seed(0)
    prev = (autograd._state.recording, autograd._state.training)
    autograd._state.recording = autograd._state.training = False
    yield
    autograd._state.recording, autograd._state.training = prev


@pytest.fixture
def rng():
    return onp.random.default_rng(1234)


def run_standalone_c(net, x, tmp_path, out_shape):
    """Export a hybridized `net`, build it as standalone C with make and run it on `x`:
    (the generated model.c source, the program's output as an array of `out_shape`)."""
    import os
    import subprocess
    from kiln.export.standalone_c import build_c
    prefix = str(tmp_path / "model")
    net.export(prefix)
    out_dir = str(tmp_path / "c")
    build_c(prefix + "-symbol.json", prefix + "-0000.params", out_dir)
    with open(os.path.join(out_dir, "model.c")) as f:
        source = f.read()
    built = subprocess.run(["make", "-C", out_dir], capture_output=True, text=True,
                           timeout=120)
    assert built.returncode == 0, built.stderr
    inputs = to_np(x).astype("<f4").tobytes()
    run = subprocess.run([os.path.join(out_dir, "model")], input=inputs, capture_output=True,
                         timeout=60)
    assert run.returncode == 0, run.stderr
    return source, onp.frombuffer(run.stdout, "<f4").reshape(out_shape)
