"""The `scan` op (kiln/ops/scan.py) compiled on both backends against eager Python loops:
values and gradients of every operand, forward and reversed, with a state the body passes
through unchanged, a matmul whose product the forward keeps for backward, and gradients
arriving on every result."""
import numpy as onp
import pytest

import kiln
from kiln.backend.c import build as c_build
from kiln import np
from kiln import autograd
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


def input_weight_model(reverse):
    """Invariants whose gradients sum per-step rows: x_t^T d (a sequence row and a row the
    step computes), h^T d (the carried state's history) and a bias (the rows summed)."""
    def f(xs, h, w, u, b):
        def step(x_t, states):
            (h,) = states
            new = np.tanh(np.matmul(x_t, w) + np.matmul(h, u) + b)
            return new * 1.5, [new]
        ys, (last,) = time_loop.run(step, xs, [h], reverse=reverse)
        return ys, last
    return f


def projected_input_model(reverse):
    """As an LSTM layer: the sequence is the input's projection, so the rows the weight and
    bias gradients sum are the sequence's own gradient rows."""
    def f(xs, h, w, u, b):
        def step(x_t, states):
            (h,) = states
            new = np.tanh(x_t + np.matmul(h, u) + b)
            return new * 1.5, [new]
        ys, (last,) = time_loop.run(step, np.matmul(xs, w), [h], reverse=reverse)
        return ys, last
    return f


def grads_of(fn, values, loss):
    """fn's outputs and the gradient of loss(outputs) with respect to every value."""
    arrays = [np.array(v) for v in values]
    for a in arrays:
        a.attach_grad()
    with autograd.record():
        outs = fn(*arrays)
        total = loss(outs)
    total.backward()
    outs = outs if isinstance(outs, tuple) else (outs,)
    return [o.asnumpy() for o in outs] + [a.grad.asnumpy() for a in arrays]


@pytest.mark.parametrize("model", [input_weight_model, projected_input_model])
@pytest.mark.parametrize("reverse", [False, True])
def test_invariant_gradients_summed_after_the_loop(model, reverse, monkeypatch):
    """The C backend sums these invariants' gradients once over stacked rows (scan_hoist):
    the plan must take them, and the values must equal the eager loop's."""
    if not c_build.available():
        pytest.skip("no working C compiler")
    from kiln.backend.c import scan_hoist
    plans = []
    real_plan = scan_hoist.plan

    def spy(*args):
        got = real_plan(*args)
        plans.append(got[0])
        return got
    monkeypatch.setattr(scan_hoist, "plan", spy)
    rng = onp.random.default_rng(1)
    values = [rng.normal(size=s).astype("float32")
              for s in ((5, 2, 4), (2, 3), (4, 3), (3, 3), (3,))]

    def loss(outs):
        ys, last = outs
        return (ys * ys).sum() + (last * 0.3).sum()
    eager = grads_of(model(reverse), values, loss)
    fn = kiln.hybridize(model(reverse), backend="c")
    compiled = grads_of(fn, values, loss)
    assert_compiled(fn._cached)
    forms = sorted(h.form for plan in plans for h in plan)
    assert forms.count("matmul") == (2 if model is input_weight_model else 1), forms
    assert "sum" in forms
    kinds = {f.kind for plan in plans for h in plan if h.form == "matmul" for f in h.factors}
    by_time = "xs" if model is input_weight_model else "xsgrad"
    assert "history" in kinds
    # reversed, rows by time are copied to pair with the history's rows by step
    assert (by_time in kinds) != reverse and ("copy" in kinds) == (
        reverse or model is input_weight_model), kinds
    for a, b in zip(compiled, eager):
        onp.testing.assert_allclose(a, b, rtol=2e-5, atol=2e-6)


def _step_outputs_case(reverse, seed):
    """A projected-input loop whose loss reads only its step outputs: (f, its inputs, the
    loss of its outputs, the eager loop's gradients)."""
    rng = onp.random.default_rng(seed)
    values = [rng.normal(size=s).astype("float32")
              for s in ((6, 2, 3), (2, 3), (3, 3), (3, 3), (3,))]

    def f(xs, h, w, u, b):
        ys, _ = projected_input_model(reverse)(xs, h, w, u, b)
        return ys
    head = np.array(onp.linspace(-1, 1, 36, dtype="float32").reshape(6, 2, 3))

    def loss(ys):
        return (ys * head).sum()
    return f, values, loss, grads_of(f, values, loss)


@pytest.mark.parametrize("backend", ["c", "numpy"])
@pytest.mark.parametrize("reverse", [False, True])
def test_gradient_reaching_only_the_step_outputs_is_passed_as_a_window(backend, reverse):
    """When the loss reads only the step outputs, scan_grad gets that piece with g_window
    (graph/passes/scan_grad_window.py): the carried values and histories get zero incoming
    gradient, on both backends, and the gradients equal the eager loop's."""
    if backend == "c" and not c_build.available():
        pytest.skip("no working C compiler")
    f, values, loss, eager = _step_outputs_case(reverse, seed=2)
    fn = kiln.hybridize(f, backend=backend)
    compiled = grads_of(fn, values, loss)
    windows = [n.attrs.get("g_window") for e in fn._cached.entries.values()
               for n in e.grad[0].graph.nodes if n.op == "scan_grad"]
    assert windows and all(windows), "the incoming gradient was not passed as a window"
    for a, b in zip(compiled, eager):
        onp.testing.assert_allclose(a, b, rtol=2e-5, atol=2e-6)


def test_a_window_that_cuts_a_piece_of_the_layout_is_not_taken():
    from kiln._core.ir import Graph, Node
    from kiln.graph.passes.scan_grad_window import scan_grad_window
    rng = onp.random.default_rng(3)
    values = [np.array(rng.normal(size=s).astype("float32"))
              for s in ((4, 2, 3), (2, 3), (3, 3), (3, 3), (3,))]
    for v in values:
        v.attach_grad()
    fn = kiln.hybridize(lambda *a: projected_input_model(False)(*a)[0], backend="numpy")
    with autograd.record():
        loss = fn(*values).sum()
    loss.backward()
    (sg,) = [n for e in fn._cached.entries.values() for n in e.grad[0].graph.nodes
             if n.op == "scan_grad"]
    begin, end = sg.attrs["g_window"]
    total = sg.inputs[-2].shape[0]
    zeros = Node("const", (), {}, (total,), sg.dtype, value=onp.zeros(total, sg.dtype))
    attrs = {k: v for k, v in sg.attrs.items() if k != "g_window"}
    for b, e, taken in ((begin, end, True), (begin + 1, end + 1, False),
                        (begin, end - 1, False)):
        piece = Node("input", (), {}, (e - b,), sg.dtype)
        g = Node("slice_assign", (zeros, piece), {"begin": (b,), "end": (e,), "step": (1,)},
                 (total,), sg.dtype)
        node = Node("scan_grad", sg.inputs[:-1] + (g,), attrs, sg.shape, sg.dtype)
        (got,) = scan_grad_window(Graph([], [], [node])).outputs
        assert (got.attrs.get("g_window") == (b, e)) == taken
        assert (got.inputs[-1] is piece) == taken


def test_no_stack_past_the_memory_limit_and_the_same_values(monkeypatch):
    """A reversed loop pairs time-indexed rows by copying them into a stack; past
    MAX_STACK_BYTES the gradient is summed per step as before, with the same values."""
    if not c_build.available():
        pytest.skip("no working C compiler")
    from kiln.backend.c import scan_hoist
    monkeypatch.setattr(scan_hoist, "MAX_STACK_BYTES", 0)
    plans = []
    real_plan = scan_hoist.plan
    monkeypatch.setattr(scan_hoist, "plan", lambda *a: plans.append(real_plan(*a)) or plans[-1])
    rng = onp.random.default_rng(4)
    values = [rng.normal(size=s).astype("float32")
              for s in ((5, 2, 4), (2, 3), (4, 3), (3, 3), (3,))]

    def loss(outs):
        ys, last = outs
        return (ys * ys).sum() + last.sum()
    eager = grads_of(input_weight_model(True), values, loss)
    compiled = grads_of(kiln.hybridize(input_weight_model(True), backend="c"), values, loss)
    kinds = [f.kind for hoisted, _ in plans for h in hoisted for f in h.factors]
    assert plans and "copy" not in kinds, kinds
    for a, b in zip(compiled, eager):
        onp.testing.assert_allclose(a, b, rtol=2e-5, atol=2e-6)


def test_a_step_output_outside_the_window_adds_no_zeros(monkeypatch):
    """With g_window, the step outputs outside it (the values the forward saves for the
    backward) get no gradient: the step's gradient graph does not read their incoming
    gradient (no `0 + x` over a zero row each step), and the values equal the eager loop's."""
    if not c_build.available():
        pytest.skip("no working C compiler")
    from kiln.backend.c import scan_hoist
    vjps = []
    real_plan = scan_hoist.plan

    def spy(vjp, *args):
        vjps.append(vjp)
        return real_plan(vjp, *args)
    monkeypatch.setattr(scan_hoist, "plan", spy)
    f, values, loss, eager = _step_outputs_case(False, seed=3)
    fn = kiln.hybridize(f, backend="c")
    compiled = grads_of(fn, values, loss)
    assert vjps
    for vjp in vjps:
        grads = [n for n in vjp.inputs if n.name.startswith("grad_out")]
        read = {id(i) for n in vjp.nodes for i in n.inputs} | {id(o) for o in vjp.outputs}
        # the carried value's and the step output's gradients are read, the saved ones not
        assert len(grads) > 2 and [id(g) in read for g in grads] == [True, True] + [
            False] * (len(grads) - 2), [g.name for g in grads if id(g) in read]
    for a, b in zip(compiled, eager):
        onp.testing.assert_allclose(a, b, rtol=2e-5, atol=2e-6)


@pytest.mark.parametrize("backend", ["c", "numpy"])
def test_an_input_bias_gradient_reads_the_recurrent_bias_gradient(backend):
    """An LSTM layer's input-side bias gradient is the same column sum of the gate gradients
    as its recurrent bias gradient, which scan_grad returns: the compiled backward reads it
    (graph/passes/scan_grad_shared_sums.py) instead of summing the rows again, and every
    gradient equals eager's."""
    if backend == "c" and not c_build.available():
        pytest.skip("no working C compiler")
    from kiln.gluon import rnn
    from kiln.graph.passes.scan_grad_shared_sums import _rows_of_piece
    x = onp.random.default_rng(4).normal(size=(5, 3, 4)).astype("float32")

    def grads(hybrid):
        np.random.seed(0)
        net = rnn.LSTM(6, num_layers=2, input_size=4)
        net.initialize()
        if hybrid:
            net.hybridize(backend=backend)
        xa = np.array(x)
        xa.attach_grad()
        with autograd.record():
            loss = (net(xa) * np.array(onp.linspace(-1, 1, 90, dtype="float32")
                                       .reshape(5, 3, 6))).sum()
        loss.backward()
        params = net.collect_params()
        return net, [xa.grad.asnumpy()] + [params[k].grad().asnumpy() for k in sorted(params)]
    _, eager = grads(False)
    net, compiled = grads(True)
    graphs = [e.grad[0].graph for e in net._kiln_cached.entries.values()]
    assert any(n.op == "scan_grad" for g in graphs for n in g.nodes)
    assert not [n for g in graphs for n in g.nodes if _rows_of_piece(n) is not None]
    for a, b in zip(compiled, eager):
        onp.testing.assert_allclose(a, b, rtol=2e-5, atol=2e-6)
