"""Every registry op on generated C with every size symbolic (dynamic=True) equals eager
while the leading size of its inputs changes between calls of one compiled function (the
case's size, then 1, 0 and a larger one), as tests/hybrid/test_symbolic_registry.py checks
on the NumPy executor. Where the C of an op needs a size's value, hybridize specializes
that signature (NotSizeGeneric): still compiled, still equal to eager. Random ops draw
other numbers compiled: their shapes and dtypes are compared."""
import numpy as onp
import pytest

import kiln
from kiln.backend.c import build
from kiln.ops import REGISTRY
from test_grad_registry import CASES
from test_symbolic_registry import _outcome, _resized, _rule_disagrees_with_kernel

pytestmark = [pytest.mark.skipif(not build.available(), reason="no C compiler"),
              pytest.mark.filterwarnings("ignore::kiln.graph.capture.KilnTraceWarning")]

IDS = [(name, k) for name in sorted(CASES) for k in range(len(CASES[name]))
       if name in REGISTRY]


@pytest.mark.parametrize("name,idx", IDS, ids=[f"{n}-{i}" for n, i in IDS])
def test_generated_c_with_symbolic_sizes_equals_eager(name, idx):
    prim, case = REGISTRY[name], CASES[name][idx]

    def eager(*xs):
        return prim(*xs, **case.attrs)

    compiled = kiln.hybridize(eager, backend="c", dynamic=True)
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
            assert isinstance(got, Exception), (shapes, expected)
            continue
        if isinstance(got, Exception) and _rule_disagrees_with_kernel(eager, values):
            continue    # the op's own rule is off for these operands, symbols or not
        assert not isinstance(got, Exception), (shapes, got)
        assert len(got) == len(expected)
        for e, g in zip(expected, got):
            assert e.shape == g.shape and e.dtype == g.dtype, (shapes, e.shape, g.shape)
            if not prim.random:
                onp.testing.assert_allclose(g, e, rtol=1e-5, atol=1e-6, equal_nan=True,
                                            err_msg=str(shapes))
