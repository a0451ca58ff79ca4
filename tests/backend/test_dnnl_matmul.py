"""Dense layers and matmuls of compiled programs on oneDNN (backend/c/dnnl_dense.py,
backend/dnnl/matmul.c).

The size thresholds are lowered for these tests, so small shapes (fast to compile and
check) take the oneDNN path; each test checks that they did, then compares with NumPy in
float64, with kiln's own kernels (the library turned off) and, where installed, PyTorch."""
import contextlib
import shutil
import warnings

import numpy as onp
import pytest
from hypothesis import given, settings, strategies as st

import kiln
from kiln import np
from kiln import autograd
from kiln.backend import dnnl
from kiln.backend.c import build, dnnl_dense
from kiln.gluon import nn
from conftest import run_standalone_c

pytestmark = [pytest.mark.skipif(not build.available(), reason="no C compiler"),
              pytest.mark.skipif(not dnnl.available(), reason="oneDNN not installed")]


@pytest.fixture(autouse=True)
def small_shapes_on_dnnl(monkeypatch):
    monkeypatch.setattr(dnnl_dense, "DNNL_MIN_ROWS", 2)
    monkeypatch.setattr(dnnl_dense, "DNNL_MIN_FLOPS", 1)


def sources(fn):
    from kiln.hybrid.cached import cached_function_of
    cached = fn._cached if hasattr(fn, "_cached") else cached_function_of(fn)
    return [getattr(e.program, "source", "") for e in cached.entries.values()]


def quiet(fn, *args):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(*args)


def dense_net(units, activation, use_bias):
    net = nn.HybridSequential()
    for n in units:
        net.add(nn.Dense(n, activation=activation, use_bias=use_bias))
    net.initialize()
    return net


def reference(net, x, activation):
    h = x.astype("float64")
    for layer in net:
        h = h @ layer.weight.data().asnumpy().T.astype("float64")
        if layer.bias is not None:
            h = h + layer.bias.data().asnumpy()
        h = {None: h, "relu": onp.maximum(h, 0), "tanh": onp.tanh(h)}[activation]
    return h


@settings(max_examples=12, deadline=None)
@given(rows=st.sampled_from([2, 7, 16, 33, 260]), k=st.integers(1, 70),
       n=st.sampled_from([1, 5, 17, 64, 130]), activation=st.sampled_from([None, "relu", "tanh"]),
       use_bias=st.booleans(), seed=st.integers(0, 2**16))
def test_dense_layers_match_numpy_and_own_kernels(rows, k, n, activation, use_bias, seed):
    rng = onp.random.default_rng(seed)
    x = rng.standard_normal((rows, k)).astype("float32")
    net = dense_net([n, 3], activation, use_bias)
    net(np.array(x))
    net.hybridize(backend="c")
    got = quiet(net, np.array(x)).asnumpy()
    assert any("kiln_dnnl_run(" in s for s in sources(net)), "oneDNN was not called"
    onp.testing.assert_allclose(got, reference(net, x, activation), rtol=1e-4, atol=1e-4)
    with dnnl.disabled():
        own = dense_net([n, 3], activation, use_bias)
        own(np.array(x))
        for a, b in zip(own.collect_params().values(), net.collect_params().values()):
            a.set_data(b.data())
        own.hybridize(backend="c")
        want = quiet(own, np.array(x)).asnumpy()
        assert not any("kiln_dnnl_run(" in s for s in sources(own))
    onp.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("form", ["x.w", "x.wT", "xT.w", "xT.wT", "strided"])
def test_transposed_and_strided_operands(form):
    rng = onp.random.default_rng(3)
    m, k, n = 12, 37, 19
    xv = rng.standard_normal((k, m) if form.startswith("xT") else (m, k)).astype("float32")
    wv = rng.standard_normal((n, k) if form.endswith("wT") else (k, n)).astype("float32")
    bv = rng.standard_normal(n).astype("float32")

    def f(x, w, b):
        a = x.T if form.startswith("xT") else x
        if form == "strided":
            a = x[:, ::2]
            w = w[::2]
        return np.maximum(np.dot(a, w.T if form.endswith("wT") else w) + b, 0)

    eager = f(np.array(xv), np.array(wv), np.array(bv)).asnumpy()
    h = kiln.hybridize(f, backend="c")
    got = quiet(h, np.array(xv), np.array(wv), np.array(bv)).asnumpy()
    assert any("kiln_dnnl_run(" in s for s in sources(h))
    a = xv.T if form.startswith("xT") else xv
    w = wv.T if form.endswith("wT") else wv
    if form == "strided":
        a, w = xv[:, ::2], wv[::2]
    want = onp.maximum(a.astype("float64") @ w + bv, 0)
    onp.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
    onp.testing.assert_allclose(got, eager, rtol=1e-4, atol=1e-4)


def test_bias_first_and_a_chain_after_the_relu():
    rng = onp.random.default_rng(4)
    xv, wv = rng.standard_normal((9, 20)).astype("float32"), \
        rng.standard_normal((20, 24)).astype("float32")
    bv = rng.standard_normal((1, 24)).astype("float32")

    def f(x, w, b):
        return np.maximum(b + np.dot(x, w), 0) * 2 - 1

    h = kiln.hybridize(f, backend="c")
    got = quiet(h, np.array(xv), np.array(wv), np.array(bv)).asnumpy()
    assert any("kiln_dnnl_run(" in s for s in sources(h))
    want = onp.maximum(bv + xv.astype("float64") @ wv, 0) * 2 - 1
    onp.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def test_gradients_through_compiled_dense_layers_match_numpy():
    rng = onp.random.default_rng(5)
    x = np.array(rng.standard_normal((24, 31)).astype("float32"))
    net = dense_net([40, 6], "relu", True)
    net(x)
    grads = []
    for hybrid in (False, True):
        if hybrid:
            net.hybridize(backend="c")
        with autograd.record():
            loss = quiet(net, x).sum()
        loss.backward()
        grads.append([p.grad().asnumpy().copy() for p in net.collect_params().values()])
    assert any("kiln_dnnl_run(" in s for s in sources(net))
    for e, c in zip(*grads):
        onp.testing.assert_allclose(c, e, rtol=1e-4, atol=1e-4)


def test_matches_pytorch():
    torch = pytest.importorskip("torch")
    rng = onp.random.default_rng(6)
    x = rng.standard_normal((40, 50)).astype("float32")
    net = dense_net([70], "relu", True)
    net(np.array(x))
    net.hybridize(backend="c")
    got = quiet(net, np.array(x)).asnumpy()
    w, b = net[0].weight.data().asnumpy(), net[0].bias.data().asnumpy()
    want = torch.relu(torch.nn.functional.linear(torch.from_numpy(x), torch.from_numpy(w),
                                                 torch.from_numpy(b))).numpy()
    onp.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_the_packed_weight_is_kept_until_kiln_sees_a_write():
    from kiln.hybrid.cached import cached_function_of
    rng = onp.random.default_rng(7)
    x = np.array(rng.standard_normal((16, 32)).astype("float32"))
    net = dense_net([48], None, True)
    net(x)
    net.hybridize(backend="c")
    quiet(net, x)
    entry, = cached_function_of(net).entries.values()
    program = entry.program
    assert "kiln_weight_stamp()" in program.source
    params = [p.data()._data.copy() for p in entry.params]
    weight = next(p for p in params if p.ndim == 2)
    first = program([x._data], params)[0].copy()
    weight *= 3             # unseen by kiln's write counter: the packed copy stays
    onp.testing.assert_allclose(program([x._data], params)[0], first, rtol=1e-6)
    kiln.writes.counter().value += 1      # what every write kiln makes does
    expect = x.asnumpy() @ weight.T + next(p for p in params if p.ndim == 1)
    onp.testing.assert_allclose(program([x._data], params)[0], expect, rtol=1e-4, atol=1e-4)


def test_grid_blocks_cover_the_output():
    for m, n in [(8, 256), (64, 130), (300, 7), (1024, 256), (1, 1)]:
        for threads in (1, 2, 3):
            rows, cols = dnnl_dense.grid(m, n, threads)
            assert 1 <= rows and 1 <= cols
            cells = {(i, j) for m0 in range(0, m, rows) for n0 in range(0, n, cols)
                     for i in range(m0, min(m, m0 + rows)) for j in range(n0, min(n, n0 + cols))}
            assert len(cells) == m * n


@settings(max_examples=10, deadline=None)
@given(batch=st.sampled_from([(1,), (3,), (2, 3)]), broadcast=st.sampled_from(["", "a", "b"]),
       m=st.integers(1, 9), k=st.integers(1, 40), n=st.integers(1, 20),
       seed=st.integers(0, 2**16))
def test_batched_matmul_matches_numpy(batch, broadcast, m, k, n, seed):
    rng = onp.random.default_rng(seed)
    av = rng.standard_normal(((1,) if broadcast == "a" else batch) + (m, k)).astype("float32")
    bv = rng.standard_normal(((1,) if broadcast == "b" else batch) + (k, n)).astype("float32")
    h = kiln.hybridize(lambda a, b: np.matmul(a, b) * 2, backend="c")
    got = quiet(h, np.array(av), np.array(bv)).asnumpy()
    assert any("kiln_dnnl_run(" in s for s in sources(h))
    onp.testing.assert_allclose(got, 2 * onp.matmul(av.astype("float64"), bv), rtol=1e-4,
                                atol=1e-4)


def test_batch_dot_with_transposes_and_its_gradients():
    from kiln import npx
    rng = onp.random.default_rng(8)
    av = rng.standard_normal((4, 6, 10)).astype("float32")
    bv = rng.standard_normal((4, 7, 10)).astype("float32")

    def f(a, b):
        return npx.batch_dot(a, b, transpose_b=True)

    h = kiln.hybridize(f, backend="c")
    results = []
    for fn in (f, h):
        a, b = np.array(av), np.array(bv)
        a.attach_grad()
        b.attach_grad()
        with autograd.record():
            y = quiet(fn, a, b)
            loss = (y * y).sum()
        loss.backward()
        results.append((y.asnumpy(), a.grad.asnumpy(), b.grad.asnumpy()))
    assert any("kiln_dnnl_run(" in s for s in sources(h))
    want = onp.matmul(av.astype("float64"), bv.transpose(0, 2, 1))
    onp.testing.assert_allclose(results[1][0], want, rtol=1e-4, atol=1e-4)
    for e, c in zip(*results):
        onp.testing.assert_allclose(c, e, rtol=1e-4, atol=1e-4)


def test_eager_float32_matmul_on_dnnl_matches_numpy_and_the_runtime():
    from kiln.backend.c import eager_gemm
    rng = onp.random.default_rng(9)
    a = rng.standard_normal((40, 90)).astype("float32")
    b = rng.standard_normal((90, 70)).astype("float32")
    # rows (or columns) apart in a larger array: a step of a batch-major sequence
    rows_apart = rng.standard_normal((40, 3, 90)).astype("float32")[:, 1]
    columns_apart = rng.standard_normal((70, 2, 90)).astype("float32")[:, 0].T
    for x, y in ((a, b), (onp.asfortranarray(a), b), (a, onp.asfortranarray(b)),
                 (onp.asfortranarray(a), onp.asfortranarray(b)), (rows_apart, b),
                 (rows_apart, columns_apart), (rows_apart.T.T, onp.asfortranarray(b))):
        got = eager_gemm._on_dnnl(x, y, eager_gemm._operand(x), eager_gemm._operand(y))
        assert got is not None
        want = x.astype("float64") @ y
        onp.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
        onp.testing.assert_allclose(np.matmul(np.array(x), np.array(y)).asnumpy(), want,
                                    rtol=1e-4, atol=1e-4)
        with dnnl.disabled():
            onp.testing.assert_allclose(eager_gemm.matmul(x, y), want, rtol=1e-4, atol=1e-4)


@pytest.mark.skipif(shutil.which("make") is None, reason="needs make")
def test_standalone_c_export_keeps_its_matmuls_off_the_library(tmp_path):
    rng = onp.random.default_rng(10)
    x = np.array(rng.standard_normal((16, 40)).astype("float32"))
    net = dense_net([30, 5], "relu", True)
    net.hybridize()
    quiet(net, x)
    assert any("kiln_dnnl_run(" in s for s in sources(net))
    source, out = run_standalone_c(net, x, tmp_path, (16, 5))
    assert "kiln_dnnl_run(" not in source
    onp.testing.assert_allclose(out, reference(net, x.asnumpy(), "relu"), rtol=1e-4,
                                atol=1e-4)


@pytest.mark.parametrize("rows, units", [(300, 40), (40, 130)])
def test_layers_split_into_blocks_see_weight_writes(rows, units):
    from kiln.backend.c.runtime import thread_count
    if thread_count() < 2:
        pytest.skip("one thread: layers are not split")
    rng = onp.random.default_rng(11)
    x = rng.standard_normal((rows, 24)).astype("float32")
    net = dense_net([units], "relu", True)
    net(np.array(x))
    net.hybridize(backend="c")
    quiet(net, np.array(x))
    assert any("kiln_dnnl_blocks" in s for s in sources(net)), "the layer was not split"
    w = net[0].weight
    for write in (lambda: None, lambda: w.set_data(w.data() * 0.5),
                  lambda: w.data().__setitem__(slice(None), w.data() + 0.25)):
        write()
        got = quiet(net, np.array(x)).asnumpy()
        onp.testing.assert_allclose(got, reference(net, x, "relu"), rtol=1e-4, atol=1e-4)


def test_eager_gemm_reads_strided_rows_and_refuses_what_it_cannot():
    from kiln.backend.c import eager_gemm
    base = onp.zeros((5, 3, 7), "float32")
    assert eager_gemm._operand(base[:, 1]) == (0, 21)          # rows 21 floats apart
    assert eager_gemm._operand(base[:, 1].T) == (1, 21)
    assert eager_gemm._operand(onp.zeros((4, 6), "float32")) == (0, 6)
    assert eager_gemm._operand(onp.zeros((4, 6), "float32", order="F")) == (1, 4)
    assert eager_gemm._operand(base[:, :, ::2][:, 0]) is None   # neither rows nor columns
    assert eager_gemm._operand(base[::-1, 0]) is None          # rows in reverse
    rng = onp.random.default_rng(11)
    # (steps, batch, vocab), batch-major
    seq = rng.standard_normal((256, 32, 28)).astype("float32").transpose(1, 0, 2)
    w = rng.standard_normal((28, 32)).astype("float32")
    for x in (seq[3], seq[3].T.copy().T):
        for on_dnnl in (True, False):
            with (contextlib.nullcontext() if on_dnnl else dnnl.disabled()):
                got = eager_gemm.matmul(x, w)
            assert got is not None
            onp.testing.assert_allclose(got, x.astype("float64") @ w, rtol=1e-4, atol=1e-4)


def test_a_recurrent_weight_is_packed_once_per_loop_run():
    """A scan body's matmul on the layer's weight (a scan invariant) keeps oneDNN's packed
    copy under the loop run's stamp (control.Sub.begin_loop): made at the first step of a
    run, never reused by a later run, so a weight changed between calls, even unseen by
    kiln's write counter, is read again. Gradients through the packed copies match eager."""
    from kiln.gluon import rnn
    from kiln.hybrid.cached import cached_function_of
    rng = onp.random.default_rng(3)
    xv = rng.standard_normal((5, 4, 6)).astype("float32")
    net = rnn.LSTM(8, num_layers=2, input_size=6)
    net.initialize()

    def forward_backward():
        x = np.array(xv)
        x.attach_grad()
        with autograd.record():
            y = net(x)
            loss = (y * y).sum()
        loss.backward()
        return [y.asnumpy(), x.grad.asnumpy()] + [
            p.grad().asnumpy() for p in net.collect_params().values()]

    eager = forward_backward()
    net.hybridize(backend="c")
    compiled = quiet(forward_backward)
    for got, want in zip(compiled, eager):
        onp.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
    assert all("kiln_loop_runs" in s for s in sources(net))
    quiet(net, np.array(xv))
    entry = next(e for e in cached_function_of(net).entries.values()
                 if "kiln_loop_runs" in getattr(e.program, "source", "") and
                 len(e.program.graph.outputs) == 1)
    program = entry.program
    params = [p.data()._data.copy() for p in entry.params]
    first = program([xv], params)[0].copy()
    h2h = next(k for k, p in enumerate(entry.params) if p.name.endswith("l0_h2h_weight"))
    params[h2h] *= 3        # unseen by kiln's write counter: only the loop's copy is remade
    second = program([xv], params)[0]
    assert not onp.allclose(second, first, rtol=1e-2, atol=0)
    for p, value in zip(entry.params, params):
        p.set_data(np.array(value))
    onp.testing.assert_allclose(second, net(np.array(xv)).asnumpy(), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("rows", [9, 300])
def test_an_added_tensor_of_the_output_shape_runs_in_the_primitive(rows):
    """bias, ReLU and then a tensor of the output's shape (a residual, an LSTM step's input
    projection) added by the primitive, in one op and in row blocks: no loop after it. A
    transposed tensor is added as the transpose's result."""
    rng = onp.random.default_rng(6)
    xv, wv = rng.standard_normal((rows, 20)).astype("float32"), \
        rng.standard_normal((20, 24)).astype("float32")
    bv, rv = rng.standard_normal(24).astype("float32"), \
        rng.standard_normal((rows, 24)).astype("float32")
    x64, w64 = xv.astype("float64"), wv.astype("float64")
    forms = [(lambda x, w, b, r: np.maximum(np.dot(x, w) + b, 0) + r,
              onp.maximum(x64 @ w64 + bv, 0) + rv),
             (lambda x, w, b, r: r + np.dot(x, w), rv + x64 @ w64),
             (lambda x, w, b, r: np.dot(x, w) + b + r, x64 @ w64 + bv + rv),
             (lambda x, w, b, r: np.dot(x, w) + r.T, x64 @ w64 + rv)]
    for f, want in forms:
        h = kiln.hybridize(f, backend="c")
        r = rv.T.copy() if f is forms[-1][0] else rv
        got = quiet(h, np.array(xv), np.array(wv), np.array(bv), np.array(r)).asnumpy()
        (source,) = sources(h)
        assert "kiln_dnnl_run(" in source
        onp.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
        if f is not forms[-1][0]:
            assert "/* fused:" not in source and "/* op:" not in source
