"""New parameter values computed straight into the parameter (backend/c/param_writes.py)."""
import numpy as onp
import pytest

from kiln import np, gluon, init
from kiln.backend.c import build
from kiln.backend.c.program import CProgram
from kiln.fit import make_step
from kiln.gluon import nn
from kiln._core.ir import Graph, Node

pytestmark = pytest.mark.skipif(not build.available(), reason="no C compiler")
F32 = onp.dtype("float32")


def node(op, *inputs, **attrs):
    return Node(op, inputs, attrs, inputs[0].shape, F32)


def program(outputs, state_outputs, w, g):
    graph = Graph([g], [w], outputs)
    graph.state_outputs = state_outputs
    return CProgram(graph)


def leaves(shape=(6, 5)):
    return (Node("param", (), {}, shape, F32, name="w"),
            Node("input", (), {}, shape, F32, name="g"))


def values(shape=(6, 5)):
    rng = onp.random.default_rng(0)
    return (rng.standard_normal(shape).astype(F32), rng.standard_normal(shape).astype(F32))


def test_an_update_nothing_else_needs_is_written_in_place():
    w, g = leaves()
    loss = node("exp", g)
    new_w = node("subtract", w, node("multiply", g, g))
    prog = program([loss, new_w], {1: 0}, w, g)
    assert prog._written == {1}
    wv, gv = values()
    before = wv.copy()
    out = prog([gv], [wv])
    assert out[1] is None
    onp.testing.assert_allclose(out[0], onp.exp(gv), rtol=1e-6)
    onp.testing.assert_allclose(wv, before - gv * gv, rtol=1e-6)


def test_a_new_value_read_later_is_written_in_place_and_read_from_there():
    """SGD with momentum: the new momentum goes into its state and the weight update
    reads it from there (no copy of the state back after the run)."""
    w, g = leaves()
    m = Node("param", (), {}, w.shape, F32, name="m")
    new_m = node("subtract", node("multiply", m, node("exp", g)), g)
    new_w = node("add", w, new_m)
    graph = Graph([g], [w, m], [new_w, new_m])
    graph.state_outputs = {0: 0, 1: 1}
    prog = CProgram(graph)
    assert prog._written == {0, 1}
    wv, gv = values()
    mv = onp.random.default_rng(1).standard_normal(wv.shape).astype(F32)
    want_m = mv * onp.exp(gv) - gv
    want_w = wv + want_m
    assert prog([gv], [wv, mv]) == [None, None]
    onp.testing.assert_allclose(mv, want_m, rtol=1e-6)
    onp.testing.assert_allclose(wv, want_w, rtol=1e-6)


def test_a_later_reader_of_the_old_value_keeps_the_copy():
    w, g = leaves()
    new_w = node("subtract", w, g)
    reads_w = Node("sum", (node("multiply", node("exp", g), w),), {"axis": None}, (), F32)
    # outputs in this order put the update first, the other reader of w after it
    prog = program([new_w, reads_w], {0: 0}, w, g)
    assert prog._written == set()
    wv, gv = values()
    before = wv.copy()
    out = prog([gv], [wv])
    onp.testing.assert_allclose(out[1], (onp.exp(gv) * before).sum(), rtol=1e-5)
    onp.testing.assert_allclose(out[0], before - gv, rtol=1e-6)
    onp.testing.assert_array_equal(wv, before)


def test_returning_the_parameter_blocks_the_write():
    w, g = leaves()
    new_w = node("subtract", w, g)
    prog = program([new_w, w], {0: 0}, w, g)
    assert prog._written == set()
    wv, gv = values()
    before = wv.copy()
    out = prog([gv], [wv])
    onp.testing.assert_array_equal(out[1], before)
    onp.testing.assert_allclose(out[0], before - gv, rtol=1e-6)


def test_a_converted_parameter_returns_its_new_value():
    w, g = leaves()
    new_w = node("subtract", w, node("multiply", g, g))
    prog = program([new_w], {0: 0}, w, g)
    assert prog._written == {0}
    wv, gv = values()
    strided = onp.zeros((6, 10), F32)
    strided[:, ::2] = wv
    view = strided[:, ::2]             # not contiguous: bound through a copy
    out = prog([gv], [view])
    onp.testing.assert_allclose(out[0], wv - gv * gv, rtol=1e-6)
    onp.testing.assert_array_equal(view, wv)   # the program wrote the copy, not the view


def test_a_read_only_parameter_is_never_written():
    w, g = leaves()
    prog = program([node("subtract", w, g)], {0: 0}, w, g)
    assert prog._written == {0}
    wv, gv = values()
    frozen = onp.frombuffer(wv.tobytes(), F32).reshape(wv.shape)   # read-only memory
    for _ in range(2):        # the fast path declines, the Python path copies
        out = prog([gv], [frozen])
        onp.testing.assert_allclose(out[0], wv - gv, rtol=1e-6)
        onp.testing.assert_array_equal(frozen, wv)


@pytest.mark.parametrize("static_shape", [True, False])
def test_compiled_sgd_step_updates_the_parameter_arrays_in_place(static_shape):
    """Of one batch size (CProgram) and of a run-time batch (SizedCProgram, make_step's
    default) alike."""
    from kiln.backend.c.sized_program import SizedCProgram
    net = nn.HybridSequential()
    net.add(nn.Dense(16, activation="relu"), nn.Dense(4))
    net.initialize(init.Xavier())
    x = np.random.normal(size=(8, 12))
    y = np.array(onp.arange(8) % 4, dtype="float32")
    net(x)
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.1})
    step = make_step(net, gluon.loss.SoftmaxCrossEntropyLoss(), trainer, backend="c",
                     static_shape=static_shape)
    arrays = [p.data()._data for p in net.collect_params().values()]
    before = [a.copy() for a in arrays]
    step(x, y)
    prog = next(iter(step._cached.entries.values())).program
    assert isinstance(prog, CProgram if static_shape else SizedCProgram)
    assert len(prog._written) == len(arrays)
    for p, a, b in zip(net.collect_params().values(), arrays, before):
        assert p.data()._data is a and not onp.array_equal(a, b)


# ---- X + alpha * (A @ B) as one accumulating gemm (backend/c/gemm_accumulate.py) ----------

def _update_graph(k, n, m, op="subtract", operand_is_w=False):
    w = Node("param", (), {}, (k, n), F32, name="w")
    a = Node("input", (), {}, (m, k), F32, name="a")
    b = Node("input", (), {}, (m, n), F32, name="b")
    lr = Node("input", (), {}, (), F32, name="lr")
    def t(x):
        return Node("transpose", (x,), {"axes": (1, 0)}, (x.shape[1], x.shape[0]), F32)
    if operand_is_w:      # w - lr * ((w w^T)^T w): the gemm would read what it writes
        grad = Node("matmul", (t(Node("matmul", (w, t(w)), {}, (k, k), F32)), w), {},
                    (k, n), F32)
    else:
        grad = Node("matmul", (t(a), b), {}, (k, n), F32)
    step = Node("multiply", (grad, lr), {}, (k, n), F32)
    new_w = Node(op, (w, step), {}, (k, n), F32)
    from kiln.graph.passes import run_pipeline
    graph = run_pipeline("generic", Graph([a, b, lr], [w], [new_w]))
    graph.state_outputs = {0: 0}
    return graph


def test_a_window_of_the_weight_read_after_its_update_reads_the_old_value():
    """w[1:3] is a window (a pointer into w, slice_views.py) that the update reads first
    (w - lr * sum(w[1:3])) and exp reads after the update's loop: the new value must not
    go into w in place while the window still has a reader."""
    w = Node("param", (), {}, (4, 3), F32, name="w")
    lr = Node("input", (), {}, (), F32, name="lr")
    rows = Node("slice", (w,), {"begin": (1, 0), "end": (3, 3), "step": (1, 1)}, (2, 3), F32)
    total = Node("sum", (rows,), {"axis": None, "keepdims": False}, (), F32)
    new_w = Node("subtract", (w, Node("multiply", (lr, total), {}, (), F32)), {}, (4, 3), F32)
    later = Node("exp", (rows,), {}, (2, 3), F32)
    graph = Graph([lr], [w], [new_w, later])
    graph.state_outputs = {0: 0}
    prog = CProgram(graph)
    run = prog.source[prog.source.index("int kiln_run"):]
    assert "= (char *)P[" in run and run.index("subtract") < run.index("exp"), run
    w0 = onp.arange(12, dtype=F32).reshape(4, 3) / 10
    w_arr = w0.copy()
    out = prog([onp.array(0.5, F32)], [w_arr])
    onp.testing.assert_allclose(out[1], onp.exp(w0[1:3]), rtol=1e-6)
    new = w_arr if out[0] is None else out[0]
    onp.testing.assert_allclose(new, w0 - 0.5 * w0[1:3].sum(), rtol=1e-6)


@pytest.mark.parametrize("k,n,m", [(3, 5, 4), (200, 300, 64)])   # kiln's loops, then BLAS
@pytest.mark.parametrize("op", ["subtract", "add"])
def test_weight_update_accumulates_in_one_gemm(k, n, m, op):
    prog = CProgram(_update_graph(k, n, m, op))
    gemm_calls = [ln for ln in prog.source.splitlines()   # the program's calls, not helpers'
                  if ln.strip().startswith("kiln_gemm_") and "P[" in ln]
    assert len(gemm_calls) == 1 and gemm_calls[0].rstrip(");").split(", ")[-2] == "1"
    rng = onp.random.default_rng(k)
    a, b = rng.standard_normal((m, k)).astype(F32), rng.standard_normal((m, n)).astype(F32)
    w = rng.standard_normal((k, n)).astype(F32)
    lr = onp.array(0.1, F32)
    want = getattr(onp, op)(w.astype(onp.float64), 0.1 * (a.T.astype(onp.float64) @ b))
    out = prog([a, b, lr], [w])
    assert out == [None]
    onp.testing.assert_allclose(w, want, rtol=1e-4, atol=1e-4)


def test_a_gemm_reading_the_weight_does_not_accumulate_into_it():
    prog = CProgram(_update_graph(6, 6, 4, operand_is_w=True))
    rng = onp.random.default_rng(1)
    a, b = rng.standard_normal((4, 6)).astype(F32), rng.standard_normal((4, 6)).astype(F32)
    w = rng.standard_normal((6, 6)).astype(F32)
    w64 = w.astype(onp.float64)
    want = w64 - 0.1 * ((w64 @ w64.T).T @ w64)
    out = prog([a, b, onp.array(0.1, F32)], [w])
    got = w if out[0] is None else out[0]
    onp.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def test_an_update_reading_a_window_of_the_weight_elsewhere_is_not_written_in_place():
    """w - w[:1] (the first row, a window into w, broadcast over the rows): written
    into w in place, the first row would change before the later rows read it."""
    w = Node("param", (), {}, (4, 3), F32, name="w")
    lr = Node("input", (), {}, (), F32, name="lr")
    first = Node("slice", (w,), {"begin": (0, 0), "end": (1, 3), "step": (1, 1)}, (1, 3), F32)
    new_w = Node("subtract", (w, first), {}, (4, 3), F32)     # the loop broadcasts the row
    graph = Graph([lr], [w], [new_w])
    graph.state_outputs = {0: 0}
    prog = CProgram(graph)
    w0 = onp.arange(12, dtype=F32).reshape(4, 3) / 10
    w_arr = w0.copy()
    out = prog([onp.array(0.5, F32)], [w_arr])
    got = w_arr if out[0] is None else out[0]
    onp.testing.assert_allclose(got, w0 - w0[:1], rtol=1e-6)


def test_a_gemm_reading_a_window_of_the_weight_does_not_accumulate_into_it():
    """w - lr * (a^T @ w[:4]): the gemm's B is a window of w (a pointer into it), so it
    may not accumulate into w while reading w's first rows."""
    w = Node("param", (), {}, (6, 5), F32, name="w")
    a = Node("input", (), {}, (4, 6), F32, name="a")
    lr = Node("input", (), {}, (), F32, name="lr")
    rows = Node("slice", (w,), {"begin": (0, 0), "end": (4, 5), "step": (1, 1)}, (4, 5), F32)
    at = Node("transpose", (a,), {"axes": (1, 0)}, (6, 4), F32)
    grad = Node("matmul", (at, rows), {}, (6, 5), F32)
    new_w = Node("subtract", (w, Node("multiply", (grad, lr), {}, (6, 5), F32)), {},
                 (6, 5), F32)
    from kiln.graph.passes import run_pipeline
    graph = run_pipeline("generic", Graph([a, lr], [w], [new_w]))
    graph.state_outputs = {0: 0}
    prog = CProgram(graph)
    rng = onp.random.default_rng(2)
    av, w0 = rng.standard_normal((4, 6)).astype(F32), rng.standard_normal((6, 5)).astype(F32)
    w_arr = w0.copy()
    out = prog([av, onp.array(0.1, F32)], [w_arr])
    got = w_arr if out[0] is None else out[0]
    want = w0.astype(onp.float64) - 0.1 * (av.T.astype(onp.float64) @ w0[:4])
    onp.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def test_a_float32_product_into_a_float64_state_keeps_its_loop():
    import kiln
    from kiln.graph.state import StateVar
    rng = onp.random.default_rng(0)
    w0 = rng.standard_normal((64, 48))
    state = StateVar(w0.copy(), "w")

    def step(a, b):
        w = state.data()
        w -= a @ b                  # float32 matmul, promoted into a float64 state
        return (a * 2).sum()
    a = rng.standard_normal((64, 32)).astype("float32")
    b = rng.standard_normal((32, 48)).astype("float32")
    kiln.hybridize(step, backend="c")(np.array(a), np.array(b))
    onp.testing.assert_allclose(state._data.asnumpy(), w0 - (a @ b).astype("float64"),
                                rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("k,n,m", [(3, 5, 4), (200, 300, 64)])   # kiln's loops, then oneDNN
def test_an_update_reading_the_weight_after_its_gradient_matmul(k, n, m):
    """w - lr * (a^T b + wd * w) (SGD with weight decay): the matmul heads a chain that
    reads the weight it is written into, so the matmul's result must not go there first
    (it did on oneDNN: NaN weights)."""
    w = Node("param", (), {}, (k, n), F32, name="w")
    a = Node("input", (), {}, (m, k), F32, name="a")
    b = Node("input", (), {}, (m, n), F32, name="b")
    grad = Node("matmul", (Node("transpose", (a,), {"axes": (1, 0)}, (k, m), F32), b), {},
                (k, n), F32)
    wd = Node("const", (), {}, (), F32, value=onp.array(0.5, F32))
    lr = Node("input", (), {}, (), F32, name="lr")
    new_w = node("subtract", w, node("multiply", node("add", grad, node("multiply", w, wd)),
                                     lr))
    from kiln.graph.passes import run_pipeline
    graph = run_pipeline("generic", Graph([a, b, lr], [w], [new_w]))
    graph.state_outputs = {0: 0}
    prog = CProgram(graph)
    rng = onp.random.default_rng(k)
    av, bv = rng.standard_normal((m, k)).astype(F32), rng.standard_normal((m, n)).astype(F32)
    wv = rng.standard_normal((k, n)).astype(F32)
    w64 = wv.astype(onp.float64)
    want = w64 - 0.1 * (av.T.astype(onp.float64) @ bv + 0.5 * w64)
    out = prog([av, bv, onp.array(0.1, F32)], [wv])
    got = wv if out[0] is None else out[0]
    onp.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
