"""Array-dependent `if` / `while` / `for` in hybridized code become cond / while_loop ops.

Oracle: the same model run eagerly (plain Python control flow). Hypothesis draws inputs
that drive every branch and different trip counts through ONE compiled program per input
shape; each test asserts that every path was exercised at least once.
"""
import warnings

import numpy as onp
import pytest
from hypothesis import example, given, settings, strategies as st, HealthCheck

import kiln
from kiln import np, npx
from kiln import autograd
from kiln.gluon import nn
from kiln.hybrid.fallback import HybridizeFallbackWarning
from conftest import to_np

FAST = settings(max_examples=25, deadline=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture,
                                       HealthCheck.too_slow])


HALF = onp.full((2, 20), 0.5, onp.float32)
ZEROS = onp.zeros((2, 20), onp.float32)


def floats(shape, lo=-2.0, hi=2.0):
    n = int(onp.prod(shape))
    lo, hi = float(onp.float32(lo)), float(onp.float32(hi))
    return st.lists(st.floats(lo, hi, width=32), min_size=n, max_size=n).map(
        lambda v: onp.array(v, dtype=onp.float32).reshape(shape))


@pytest.fixture(autouse=True)
def _no_fallbacks():
    """A converted model must compile: any fallback warning fails the test."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", HybridizeFallbackWarning)
        warnings.simplefilter("ignore", kiln.graph.capture.KilnTraceWarning)
        yield


def run_with_grads(net, x):
    """Output, input gradient and parameter gradients of net(x).sum()."""
    xs = np.array(x)
    xs.attach_grad()
    params = {k: p for k, p in net.collect_params().items() if p.grad_req != "null"}
    for p in params.values():
        p.zero_grad()
    with autograd.record():
        out = net(xs)
        loss = out.sum()
    loss.backward()
    return (to_np(out), to_np(xs.grad),
            {k: to_np(p.grad()) for k, p in params.items()})


def assert_same(eager, hybrid, rtol=1e-5, atol=1e-5):
    (oe, ge, pe), (oh, gh, ph) = eager, hybrid
    assert oh.dtype == oe.dtype and oh.shape == oe.shape
    onp.testing.assert_allclose(oh, oe, rtol=rtol, atol=atol)
    onp.testing.assert_allclose(gh, ge, rtol=rtol, atol=atol)
    for k in pe:
        onp.testing.assert_allclose(ph[k], pe[k], rtol=rtol, atol=atol, err_msg=k)


def twin(make):
    """(eager net, hybridized net) with the same parameters."""
    npx.seed(0)
    a, b = make(), make()
    a.initialize()
    b.initialize()
    a(np.zeros((2, 20)))
    b(np.zeros((2, 20)))
    for (_, pa), (_, pb) in zip(a.collect_params().items(), b.collect_params().items()):
        pb.set_data(pa.data())
    b.hybridize()
    return a, b


def compiled_graph(net, x):
    return net._kiln_cached.graph(np.array(x))


# ---- d2l's FixedHiddenMLP (MXNet edition, section "Layers and Blocks") --------------------
class FixedHiddenMLP(nn.HybridBlock):
    def __init__(self):
        super().__init__()
        # Random weight parameters created with `get_constant` are not updated in training
        self.rand_weight = self.params.get_constant(
            'rand_weight', np.random.uniform(size=(20, 20)))
        self.dense = nn.Dense(20, activation='relu')

    def forward(self, X):
        X = self.dense(X)
        X = npx.relu(np.dot(X, self.rand_weight.data()) + 1)
        X = self.dense(X)
        # Control flow
        while np.abs(X).sum() > 1:
            X /= 2
        if X.sum() < 0.8:
            X *= 10
        return X.sum()


def test_fixed_hidden_mlp_matches_eager_on_every_path():
    eager, hybrid = twin(FixedHiddenMLP)
    base = to_np(eager.dense.weight.data())
    paths = set()

    @FAST
    @given(floats((2, 20), 0.0, 1.0), st.one_of(st.just(0.0), st.floats(0.001, 3.0)))
    @example(HALF, 0.0)      # no halving, then `X *= 10`   (seeded initialization)
    @example(HALF, 0.5)      # one halving, the branch not taken
    @example(HALF, 2.5)      # several halvings
    def check(x, scale):
        # scaling the shared layer's weights moves the activations across the loop's and
        # the branch's thresholds; the parameters are graph inputs, so no retrace happens
        for net in (eager, hybrid):
            net.dense.weight.set_data(np.array(base * scale))
        with autograd.pause():
            h = eager.dense(np.array(x))
            h = eager.dense(npx.relu(np.dot(h, eager.rand_weight.data()) + 1))
            halvings = 0
            while float(np.abs(h).sum()) > 1:
                h = h / 2
                halvings += 1
            paths.add((halvings > 0, float(h.sum()) < 0.8))
        assert_same(run_with_grads(eager, x), run_with_grads(hybrid, x))

    check()
    assert {p[0] for p in paths} == {False, True}, paths     # loop ran 0 and >0 times
    assert {p[1] for p in paths} == {False, True}, paths     # both sides of the `if`
    graph = compiled_graph(hybrid, onp.zeros((2, 20), onp.float32))
    assert "while_loop" in graph.ops and "cond" in graph.ops


# ---- a loop until convergence: Newton's square root on a layer's output ------------------
class NewtonSqrt(nn.HybridBlock):
    def __init__(self):
        super().__init__()
        self.dense = nn.Dense(20)

    def forward(self, x):
        a = npx.softplus(self.dense(x)) + 0.05
        y = np.ones_like(a)
        steps = 0
        # a relative test: an absolute 1e-4 on values near 100 sits at float32's last bits,
        # where compiled code (which may fuse a multiply-add) and NumPy round differently
        # and so stop after different numbers of steps
        while (np.abs(y * y - a) / a).max() > 1e-4:
            y = 0.5 * (y + a / y)
            steps += 1
        return y * steps


def test_loop_until_converged_matches_eager():
    eager, hybrid = twin(NewtonSqrt)
    trips = set()

    @FAST
    @given(floats((2, 20), -6.0, 6.0), st.sampled_from([0.0, 0.05, 1.0, 20.0]))
    @example(HALF, 0.0)
    @example(HALF * 8, 1.0)
    @example(HALF * 12, 20.0)
    def check(x, scale):
        x = x * scale
        out_e = run_with_grads(eager, x)
        with autograd.pause():
            a = to_np(npx.softplus(eager.dense(np.array(x)))) + 0.05
        y, steps = onp.ones_like(a), 0
        while (onp.abs(y * y - a) / a).max() > 1e-4:
            y, steps = 0.5 * (y + a / y), steps + 1
        trips.add(steps)
        assert_same(out_e, run_with_grads(hybrid, x), rtol=1e-4, atol=1e-4)

    check()
    assert len(trips) >= 3, trips          # different trip counts through one program


# ---- a branch on a batch statistic, with an early return and elif ------------------------
class BatchBranch(nn.HybridBlock):
    def __init__(self):
        super().__init__()
        self.a = nn.Dense(20, in_units=20)
        self.b = nn.Dense(20, in_units=20)

    def forward(self, x):
        m = x.mean()
        if m > 0.3:
            return self.a(x) * 2
        elif m > -0.3 and not (x.max() > 1.5):
            y = self.b(x)
        else:
            y = -self.a(x)
        return y + 1


def test_branch_on_batch_statistic_matches_eager():
    eager, hybrid = twin(BatchBranch)
    seen = set()

    @FAST
    @given(floats((2, 20), -1.0, 1.0), st.sampled_from([-1.0, 0.0, 1.0]),
           st.sampled_from([0.0, 2.0]))
    @example(ZEROS, 1.0, 0.0)       # mean > 0.3: the early return
    @example(ZEROS, 0.0, 0.0)       # the elif
    @example(ZEROS, 0.0, 2.0)       # elif refused by `not (max > 1.5)`: the else
    def check(x, shift, spike):
        x = x * 0.2 + shift
        x[0, 0] += spike
        m = float(x.mean())
        seen.add("a" if m > 0.3 else ("b" if m > -0.3 and not x.max() > 1.5 else "c"))
        assert_same(run_with_grads(eager, x), run_with_grads(hybrid, x))

    check()
    assert seen == {"a", "b", "c"}, seen


# ---- functions: for over an array bound, loop invariants, nesting ------------------------
def powers(x, n):
    y = x * 1
    for i in range(n.reshape(()).astype("int64")):
        y = y * 0.5 + i
    return y


def grow(x, w):
    y = x
    while (y * y).sum() < 50:
        if y.sum() > 0:
            y = y * w + 1
        else:
            y = y * w - 1
    return y


def _grads(fn, *args):
    xs = [np.array(a) for a in args]
    for a in xs:
        if a.dtype.kind == "f":
            a.attach_grad()
    with autograd.record():
        out = fn(*xs)
    out.backward()
    return to_np(out), [to_np(a.grad) for a in xs if a.dtype.kind == "f"]


def test_for_range_with_array_bound():
    h = kiln.hybridize(powers)
    x = onp.array([1.0, -2.0], onp.float32)
    for n in (0, 1, 4):
        (oe, ge), (oh, gh) = _grads(powers, x, onp.array(n)), _grads(h, x, onp.array(n))
        onp.testing.assert_allclose(oh, oe, rtol=1e-6)
        onp.testing.assert_allclose(gh[0], ge[0], rtol=1e-6)
    assert "while_loop" in h.graph(np.array(x), np.array(3)).ops


def test_loop_invariant_gradient_and_nested_branch():
    h = kiln.hybridize(grow)
    signs = set()

    @FAST
    @given(floats((3,), -1.0, 1.0), floats((3,), 1.1, 1.6))
    def check(x, w):
        signs.add(bool(x.sum() > 0))
        (oe, ge), (oh, gh) = _grads(grow, x, w), _grads(h, x, w)
        onp.testing.assert_allclose(oh, oe, rtol=1e-5, atol=1e-5)
        for a, b in zip(gh, ge):
            onp.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-4)

    check()
    assert signs == {True, False}


def test_python_control_flow_still_unrolls():
    def f(x, k=3):
        for _ in range(k):          # Python bound: unrolled at trace time
            x = x * 2
        if k > 2:                   # Python test: plain Python
            x = x + 1
        return x
    h = kiln.hybridize(f)
    out = h(np.array([1.0]))
    assert float(out[0]) == 9.0
    ops = h.graph(np.array([1.0])).ops
    assert "cond" not in ops and "while_loop" not in ops


def test_conditional_expression_and_boolean_operators():
    def f(x):
        y = x * 2 if x.sum() > 0 else x * -3
        if x.max() > 0.5 or x.min() < -0.5:
            y = y + 1
        return y
    h = kiln.hybridize(f)
    for v in ([1.0, 0.2], [-0.1, 0.2], [-1.0, -0.2]):
        onp.testing.assert_allclose(to_np(h(np.array(v))), to_np(f(np.array(v))))


# ---- npx.cond / npx.while_loop / npx.foreach ---------------------------------------------
def npx_program(x):
    out, (a, i) = npx.while_loop(lambda a, i: a.sum() < 10, lambda a, i: (a * 1, (a * 2, i + 1)),
                                 [x, np.array(0.0)], max_iterations=6)
    c = npx.cond(x.sum() > 1, lambda a: a + 1, lambda a: a - 1, [x])
    seq, state = npx.foreach(lambda item, s: (item + s, s + item), np.stack([x, x]), x * 0)
    return out, a, i, c, seq, state


@pytest.mark.parametrize("start", [[0.5, 1.0], [4.0, 8.0], [0.01, 0.01]])
def test_npx_control_flow_eager_equals_hybridized(start):
    x = np.array(start)
    for e, h in zip(npx_program(x), kiln.hybridize(npx_program)(x)):
        assert e.shape == h.shape
        onp.testing.assert_allclose(to_np(h), to_np(e), rtol=1e-6)


# ---- what cannot merge falls back, naming the line ---------------------------------------
def test_branches_with_different_shapes_fall_back_with_the_line():
    def f(x):
        if x.sum() > 0:
            y = x
        else:
            y = x.reshape((1, -1))
        return y
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = kiln.hybridize(f)(np.array([1.0, 2.0]))
    assert out.shape == (2,)
    msgs = [str(w.message) for w in caught if w.category is HybridizeFallbackWarning]
    fallback = [w for w in caught if w.category is HybridizeFallbackWarning][0]
    assert msgs and "variable 'y'" in msgs[0] and "test_control_flow.py" in fallback.filename
    import linecache
    assert linecache.getline(fallback.filename, fallback.lineno).strip() == "if x.sum() > 0:"


def test_converted_code_keeps_closures_and_super():
    offset = np.array([1.0, 1.0])

    class Base(nn.HybridBlock):
        def forward(self, x):
            return x * 2

    class Child(Base):
        def forward(self, x):
            y = super().forward(x)
            if y.sum() > 0:
                y = y + offset
            else:
                y = super().forward(y)          # zero-argument super() inside a branch
            return y
    net = Child()
    net.hybridize(strict=True)
    onp.testing.assert_allclose(to_np(net(np.array([1.0, 2.0]))), [3.0, 5.0])
    onp.testing.assert_allclose(to_np(net(np.array([-1.0, -2.0]))), [-4.0, -8.0])


def test_random_op_in_a_differentiated_branch_falls_back():
    def f(x):
        if x.sum() > 0:
            x = npx.dropout(x, p=0.5)
        return x
    h = kiln.hybridize(f)
    x = np.ones((8,))
    x.attach_grad()
    with pytest.warns(HybridizeFallbackWarning, match="random op") as rec:
        with autograd.record():
            y = h(x)
            loss = y.sum()
        loss.backward()
    import linecache
    assert linecache.getline(rec[0].filename, rec[0].lineno).strip() == "if x.sum() > 0:"
    # eager semantics: the gradient is the dropout mask actually used
    onp.testing.assert_allclose(to_np(x.grad), to_np(y))
    with autograd.predict_mode():                      # inference compiles (no gradient)
        onp.testing.assert_allclose(to_np(h(x)), onp.ones(8))
