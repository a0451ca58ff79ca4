"""The C backend against eager: every registry case, random programs, bad inputs, the cache.

Skipped as a whole when no C compiler works here; the NumPy fallback is tested separately
(test_backend_fallback.py)."""
import os
import subprocess
import sys
import textwrap

import numpy as onp
import pytest
from hypothesis import given, settings, strategies as st, HealthCheck

import kiln
from kiln import np, npx
from kiln import autograd
from kiln.base import KilnError
from kiln.backend.c import build
from kiln.ops import REGISTRY
from kiln.ops.rules import is_float

from test_grad_registry import CASES, IDS, _differentiable
from test_hybridize_functions import make_program, recipes, shapes, run_with_grads
from conftest import wrap, to_np

NOT_LOWERED_TO_C = ()   # control flow compiles too (kiln/backend/c/control.py)

pytestmark = pytest.mark.skipif(not build.available(), reason="no working C compiler")


def _c_program_of(hybrid):
    entry = next(iter(hybrid._cached.entries.values()))
    return entry.program


@pytest.mark.parametrize("name,idx", IDS, ids=[f"{n}-{i}" for n, i in IDS])
def test_registry_case_matches_eager(name, idx):
    prim, case = REGISTRY[name], CASES[name][idx]
    if prim.random:
        out = kiln.hybridize(lambda: prim(**case.attrs), backend="c")()
        assert out.shape == tuple(prim.shape(**case.attrs)[0])
        return
    fn = lambda *xs: prim(*xs, **case.attrs)  # noqa: E731
    eager = fn(*[wrap(v) for v in case.inputs])
    hybrid = kiln.hybridize(fn, backend="c")
    got = hybrid(*[wrap(v) for v in case.inputs])
    assert got.shape == eager.shape and got.dtype == eager.dtype
    onp.testing.assert_allclose(to_np(got), to_np(eager), rtol=1e-5, atol=1e-6)
    # every registry case, control flow included, must really compile
    assert name in NOT_LOWERED_TO_C or type(_c_program_of(hybrid)).__name__ == "CProgram"
    which = [i for i, v in enumerate(case.inputs) if is_float(onp.asarray(v).dtype)]
    if not (_differentiable(prim, eager) and which):
        return
    proj = onp.random.default_rng(3).standard_normal(eager.shape).astype(eager.dtype)

    def grads(f):
        xs = [wrap(v) for v in case.inputs]
        for i in which:
            xs[i].attach_grad()
        with autograd.record():
            loss = (f(*xs) * wrap(proj)).sum()
        loss.backward()
        return [to_np(xs[i].grad) for i in which]

    for g_c, g_e in zip(grads(hybrid), grads(fn)):
        onp.testing.assert_allclose(g_c, g_e, rtol=1e-5, atol=1e-6)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(recipe=recipes, shape=shapes, seed=st.integers(0, 2**16))
def test_random_programs_on_c_match_eager(recipe, shape, seed):
    rng = onp.random.default_rng(seed)
    xv = rng.normal(size=shape).astype("float32")
    yv = rng.normal(size=shape).astype("float32")
    prog = make_program(recipe)
    for c, e in zip(run_with_grads(kiln.hybridize(prog, backend="c"), xv, yv),
                    run_with_grads(prog, xv, yv)):
        onp.testing.assert_allclose(c, e, rtol=5e-5, atol=5e-5)


# ---- bad input never reaches C unchecked --------------------------------------------------

def _mlp():
    from kiln.gluon import nn
    net = nn.HybridSequential()
    net.add(nn.Dense(16, activation="relu"), nn.Dense(3))
    net.initialize()
    return net


def test_wrong_shapes_dtypes_layouts_and_empty_inputs_are_safe():
    net = _mlp()
    x = np.random.normal(size=(4, 8))
    eager = net(x).asnumpy()
    net.hybridize(backend="c")
    onp.testing.assert_allclose(net(x).asnumpy(), eager, rtol=1e-5, atol=1e-6)
    # a new batch size or dtype traces again instead of reading out of bounds
    x2 = np.random.normal(size=(7, 8))
    onp.testing.assert_allclose(net(x2).asnumpy(), _eager_copy(net, x2), rtol=1e-5, atol=1e-6)
    x64 = x.astype("float64")
    assert net(x64).shape == (4, 3)
    # non-contiguous input (a transposed view)
    xt = np.asarray(onp.asfortranarray(x.asnumpy()))
    assert not xt._data.flags.c_contiguous
    onp.testing.assert_allclose(net(xt).asnumpy(), eager, rtol=1e-5, atol=1e-6)
    # empty batch
    empty = net(np.zeros((0, 8)))
    assert empty.shape == (0, 3)
    # the wrong number of features is a clear error
    with pytest.raises(KilnError, match="features|not aligned"):
        net(np.zeros((4, 5)))


def _eager_copy(net, x):
    net.hybridize(active=False)
    try:
        return net(x).asnumpy()
    finally:
        net.hybridize(backend="c")


def test_program_checks_every_input_before_calling_c():
    h = kiln.hybridize(lambda a, b: np.dot(a, b) + 1, backend="c")
    a, b = np.ones((2, 3)), np.ones((3, 4))
    h(a, b)
    program = _c_program_of(h)
    assert type(program).__name__ == "CProgram"
    ok = [a.asnumpy(), b.asnumpy()]
    for bad in ([onp.ones((2, 2), "f4"), ok[1]], [ok[0].astype("f8"), ok[1]],
                [ok[0], "not an array"], [ok[0]]):
        with pytest.raises(KilnError):
            program(bad, [])
    onp.testing.assert_allclose(program([ok[0][:, ::-1].copy(order="F"), ok[1]], [])[0],
                                onp.full((2, 4), 4.0))


def test_review_regressions():
    rng = onp.random.default_rng(0)
    # a batched matmul reading a 2-D transpose in place
    x = np.array(rng.random((2, 3, 4)).astype("float32"))
    w = np.array(rng.random((5, 4)).astype("float32"))
    f = lambda x, w: np.matmul(x, w.T)  # noqa: E731
    onp.testing.assert_allclose(kiln.hybridize(f, backend="c")(x, w).asnumpy(),
                                f(x, w).asnumpy(), rtol=1e-5)
    # a transpose that is also an output is materialized; matmul must read that copy
    a = np.array(rng.random((3, 4)).astype("float32"))
    b = np.array(rng.random((3, 2)).astype("float32"))

    def g(a, b):
        t = (np.exp(a) + 1.0).T
        return np.matmul(t, np.exp(b) * 3.0), t
    for got, want in zip(kiln.hybridize(g, backend="c")(a, b), g(a, b)):
        onp.testing.assert_allclose(got.asnumpy(), want.asnumpy(), rtol=1e-5)
    # integer mod by -1 of the smallest integer (traps in C if not guarded)
    i = np.array(onp.array([-2**31, 7], "int32"))
    j = np.array(onp.array([-1, 2], "int32"))
    onp.testing.assert_array_equal(kiln.hybridize(lambda a, b: a % b, backend="c")(i, j)
                                   .asnumpy(), [0, 1])
    # comparing int8 with uint8
    p = np.array(onp.array([-1, 5], "int8"))
    q = np.array(onp.array([200, 5], "uint8"))
    onp.testing.assert_array_equal(kiln.hybridize(lambda a, b: a < b, backend="c")(p, q)
                                   .asnumpy(), [True, False])


def test_gather_indices_out_of_range_are_clipped_not_read_out_of_bounds():
    table = np.arange(12).reshape(4, 3)
    h = kiln.hybridize(lambda t, i: npx.embedding(i, t, 4, 3), backend="c")
    idx = np.array(onp.array([0, 3, 99, -5]), dtype="int64")
    got = h(table, idx).asnumpy()
    onp.testing.assert_array_equal(got, table.asnumpy()[[0, 3, 3, 0]])


# ---- the on-disk cache ---------------------------------------------------------------------

SCRIPT = textwrap.dedent("""
    import sys, time
    t0 = time.perf_counter()
    import kiln
    from kiln import np
    h = kiln.hybridize(lambda x: np.tanh(x) * 3 + 1, backend="c")
    out = h(np.ones((5,)))
    print(type(next(iter(h._cached.entries.values())).program).__name__, float(out[0]))
""")


def _run_script(env):
    res = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True,
                         env=env, timeout=300)
    assert res.returncode == 0, res.stderr
    return res.stdout.split()


def test_cache_is_reused_and_corrupt_entries_are_rebuilt(tmp_path):
    env = dict(os.environ, KILN_CACHE_DIR=str(tmp_path))
    kind, value = _run_script(env)
    assert kind == "CProgram" and abs(float(value) - (onp.tanh(1) * 3 + 1)) < 1e-5
    # the program, the runtime and (unless disabled) the fast-call extension and the
    # array cache (array_cache.py, built at import)
    entries = sorted(p for p in os.listdir(tmp_path) if p.endswith(".so"))
    assert len(entries) == 4 - bool(os.environ.get("KILN_NO_FASTCALL")) \
        - (os.environ.get("KILN_ARRAY_CACHE") == "0")
    assert _run_script(env)[0] == "CProgram"
    assert sorted(p for p in os.listdir(tmp_path) if p.endswith(".so")) == entries
    # truncate a cached object: the next process must notice and rebuild it, without
    # ever mapping the broken file (a dlopen of one cut at 3000 bytes dies with SIGBUS)
    for k, entry in enumerate(entries):
        path = tmp_path / entry
        good = path.read_bytes()
        for cut in ((100, 3000, len(good) - 1) if k == 0 else (3000,)):
            path.write_bytes(good[:cut])
            kind, value = _run_script(env)
            assert kind == "CProgram" and abs(float(value) - (onp.tanh(1) * 3 + 1)) < 1e-5
            assert path.stat().st_size == len(good)


def test_two_processes_compiling_the_same_graph_at_once(tmp_path):
    env = dict(os.environ, KILN_CACHE_DIR=str(tmp_path))
    procs = [subprocess.Popen([sys.executable, "-c", SCRIPT], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, env=env) for _ in range(3)]
    for p in procs:
        out, err = p.communicate(timeout=300)
        assert p.returncode == 0, err
        assert out.split()[0] == "CProgram"
    assert not [p for p in os.listdir(tmp_path) if p.startswith(".kiln-build")]


def test_no_compiler_falls_back_to_numpy_with_a_warning(tmp_path):
    env = dict(os.environ, CC="/bin/false", KILN_CACHE_DIR=str(tmp_path))
    res = subprocess.run([sys.executable, "-W", "always", "-c", SCRIPT], capture_output=True,
                         text=True, env=env, timeout=300)
    assert res.returncode == 0, res.stderr
    kind, value = res.stdout.split()
    assert kind == "NumpyProgram" and abs(float(value) - (onp.tanh(1) * 3 + 1)) < 1e-5
    assert "C backend is unavailable" in res.stderr
