"""cond / while_loop / while_loop_grad compiled by the C backend, against eager.

The models are those of test_control_flow.py. Every case asserts that both the forward and
the backward program really compiled (CProgram), and that each branch and several trip
counts went through the one compiled program."""
import numpy as onp
import pytest

import kiln
from kiln import np, npx
from kiln import autograd
from kiln.backend.c import build, control

from conftest import to_np
from test_control_flow import _grads  # noqa: E402
from test_control_flow import (FixedHiddenMLP, NewtonSqrt, BatchBranch, powers, grow,
                               npx_program, run_with_grads, assert_same, HALF, ZEROS)

pytestmark = [pytest.mark.skipif(not build.available(), reason="no working C compiler"),
              pytest.mark.filterwarnings("ignore::kiln.graph.capture.KilnTraceWarning")]


def c_twin(make):
    """(eager net, net hybridized on the C backend) with the same parameters."""
    npx.seed(0)
    a, b = make(), make()
    for net in (a, b):
        net.initialize()
        net(np.zeros((2, 20)))
    for (_, pa), (_, pb) in zip(a.collect_params().items(), b.collect_params().items()):
        pb.set_data(pa.data())
    b.hybridize(backend="c")
    return a, b


def assert_compiled(cached):
    """Every compiled entry (forward and, when recorded, backward) is a CProgram."""
    for entry in cached.entries.values():
        assert type(entry.program).__name__ == "CProgram", entry.program.graph
        if entry.grad is not None:
            assert type(entry.grad[0]).__name__ == "CProgram", entry.grad[0].graph


def test_fixed_hidden_mlp_every_path():
    eager, hybrid = c_twin(FixedHiddenMLP)
    base = to_np(eager.dense.weight.data())
    paths = set()
    rng = onp.random.default_rng(0)
    cases = [(HALF, 0.0), (HALF, 0.5), (HALF, 2.5), (HALF, 0.05)]
    cases += [(rng.random((2, 20)).astype("float32"), s) for s in (0.01, 0.3, 1.0, 3.0)]
    for x, scale in cases:
        for net in (eager, hybrid):
            net.dense.weight.set_data(np.array(base * scale))
        with autograd.pause():
            h = eager.dense(np.array(x))
            h = eager.dense(npx.relu(np.dot(h, eager.rand_weight.data()) + 1))
            halvings = 0
            while float(np.abs(h).sum()) > 1:
                h, halvings = h / 2, halvings + 1
            paths.add((halvings > 0, float(h.sum()) < 0.8))
        assert_same(run_with_grads(eager, x), run_with_grads(hybrid, x))
        with autograd.predict_mode():            # the inference program as well
            onp.testing.assert_allclose(to_np(hybrid(np.array(x))), to_np(eager(np.array(x))),
                                        rtol=1e-5, atol=1e-5)
    assert {p[0] for p in paths} == {False, True}, paths
    assert {p[1] for p in paths} == {False, True}, paths
    assert_compiled(hybrid._kiln_cached)
    graph = hybrid._kiln_cached.graph(np.array(HALF))
    assert "while_loop" in graph.ops and "cond" in graph.ops


def test_loop_until_converged_trip_counts():
    eager, hybrid = c_twin(NewtonSqrt)
    trips = set()
    for x, scale in ((HALF, 0.0), (HALF * 8, 1.0), (HALF * 12, 20.0), (HALF, 0.05),
                     (onp.linspace(-6, 6, 40, dtype="float32").reshape(2, 20), 1.0)):
        x = x * scale
        with autograd.pause():
            a = to_np(npx.softplus(eager.dense(np.array(x)))) + 0.05
        y, steps = onp.ones_like(a), 0
        while (onp.abs(y * y - a) / a).max() > 1e-4:
            y, steps = 0.5 * (y + a / y), steps + 1
        trips.add(steps)
        assert_same(run_with_grads(eager, x), run_with_grads(hybrid, x), rtol=1e-4, atol=1e-4)
    assert len(trips) >= 3, trips
    assert_compiled(hybrid._kiln_cached)


def test_branch_on_batch_statistic_every_branch():
    eager, hybrid = c_twin(BatchBranch)
    seen = set()
    for shift, spike in ((1.0, 0.0), (0.0, 0.0), (0.0, 2.0), (-1.0, 0.0)):
        x = ZEROS + onp.linspace(-0.2, 0.2, 40, dtype="float32").reshape(2, 20) + shift
        x[0, 0] += spike
        m = float(x.mean())
        seen.add("a" if m > 0.3 else ("b" if m > -0.3 and not x.max() > 1.5 else "c"))
        assert_same(run_with_grads(eager, x), run_with_grads(hybrid, x))
    assert seen == {"a", "b", "c"}, seen
    assert_compiled(hybrid._kiln_cached)


def _assert_grads_match(fn, h, *args, tol=1e-5):
    (oe, ge), (oh, gh) = _grads(fn, *args), _grads(h, *args)
    onp.testing.assert_allclose(oh, oe, rtol=tol, atol=tol)
    for a, b in zip(gh, ge):
        onp.testing.assert_allclose(a, b, rtol=tol, atol=tol)


def test_for_over_an_array_bound():
    h = kiln.hybridize(powers, backend="c")
    x = onp.array([1.0, -2.0], onp.float32)
    for n in (0, 1, 4, 9):
        _assert_grads_match(powers, h, x, onp.array(n))
    assert_compiled(h._cached)


@pytest.mark.parametrize("history_bytes", [control.HISTORY_BYTES, 12, 24])
def test_loop_invariant_gradient_nested_branch(monkeypatch, history_bytes):
    """12 and 24 bytes hold one and two float32[3] states: longer loops rebuild the
    missing states by re-running the body, and must give the same gradients."""
    monkeypatch.setattr(control, "HISTORY_BYTES", history_bytes)
    h = kiln.hybridize(grow, backend="c")
    rng = onp.random.default_rng(1)
    signs = set()
    for _ in range(6):
        x = rng.uniform(-1, 1, 3).astype("float32")
        w = rng.uniform(1.1, 1.6, 3).astype("float32")
        signs.add(bool(x.sum() > 0))
        _assert_grads_match(grow, h, x, w, tol=1e-4)
    assert signs == {True, False}
    assert_compiled(h._cached)


@pytest.mark.parametrize("start", [[0.5, 1.0], [4.0, 8.0], [0.01, 0.01]])
def test_npx_control_flow_with_max_iterations(start):
    x = np.array(start)
    h = kiln.hybridize(npx_program, backend="c")
    for e, c in zip(npx_program(x), h(x)):
        assert e.shape == c.shape
        onp.testing.assert_allclose(to_np(c), to_np(e), rtol=1e-6)
    assert_compiled(h._cached)


def test_body_that_swaps_its_carried_values():
    """The body returns its inputs permuted: copying back must not read overwritten state."""
    def f(a, b, c):
        out, (a2, b2, c2) = npx.while_loop(
            lambda a, b, c: c < 5, lambda a, b, c: (c, (b, a, c + 1)), [a, b, c],
            max_iterations=10)
        return a2 * 10 + b2 + c2
    args = [onp.array([1.0, 2.0], "float32"), onp.array([3.0, 4.0], "float32"),
            onp.array(0.0, "float32")]
    h = kiln.hybridize(f, backend="c")
    _assert_grads_match(f, h, *args)
    assert_compiled(h._cached)


def test_iteration_cap_stops_an_endless_loop():
    def f(x):
        _, y = npx.while_loop(lambda y: y.sum() > -1, lambda y: (y, y + 1), x,
                              max_iterations=7)
        return y
    h = kiln.hybridize(f, backend="c")
    x = np.array([0.0, 1.0])
    onp.testing.assert_allclose(to_np(h(x)), [7.0, 8.0])
    _assert_grads_match(f, h, to_np(x))
    assert_compiled(h._cached)
