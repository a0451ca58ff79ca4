"""Honest fallbacks: kiln.explain's reasons, strict=True, warnings with the user's line,
eager results (and gradients) after a fallback, and retracing when a captured constant
changes."""
import warnings

import numpy as onp
import pytest

import kiln
from kiln import np
from kiln import autograd
from kiln.gluon import nn
from kiln.hybrid.fallback import HybridizeError, HybridizeFallbackWarning
from conftest import to_np

pytestmark = pytest.mark.filterwarnings("ignore::kiln.graph.capture.KilnTraceWarning")


def uses_asnumpy(x):
    y = x * 2
    total = y.asnumpy().sum()          # needs a concrete value
    return y + float(total)


def try_around_arrays(x):
    try:
        y = x * 2
    except ValueError:
        y = x
    return y


_SOURCE = "def no_source(x):\n    if x.sum() > 0:\n        return x * 2\n    return -x\n"
_ns = {}
exec(compile(_SOURCE, "<generated>", "exec"), _ns)
no_source = _ns["no_source"]

X = np.array([1.0, 2.0])
THIS_FILE = __file__


def _line_of(fn, text):
    import inspect
    lines, first = inspect.getsourcelines(fn)
    return first + next(k for k, line in enumerate(lines) if text in line)


@pytest.mark.parametrize("fn,kind,construct,text", [
    (uses_asnumpy, "concrete-value", "asnumpy()", "y.asnumpy()"),
    (try_around_arrays, "unsupported", "try/except", "try:"),
])
def test_explain_names_reason_and_line(fn, kind, construct, text):
    report = kiln.explain(fn, X)
    assert not report.compiled and report.reasons == [kind]
    brk = report.breaks[0]
    assert brk.construct == construct
    assert brk.file == THIS_FILE and brk.line == _line_of(fn, text)
    assert construct in str(report) and f"{THIS_FILE}:{brk.line}" in str(report)


def test_explain_function_without_source():
    report = kiln.explain(no_source, X)
    assert report.reasons == ["no-source"]
    brk = report.breaks[0]
    assert brk.file == "<generated>" and brk.line == 2
    assert "source" in brk.reason and "bool()" in brk.reason


def test_explain_compiled_model_lists_graphs():
    def f(x):
        while x.sum() < 10:
            x = x * 2
        return x
    report = kiln.explain(f, X)
    assert report.compiled and report.breaks == []
    assert report.graphs[0].control_flow == 1
    assert "compiled into 1 graph" in str(report)


@pytest.mark.parametrize("fn", [uses_asnumpy, try_around_arrays, no_source])
def test_fallback_is_eager_correct_and_warns_once(fn):
    h = kiln.hybridize(fn)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        first = h(X)
        second = h(X)
    onp.testing.assert_allclose(to_np(first), to_np(fn(X)))
    onp.testing.assert_allclose(to_np(second), to_np(fn(X)))
    fallbacks = [w for w in caught if w.category is HybridizeFallbackWarning]
    assert len(fallbacks) == 1
    assert fallbacks[0].filename in (THIS_FILE, "<generated>")
    # gradients flow through the eager fallback
    x = np.array([1.0, 2.0])
    x.attach_grad()
    with autograd.record():
        out = h(x).sum()
    out.backward()
    assert to_np(x.grad).shape == (2,) and onp.all(onp.isfinite(to_np(x.grad)))


def test_strict_turns_fallback_into_error():
    with pytest.raises(HybridizeError, match="asnumpy"):
        kiln.hybridize(uses_asnumpy, strict=True)(X)

    class Net(nn.HybridBlock):
        def forward(self, x):
            if float(x.sum()) > 0:
                return x
            return -x
    net = Net()
    net.hybridize(strict=True)
    with pytest.raises(HybridizeError, match="float"):
        net(X)
    net.hybridize()                          # not strict: falls back with a warning
    with pytest.warns(HybridizeFallbackWarning, match="float"):
        onp.testing.assert_allclose(to_np(net(X)), [1.0, 2.0])


def test_breaking_parent_still_compiles_children():
    class Parent(nn.HybridBlock):
        def __init__(self):
            super().__init__()
            self.body = nn.Dense(3, in_units=2)

        def forward(self, x):
            y = self.body(x)
            print_me = y.asnumpy()           # a debugging line breaks the parent's trace
            return y * 2 + print_me.shape[0]
    net = Parent()
    net.initialize()
    net.hybridize()
    x = np.array([[1.0, 2.0]])
    with pytest.warns(HybridizeFallbackWarning, match="asnumpy"):
        out = net(x)
    assert out.shape == (1, 3)
    assert net.body.__dict__.get("_kiln_cached") is not None    # the child ran compiled


# ---- captured constants that change ------------------------------------------------------
SCALE = 2.0


def scaled(x):
    return x * SCALE


def test_changed_global_retraces():
    global SCALE
    h = kiln.hybridize(scaled)
    try:
        onp.testing.assert_allclose(to_np(h(X)), [2.0, 4.0])
        SCALE = 3.0
        onp.testing.assert_allclose(to_np(h(X)), [3.0, 6.0])
    finally:
        SCALE = 2.0
    onp.testing.assert_allclose(to_np(h(X)), [2.0, 4.0])
    assert "global 'SCALE'" in str(kiln.explain(scaled, X))


def test_changed_closure_variable_and_array_retrace():
    bias = np.array([1.0, 1.0])
    factor = 1.0

    def f(x):
        return x * factor + bias
    h = kiln.hybridize(f)
    onp.testing.assert_allclose(to_np(h(X)), [2.0, 3.0])
    factor = 10.0
    onp.testing.assert_allclose(to_np(h(X)), [11.0, 21.0])
    bias[:] = 5.0                                   # in place: same object, new content
    onp.testing.assert_allclose(to_np(h(X)), [15.0, 25.0])
    bias = np.array([0.0, 0.0])                     # rebound
    onp.testing.assert_allclose(to_np(h(X)), [10.0, 20.0])


def test_changed_attribute_retraces():
    class Net(nn.HybridBlock):
        def __init__(self):
            super().__init__()
            self.temperature = 1.0
            self.shift = np.array([0.0, 0.0])

        def forward(self, x):
            return x / self.temperature + self.shift
    net = Net()
    net.hybridize()
    onp.testing.assert_allclose(to_np(net(X)), [1.0, 2.0])
    net.temperature = 2.0
    onp.testing.assert_allclose(to_np(net(X)), [0.5, 1.0])
    net.shift += 1
    onp.testing.assert_allclose(to_np(net(X)), [1.5, 2.0])
    assert len(net._kiln_cached.entries) == 1       # the stale entry was replaced


def test_self_updating_attribute_does_not_retrace_forever():
    class Counter(nn.HybridBlock):
        def __init__(self):
            super().__init__()
            self.calls = 0

        def forward(self, x):
            self.calls += 1                         # a trace-time side effect
            return x * 2
    net = Counter()
    net.hybridize()
    for _ in range(3):
        net(X)
    assert net.calls == 1


def test_no_guards_without_captured_constants():
    def f(x):
        return x * 2 + 1
    h = kiln.hybridize(f)
    h(X)
    entry = next(iter(h._cached.entries.values()))
    assert entry.guards is None


def test_constant_changing_on_every_call_is_reported():
    step = 0.0

    def f(x):
        return x * step
    h = kiln.hybridize(f)
    with pytest.warns(HybridizeFallbackWarning, match="traced again"):
        for k in range(10):
            step = float(k)
            onp.testing.assert_allclose(to_np(h(X)), to_np(X) * k)


def test_graph_of_a_fallen_back_function_explains():
    h = kiln.hybridize(uses_asnumpy)
    with pytest.warns(HybridizeFallbackWarning):
        with pytest.raises(HybridizeError, match="nothing was compiled.*asnumpy"):
            h.graph(X)


def test_explain_says_which_backend_runs_each_graph_and_why():
    from kiln.backend.c import build
    if not build.available():
        pytest.skip("no working C compiler")

    def matmul(a, b):
        return np.matmul(a, b)
    floats = np.ones((3, 3))
    report = kiln.explain(matmul, floats, floats)
    assert [g.backend for g in report.graphs] == ["c"] and "generated C" in str(report)
    ints = np.array(onp.ones((3, 3), "int32"))   # integer matmuls have no C lowering
    report = kiln.explain(matmul, ints, ints)
    assert [g.backend for g in report.graphs] == ["numpy"]
    assert "NumPy executor" in str(report)
    assert "cannot lower" in report.graphs[0].reason and "int32" in report.graphs[0].reason
    report = kiln.explain(kiln.hybridize(matmul, backend="numpy"), floats, floats)
    assert report.graphs[0].backend == "numpy"
