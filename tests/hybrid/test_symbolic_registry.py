"""Every registry op, hybridized with every size symbolic (dynamic=True), equals eager
while the leading size of its inputs changes between calls of the same compiled function:
the case's size, then 1, 0 and a larger one, on the NumPy executor and on generated C.
Where eager raises, compiled raises too. Where the C of an op needs a size's value,
hybridize specializes that signature (NotSizeGeneric): still compiled, still equal to
eager. Random ops draw other numbers compiled on C: their shapes and dtypes are compared."""
import numpy as onp
import pytest

import kiln
from kiln.backend.c import build
from kiln.ops import REGISTRY
from conftest import to_np, wrap
from test_grad_registry import CASES

IDS = [(name, k) for name in sorted(CASES) for k in range(len(CASES[name]))
       if name in REGISTRY and not REGISTRY[name].random]
RANDOM_IDS = [(name, k) for name in sorted(CASES) for k in range(len(CASES[name]))
              if name in REGISTRY and REGISTRY[name].random]
pytestmark = pytest.mark.filterwarnings("ignore::kiln.graph.capture.KilnTraceWarning")
BACKEND_IDS = [(backend, name, k) for backend in ("numpy", "c")
               for name, k in sorted(IDS + (RANDOM_IDS if backend == "c" else []))]


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


@pytest.mark.parametrize("backend,name,idx", BACKEND_IDS,
                         ids=[f"{b}-{n}-{i}" for b, n, i in BACKEND_IDS])
def test_compiled_with_symbolic_sizes_equals_eager(backend, name, idx):
    if backend == "c" and not build.available():
        pytest.skip("no C compiler")
    prim, case = REGISTRY[name], CASES[name][idx]

    def eager(*xs):
        return prim(*xs, **case.attrs)

    compiled = kiln.hybridize(eager, backend=backend, dynamic=True)
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
            if not prim.random:
                onp.testing.assert_allclose(g, e, rtol=1e-5, atol=1e-6, equal_nan=True,
                                            err_msg=str(shapes))


def _rule_disagrees_with_kernel(fn, values):
    """Whether the op's shape rule and its kernel disagree on these operands (a concrete
    trace finds the same result shape as the kernel computes)."""
    graph = kiln.hybridize(fn, backend="numpy", static_shape=True).graph(
        *[wrap(v) for v in values])
    expected = _outcome(fn, values)
    return any(tuple(o.shape) != e.shape for o, e in zip(graph.outputs, expected))


# ---- property test: every size of every input drawn by hypothesis -------------------------
# One hybridized function per case serves every example hypothesis draws, so the test also
# checks that its programs are reused across sizes: a program may serve a class of sizes
# (guards such as s0 >= 4, s1 == 0, s1 == 1), but sizes above 1 may not each take a
# program of their own (a shape rule that needed the value), unless the case is listed
# here with the reason.
SPECIALIZES = {
    "cond": "control-flow subgraphs run at their traced sizes (symbolic_exec._pin_sizes)",
    "while_loop": "control-flow subgraphs run at their traced sizes",
    "while_loop_grad": "control-flow subgraphs run at their traced sizes",
    "scan": "the body runs at its traced sizes, and the sequence shares a size with it here",
    "scan_grad": "the body runs at its traced sizes",
    "reshape": "the case's target shape is concrete, so the input's size is fixed",
    "slice-1": "a negative step on a symbolic axis needs the axis' size",
    "slice-2": "a negative step on a symbolic axis needs the axis' size",
}
_COMPILED = {}


def _regrouped(values, mapping):
    """The inputs with every axis of size n resized to mapping[n] (axes of one size stay
    equal, so operands that must agree still do); elements are taken from the originals
    cyclically, so indices and masks keep values the op accepts."""
    out = []
    for v in values:
        a = onp.asarray(v)
        shape = [mapping.get(n, n) for n in a.shape]
        if a.ndim == 0:
            out.append(a)
        elif a.size == 0:
            out.append(onp.zeros(shape, a.dtype))
        else:
            out.append(a[onp.ix_(*[onp.arange(m) % n for m, n in zip(shape, a.shape)])])
    return out


try:
    import hypothesis
    from hypothesis import strategies as st
except ImportError:  # pragma: no cover - hypothesis is in the dev extra
    hypothesis = None


def _given(test):
    if hypothesis is None:
        return pytest.mark.skip("needs hypothesis")(test)
    settings = hypothesis.settings(max_examples=12, deadline=None, derandomize=True,
                                   suppress_health_check=list(hypothesis.HealthCheck))
    return settings(hypothesis.given(data=st.data())(test))


@pytest.mark.parametrize("name,idx", IDS, ids=[f"{n}-{i}" for n, i in IDS])
@_given
def test_one_program_with_symbolic_sizes_equals_eager_over_drawn_sizes(name, idx, data):
    prim, case = REGISTRY[name], CASES[name][idx]

    def eager(*xs):
        return prim(*xs, **case.attrs)

    if (name, idx) not in _COMPILED:
        _COMPILED[(name, idx)] = kiln.hybridize(eager, backend="numpy", dynamic=True)
        _outcome(_COMPILED[(name, idx)], list(case.inputs))    # traced at the case's sizes
    compiled = _COMPILED[(name, idx)]
    sizes = sorted({n for v in case.inputs for n in onp.shape(v) if n >= 2})
    drawn = data.draw(st.lists(st.integers(0, 9), min_size=len(sizes), max_size=len(sizes)))
    values = _regrouped(case.inputs, dict(zip(sizes, drawn)))
    shapes = [onp.shape(v) for v in values]
    expected, got = _outcome(eager, values), _outcome(compiled, values)
    if isinstance(expected, Exception):
        assert isinstance(got, Exception), (shapes, expected)
    elif not (isinstance(got, Exception) and _rule_disagrees_with_kernel(eager, values)):
        assert not isinstance(got, Exception), (shapes, got)
        assert len(got) == len(expected)
        for e, g in zip(expected, got):
            assert e.shape == g.shape and e.dtype == g.dtype, (shapes, e.shape, g.shape)
            onp.testing.assert_allclose(g, e, rtol=1e-5, atol=1e-6, equal_nan=True,
                                        err_msg=str(shapes))
    if name not in SPECIALIZES and f"{name}-{idx}" not in SPECIALIZES:
        assert not _programs_per_size(compiled), (shapes, kiln.programs(compiled))


def _programs_per_size(compiled):
    """Evidence that sizes above 1 took programs of their own: a symbol pinned to two such
    sizes in two programs, or two programs built without symbols (after the policy gave up
    on them). A pin to one structural size (statistics' 2 rows) is not such evidence."""
    pins, plain = {}, []
    for program in kiln.programs(compiled).programs:
        if program.symbolic is None:
            plain.append(program.signatures)
            continue
        for g in program.symbolic.env.guards:
            if g.kind() == "specialized" and g.rhs[1] > 1:
                pins.setdefault(g.lhs[1], set()).add(g.rhs[1])
    found = [f"{name} pinned to {sorted(v)}" for name, v in pins.items() if len(v) > 1]
    if len(plain) > 1:
        found.append(f"specialized programs for {plain}: {kiln.programs(compiled).refused}")
    return found
