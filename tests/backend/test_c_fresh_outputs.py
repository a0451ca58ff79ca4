"""Large outputs of a compiled program are fresh arrays per call, not copies of buffers the
program keeps (a training step's forward returns every activation its backward reads: kept
in the program and copied out, each would live twice)."""
import numpy as onp
import pytest

import kiln
from kiln import np, npx
from kiln import autograd
from kiln.backend.c import build
from kiln.backend.c.program import CProgram, FRESH_OUTPUT_BYTES
from kiln.gluon import nn

pytestmark = pytest.mark.skipif(not build.available(), reason="no working C compiler")

ROWS = FRESH_OUTPUT_BYTES // (4 * 64) * 2      # a (ROWS, 64) float32 output is large


def _program(hybrid):
    entry = next(iter(hybrid._cached.entries.values()))
    assert isinstance(entry.program, CProgram)
    return entry.program


def _x(seed):
    return np.array(onp.random.default_rng(seed).standard_normal((ROWS, 64)).astype("float32"))


def test_a_large_output_is_not_kept_by_the_program_and_not_overwritten_by_the_next_call():
    fn = lambda x: (npx.relu(x) * 2, x.sum())     # noqa: E731  (a large and a small output)
    hybrid = kiln.hybridize(fn, backend="c")
    x1, x2 = _x(0), _x(1)
    big1, small1 = hybrid(x1)
    program = _program(hybrid)
    fresh = list(program._fresh)
    assert len(fresh) == 1      # the large output only; the small one is copied as before
    assert all(program.buffers[b] is None for b in fresh)   # nothing kept between calls
    first = big1.asnumpy().copy()
    big2, small2 = hybrid(x2)
    assert not onp.shares_memory(big1.asnumpy(), big2.asnumpy())
    onp.testing.assert_array_equal(big1.asnumpy(), first)   # the second call wrote elsewhere
    for (big, small), x in (((big1, small1), x1), ((big2, small2), x2)):
        eb, es = fn(x)
        onp.testing.assert_allclose(big.asnumpy(), eb.asnumpy(), rtol=1e-6)
        onp.testing.assert_allclose(small.asnumpy(), es.asnumpy(), rtol=1e-5)


def test_one_value_returned_twice_is_still_copied_so_the_two_results_do_not_alias():
    fn = lambda x: (npx.relu(x), npx.relu(x).reshape(-1))   # noqa: E731
    hybrid = kiln.hybridize(fn, backend="c")
    a, b = hybrid(_x(2))
    assert not onp.shares_memory(a.asnumpy(), b.asnumpy())
    a[0, 0] = 123.0
    assert float(b[0]) != 123.0
    onp.testing.assert_allclose(a.asnumpy().ravel()[1:], b.asnumpy()[1:], rtol=0)


def test_a_training_step_returns_its_activations_fresh_and_matches_eager():
    """The forward program of a recorded hybridized call returns the residuals backward
    reads; they are the fresh ones, and gradients match eager."""
    net = nn.HybridSequential()
    net.add(nn.Dense(64, activation="relu"), nn.Dense(64, activation="relu"), nn.Dense(3))
    net.initialize(kiln.init.Xavier())
    x = _x(3)
    results = []
    for hybridized in (False, True):
        if hybridized:
            net.hybridize(backend="c")
        for _ in range(2):      # the second call reuses the compiled step
            with autograd.record():
                loss = (net(x) ** 2).sum()
            loss.backward()
        results.append([p.grad().asnumpy().copy() for p in net.collect_params().values()])
    for ge, gh in zip(*results):
        onp.testing.assert_allclose(gh, ge, rtol=1e-4, atol=1e-3)
    hybrid = net
    from kiln.hybrid.cached import cached_function_of
    entry = next(e for e in cached_function_of(hybrid).entries.values() if e.grad is not None)
    assert entry.program._fresh, "the step's activations should come back fresh"
    assert all(entry.program.buffers[b] is None for b in entry.program._fresh)


def test_a_program_with_large_working_memory_allocates_it_per_call(monkeypatch):
    """Past KEEP_BUFFERS_BYTES a program keeps no buffer between calls (here the bound is
    lowered so that a small conv net crosses it); its results and gradients stay right."""
    import kiln.backend.c.program as program_module
    monkeypatch.setattr(program_module, "KEEP_BUFFERS_BYTES", 0)
    net = nn.HybridSequential()
    net.add(nn.Conv2D(4, 3, padding=1), nn.BatchNorm(), nn.Activation("relu"),
            nn.MaxPool2D(2), nn.Dense(3))
    net.initialize(kiln.init.Xavier())
    rng = onp.random.default_rng(4)
    xs = [np.array(rng.standard_normal((2, 3, 8, 8)).astype("float32")) for _ in range(2)]
    results = []
    for hybridized in (False, True):
        if hybridized:
            net.hybridize(backend="c")
        got = []
        for x in xs:
            with autograd.record():
                out = net(x)
                loss = (out ** 2).sum()
            loss.backward()
            got.append([out.asnumpy().copy()] +
                       [p.grad().asnumpy().copy() for p in net.collect_params().values()
                        if p.grad_req != "null"])
        results.append(got)
    for eager_call, hybrid_call in zip(*results):
        for e, h in zip(eager_call, hybrid_call):
            onp.testing.assert_allclose(h, e, rtol=1e-4, atol=1e-4)
    from kiln.hybrid.cached import cached_function_of
    entry = next(e for e in cached_function_of(net).entries.values() if e.grad is not None)
    for program in (entry.program, entry.grad[0]):
        assert isinstance(program, CProgram)
        assert program._per_call and all(b is None for b in program.buffers)
