"""Which elementwise loops of generated C run as parallel jobs of the runtime's pool
(codegen._fused with vector_math.loop_work): a loop's work counts each element's calls of
vector math (exp, tanh, sigmoid) as several elements, so an LSTM step's gate loop (32x256
elements, three transcendentals each) is split over the threads while a loop of as many
multiplies stays on the calling thread; both equal eager."""
import warnings

import numpy as onp
import pytest

import kiln
from kiln import np, npx
from conftest import compiled_c
from kiln.backend.c import build, vector_math

pytestmark = pytest.mark.skipif(not build.available(), reason="no C compiler")


def _gates(i, f, g, c):
    return npx.sigmoid(f) * c + npx.sigmoid(i) * np.tanh(g)


def _products(i, f, g, c):
    return f * c + i * g


@pytest.mark.parametrize("fn, parallel", [(_gates, True), (_products, False)])
def test_loop_of_vector_math_runs_on_the_pool(monkeypatch, fn, parallel):
    monkeypatch.setenv("KILN_NUM_THREADS", "2")
    rng = onp.random.default_rng(0)
    xs = [rng.standard_normal((32, 256)).astype("float32") for _ in range(4)]
    got, source = compiled_c(fn, *xs)
    assert ("kiln_parallel_ptr(kiln_fused_blocks" in source) is parallel
    want = fn(*[np.array(x) for x in xs]).asnumpy()
    onp.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


def test_one_thread_keeps_every_loop_serial(monkeypatch):
    monkeypatch.setenv("KILN_NUM_THREADS", "1")
    rng = onp.random.default_rng(1)
    xs = [rng.standard_normal((32, 256)).astype("float32") for _ in range(4)]
    got, source = compiled_c(_gates, *xs)
    assert "kiln_fused_blocks" not in source
    onp.testing.assert_allclose(got, _gates(*[np.array(x) for x in xs]).asnumpy(),
                                rtol=1e-6, atol=1e-6)


def test_loop_work_counts_calls_of_vector_math():
    body = ["float t0 = kiln_sigmoidf(a[i0]);", "float t1 = kiln_vm_tanhf(b[i0]);",
            "float t2 = kiln_max_float(t0, t1) * c[i0];"]
    assert vector_math.loop_work(100, body) == 100 * (1 + 2 * vector_math.CALL_COST)
    assert vector_math.loop_work(100, ["o[i0] = a[i0] * b[i0];"]) == 100


def test_lstm_bias_gradient_column_sums_run_on_the_pool(monkeypatch):
    """The backward loop's hoisted bias gradient (scan_hoist: the gate gradients' rows of
    every step summed once) is split by blocks of columns; gradients equal eager."""
    from kiln import autograd
    from kiln.gluon import rnn
    monkeypatch.setenv("KILN_NUM_THREADS", "2")
    x = onp.random.default_rng(2).standard_normal((70, 8, 16)).astype("float32")
    grads = []
    for hybrid in (False, True):
        np.random.seed(0)
        net = rnn.LSTM(128, input_size=16)
        net.initialize(kiln.init.Uniform(0.1))
        if hybrid:
            net.hybridize(backend="c")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with autograd.record():
                loss = net(np.array(x)).sum()
            loss.backward()
        grads.append({k: p.grad().asnumpy() for k, p in net.collect_params().items()})
    (entry,) = net._kiln_cached.entries.values()
    assert "kiln_parallel_ptr(kiln_column_sums_blocks" in entry.grad[0].source
    for k, want in grads[0].items():
        onp.testing.assert_allclose(grads[1][k], want, rtol=1e-4, atol=1e-4, err_msg=k)


@pytest.mark.parametrize("rows, parallel", [(300, True), (20, False)])
def test_large_slice_copies_on_the_pool(monkeypatch, rows, parallel):
    """A slice of many elements (a layer's gradient rows out of a scan's result) is copied
    by blocks on the runtime's threads; a small one stays on the calling thread."""
    monkeypatch.setenv("KILN_NUM_THREADS", "2")
    x = onp.random.default_rng(3).standard_normal((rows + 2, 1024)).astype("float32")
    got, source = compiled_c(lambda v: v[1:-1] * 1.0 + v[2:, ::2].sum(), x)
    assert ("kiln_parallel_ptr(kiln_copy_blocks" in source) is parallel
    want = (np.array(x)[1:-1] * 1.0 + np.array(x)[2:, ::2].sum()).asnumpy()
    onp.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-3)
