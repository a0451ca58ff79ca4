"""Fused attention: the pass (kiln/graph/passes/attention.py) on the forms users write
(npx.softmax, softmax with lengths, npx.masked_softmax, d2l's DotProductAttention with
sequence_mask), npx.attention, and compiled (C, csrc/attention.h) equal to eager, forward
and backward, with lengths 0 and 1, NaN and inf, with and without oneDNN and libmvec."""
import math

import numpy as onp
import pytest

import kiln
from kiln import np, npx
from kiln.backend.c import build
from kiln.graph.capture import capture
from kiln.graph.passes.attention import fuse_attention
from kiln.graph.passes.pipeline import run_pipeline

R = onp.random.default_rng(27)
B, TQ, TK, D, DV = 3, 5, 7, 8, 6


def _plain(q, k, v, lens):
    return np.matmul(npx.softmax(np.matmul(q, np.swapaxes(k, -1, -2)) / math.sqrt(D)), v)


def _lengths(q, k, v, lens):
    s = npx.batch_dot(q, k, transpose_b=True) * (1 / math.sqrt(D))
    lens = np.broadcast_to(np.reshape(lens, (B, 1)), (B, TQ))
    return npx.batch_dot(npx.softmax(s, length=lens, use_length=True), v)


def _masked(q, k, v, lens):
    mask = np.arange(TK).reshape(1, 1, TK) < lens.reshape(B, 1, 1)
    s = np.matmul(q, np.swapaxes(k, 1, 2)) / math.sqrt(D)
    return np.matmul(npx.masked_softmax(s, mask), v)


def _d2l(q, k, v, lens):
    """d2l's DotProductAttention with its masked_softmax (sequence_mask, value -1e6)."""
    scores = npx.batch_dot(q, k, transpose_b=True) / math.sqrt(q.shape[-1])
    shape = scores.shape
    valid = lens.repeat(shape[1])
    x = npx.sequence_mask(scores.reshape(-1, shape[-1]), valid, True, value=-1e6, axis=1)
    return npx.batch_dot(npx.softmax(x).reshape(shape), v)


def _prescaled(q, k, v, lens):
    """the scale on the queries (MXNet's interleaved_matmul_selfatt_qk): no scale node"""
    return np.matmul(npx.softmax(np.matmul(q / math.sqrt(D), np.swapaxes(k, -1, -2))), v)


def _direct(q, k, v, lens):
    mask = np.arange(TK).reshape(1, 1, TK) < lens.reshape(B, 1, 1)
    return npx.attention(q, k, v, mask)


FORMS = {"plain": _plain, "lengths": _lengths, "masked": _masked, "d2l": _d2l,
         "prescaled": _prescaled, "direct": _direct}
# forms whose rows with no key left are 0 (masked_softmax) or uniform (d2l's -1e6); the
# others give NaN there, in both modes
LENS = onp.array([0, 1, TK], dtype=onp.int32)


def _inputs(special=False):
    q, k, v = (R.normal(size=s).astype(onp.float32) for s in
               ((B, TQ, D), (B, TK, D), (B, TK, DV)))
    if special:
        q[1, 2, 3] = onp.nan
        k[2, 4, 0] = onp.inf
        v[2, 1, 1] = -onp.inf
    return q, k, v


def _fused_graph(fn, lens):
    q, k, v = _inputs()
    cap = capture(fn, (np.array(q), np.array(k), np.array(v), np.array(lens)), "attn")
    return fuse_attention(run_pipeline("generic", cap.graph))


@pytest.mark.parametrize("form", sorted(FORMS))
def test_the_form_becomes_one_attention_node(form):
    graph = _fused_graph(FORMS[form], LENS)
    ops = [n.op for n in graph.nodes]
    assert ops.count("attention") == 1
    assert "exp" not in ops and ops.count("matmul") == 0


def test_probabilities_read_elsewhere_keep_the_composite():
    def fn(q, k, v, lens):
        p = npx.softmax(np.matmul(q, np.swapaxes(k, -1, -2)))
        return np.matmul(p, v), p
    graph = _fused_graph(fn, LENS)
    assert "attention" not in [n.op for n in graph.nodes]


@pytest.fixture(params=["default", "no-dnnl-no-libmvec"])
def configuration(request, monkeypatch):
    try:
        build.compiler()
    except build.CompilerUnavailable:
        pytest.skip("no C compiler")
    if request.param != "default":
        monkeypatch.setenv("KILN_DNNL", "0")
        monkeypatch.setenv("KILN_VECTOR_MATH", "0")
    return request.param


def _value_and_grads(fn, arrays, lens):
    xs = [np.array(a) for a in arrays]
    for x in xs:
        x.attach_grad()
    with kiln.autograd.record():
        y = fn(*xs, np.array(lens))
        loss = (y * np.array(onp.linspace(-1, 1, y.size, dtype=onp.float32)
                             .reshape(y.shape))).sum()
    loss.backward()
    return [y.asnumpy()] + [x.grad.asnumpy() for x in xs]


@pytest.mark.parametrize("special", [False, True], ids=["finite", "nan-inf"])
@pytest.mark.parametrize("form", sorted(FORMS))
def test_compiled_equals_eager_forward_and_backward(form, special, configuration):
    fn = FORMS[form]
    arrays = _inputs(special)
    lens = LENS if form != "plain" else onp.array([1, 2, 3], onp.int32)
    eager = _value_and_grads(fn, arrays, lens)
    compiled = kiln.hybridize(fn, backend="c")
    inference = compiled(*[np.array(a) for a in arrays], np.array(lens)).asnumpy()
    onp.testing.assert_allclose(inference, eager[0], rtol=1e-5, atol=1e-5, equal_nan=True)
    for got, want in zip(_value_and_grads(compiled, arrays, lens), eager):
        onp.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5, equal_nan=True)
    if not special and form in ("masked", "direct", "d2l"):
        assert onp.isfinite(eager[0]).all()


def test_row_with_no_key_is_zero_and_one_key_copies_its_value(configuration):
    q, k, v = _inputs()
    fn = kiln.hybridize(_direct, backend="c")
    out = fn(np.array(q), np.array(k), np.array(v), np.array(LENS)).asnumpy()
    assert (out[0] == 0).all()
    onp.testing.assert_allclose(out[1], onp.broadcast_to(v[1, 0], (TQ, DV)), rtol=1e-6)


def test_long_sequences_in_blocks_and_float64(configuration):
    """More keys and queries than one block of the kernel, ragged ends; float64 too."""
    for dtype, tol in ((onp.float32, 2e-5), (onp.float64, 1e-12)):
        q, k, v = (R.normal(size=s).astype(dtype) for s in
                   ((2, 2, 77, 24), (2, 2, 150, 24), (2, 2, 150, 40)))
        mask = R.random((2, 1, 77, 150)) < 0.7

        def fn(q, k, v, m):
            return npx.attention(q, k, v, m, scale=0.3)
        args = [np.array(a) for a in (q, k, v, mask)]
        onp.testing.assert_allclose(kiln.hybridize(fn, backend="c")(*args).asnumpy(),
                                    fn(*args).asnumpy(), rtol=tol, atol=tol)


def test_two_attentions_in_one_program(configuration):
    """A decoder's blocks each attend: the kernel goes into the program once (it went in
    once per node, and the compiler refused the redefinitions)."""
    q, k, v = (np.array(a) for a in _inputs())

    def fn(q, k, v):
        first = npx.attention(q, k, v)
        return npx.attention(first, k[..., :DV], v, scale=0.5)
    onp.testing.assert_allclose(kiln.hybridize(fn, backend="c")(q, k, v).asnumpy(),
                                fn(q, k, v).asnumpy(), rtol=1e-5, atol=1e-5)


def test_bad_operands_are_refused_with_the_op_named():
    q, k, v = _inputs()
    with pytest.raises(kiln.base.KilnError, match="attention"):
        npx.attention(np.array(q), np.array(k[:, :, :4]), np.array(v))
    with pytest.raises(kiln.base.KilnError, match="attention"):
        npx.attention(np.array(q), np.array(k), np.array(v), np.ones((2, 2, 2), dtype=bool))


@pytest.mark.parametrize("tq,tk", [(0, 0), (3, 0), (0, 2)])
def test_no_queries_or_no_keys_give_the_empty_sum(tq, tk):
    """Zero keys: p v is a sum over nothing, zeros (eager raised on the empty maximum and
    the C kernel gave 0 / 0); zero queries: an empty output. Found by the fuzzer's sizes."""
    def f(q, k, v):
        return npx.attention(q, k, v, np.ones((tq, tk), dtype="bool"))
    q, k, v = (np.array(onp.ones(s, "float32")) for s in ((tq, 4), (tk, 4), (tk, 5)))
    eager = f(q, k, v).asnumpy()
    assert eager.shape == (tq, 5) and not eager.any()
    for backend in ("numpy", "c"):
        onp.testing.assert_array_equal(kiln.hybridize(f, backend=backend)(q, k, v).asnumpy(),
                                       eager)
