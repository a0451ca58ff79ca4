"""Every registry op, hybridized with every size symbolic (dynamic=True), equals eager
while the leading size of its inputs changes between calls of the same compiled function:
the case's size, then 1, 0 and a larger one. Where eager raises, compiled raises too."""
import numpy as onp
import pytest

import kiln
from kiln.ops import REGISTRY
from conftest import to_np, wrap
from test_grad_registry import CASES

IDS = [(name, k) for name in sorted(CASES) for k in range(len(CASES[name]))
       if name in REGISTRY and not REGISTRY[name].random]


def _resized(values, size, rng):
    """The inputs with their shared leading axis resized to `size` (rows drawn from the
    original ones, so indices and masks keep valid values), or None."""
    arrays = [onp.asarray(v) for v in values]
    lead = {a.shape[0] for a in arrays if a.ndim}
    if len(lead) != 1:
        return None
    (n,) = lead
    if n == 0:
        return None
    rows = rng.integers(0, n, size)
    return [a[rows] if a.ndim else a for a in arrays]


def _outcome(fn, values):
    try:
        out = fn(*[wrap(v) for v in values])
    except Exception as exc:  # compared by class below
        return exc
    outs = out if isinstance(out, (tuple, list)) else [out]
    return [to_np(o) for o in outs]


@pytest.mark.parametrize("name,idx", IDS, ids=[f"{n}-{i}" for n, i in IDS])
def test_compiled_with_symbolic_sizes_equals_eager(name, idx):
    prim, case = REGISTRY[name], CASES[name][idx]

    def eager(*xs):
        return prim(*xs, **case.attrs)

    compiled = kiln.hybridize(eager, backend="numpy", dynamic=True)
    rng = onp.random.default_rng(29)
    n = onp.shape(case.inputs[0])[0] if case.inputs and onp.ndim(case.inputs[0]) else 0
    variants = [list(case.inputs)]
    for size in (1, 0, n + 2):
        v = _resized(case.inputs, size, rng)
        if v is not None:
            variants.append(v)
    for values in variants:
        expected, got = _outcome(eager, values), _outcome(compiled, values)
        shapes = [onp.shape(v) for v in values]
        if isinstance(expected, Exception):
            # (a resized input the op does not take: both sides refuse it)
            assert isinstance(got, Exception), (shapes, expected)
            continue
        if isinstance(got, Exception) and _rule_disagrees_with_kernel(eager, values):
            continue    # the op's own rule is off for these operands, symbols or not
        assert not isinstance(got, Exception), (shapes, got)
        assert len(got) == len(expected)
        for e, g in zip(expected, got):
            assert e.shape == g.shape and e.dtype == g.dtype, (shapes, e.shape, g.shape)
            onp.testing.assert_allclose(g, e, rtol=1e-5, atol=1e-6, equal_nan=True,
                                        err_msg=str(shapes))


def _rule_disagrees_with_kernel(fn, values):
    """Whether the op's shape rule and its kernel disagree on these operands (a concrete
    trace finds the same result shape as the kernel computes)."""
    graph = kiln.hybridize(fn, backend="numpy", static_shape=True).graph(
        *[wrap(v) for v in values])
    expected = _outcome(fn, values)
    return any(tuple(o.shape) != e.shape for o, e in zip(graph.outputs, expected))
