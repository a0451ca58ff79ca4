"""Layer norm and the softmax family over the last axis: the pass
(kiln/graph/passes/normalization.py) on the forms kiln's functions trace to, and compiled
(C, csrc/normalization.h) equal to eager, forward and backward, with rows of length 0 and
1, no rows, NaN and inf, float64, many rows (the parallel blocks), with and without
oneDNN and libmvec."""
import numpy as onp
import pytest

import kiln
from kiln import np, npx
from kiln.backend.c import build
from kiln.graph.capture import capture
from kiln.graph.passes.normalization import fuse_normalization
from kiln.graph.passes.pipeline import run_pipeline

R = onp.random.default_rng(41)


def _layer_norm(x, g, b):
    return npx.layer_norm(x, g, b, axis=-1, eps=1e-5)


def _layer_norm_plain(x, g, b):
    return npx.layer_norm(x, axis=-1, eps=1e-3)


def _layer_norm_gamma(x, g, b):
    return npx.layer_norm(x, g, axis=-1)


def _softmax(x, g, b):
    return npx.softmax(x, axis=-1)


def _log_softmax(x, g, b):
    return npx.log_softmax(x, axis=-1)


FORMS = {"layer_norm": (_layer_norm, "layer_norm"),
         "layer_norm_plain": (_layer_norm_plain, "layer_norm"),
         "layer_norm_gamma": (_layer_norm_gamma, "layer_norm"),
         "softmax": (_softmax, "softmax"), "log_softmax": (_log_softmax, "softmax")}
SHAPES = [(3, 4, 7), (4, 1), (3, 0), (0, 5)]


def _inputs(shape, special=False, dtype=onp.float32):
    x = (R.normal(size=shape) * 3 + 1).astype(dtype)
    n = shape[-1]
    g, b = R.normal(size=n).astype(dtype), R.normal(size=n).astype(dtype)
    if special and x.size:
        flat = x.reshape(-1, n)
        flat[0, 0] = onp.nan
        if flat.shape[0] > 2:
            flat[1, -1] = onp.inf
            flat[2, :] = -onp.inf
    return x, g, b


def _fused(fn, shape):
    x, g, b = _inputs(shape)
    cap = capture(fn, (np.array(x), np.array(g), np.array(b)), "norm")
    return fuse_normalization(run_pipeline("generic", cap.graph))


@pytest.mark.parametrize("form", sorted(FORMS))
def test_the_form_becomes_one_node(form):
    fn, op = FORMS[form]
    ops = [n.op for n in _fused(fn, (3, 4, 7)).nodes]
    assert ops.count(op) == 1
    assert not {"sum", "max", "exp", "sqrt"} & set(ops), ops


def test_statistics_read_elsewhere_keep_the_composite():
    def fn(x, g, b):
        mean = np.mean(x, axis=-1, keepdims=True)      # CSE shares it with layer norm's
        e = np.exp(x - np.max(x, axis=-1, keepdims=True))
        return npx.layer_norm(x, g, b) * mean, e / np.sum(e, axis=-1, keepdims=True) + e
    ops = [n.op for n in _fused(fn, (3, 7)).nodes]
    assert not {"softmax", "layer_norm"} & set(ops), ops


def test_other_axes_keep_the_composite():
    def fn(x, g, b):
        return npx.softmax(x, axis=0) + npx.layer_norm(x, axis=0)
    assert not {"softmax", "layer_norm"} & {n.op for n in _fused(fn, (3, 7)).nodes}


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


def _value_and_grads(fn, arrays):
    xs = [np.array(a) for a in arrays]
    for x in xs:
        x.attach_grad()
    with kiln.autograd.record():
        y = fn(*xs)
        weights = onp.linspace(-1, 1, y.size, dtype=y.dtype).reshape(y.shape)
        loss = (np.tanh(y) * np.array(weights)).sum()
    loss.backward()
    return [y.asnumpy()] + [x.grad.asnumpy() for x in xs]


@pytest.mark.parametrize("special", [False, True], ids=["finite", "nan-inf"])
@pytest.mark.parametrize("shape", SHAPES, ids=["3x4x7", "rows-of-1", "rows-of-0", "no-rows"])
@pytest.mark.parametrize("form", sorted(FORMS))
def test_compiled_equals_eager_forward_and_backward(form, shape, special, configuration):
    fn = FORMS[form][0]
    arrays = _inputs(shape, special)
    compiled = kiln.hybridize(fn, backend="c")
    if "softmax" in form and 0 in shape:     # kiln has no max of an empty array, either mode
        for run in (fn, compiled):
            with pytest.raises(kiln.base.KilnError, match="max"):
                run(*[np.array(a) for a in arrays])
        return
    eager = fn(*[np.array(a) for a in arrays]).asnumpy()
    got = compiled(*[np.array(a) for a in arrays]).asnumpy()
    assert got.shape == eager.shape
    onp.testing.assert_allclose(got, eager, rtol=1e-5, atol=1e-5, equal_nan=True)
    assert_nan_where = onp.isnan(eager)
    assert (onp.isnan(got) == assert_nan_where).all()
    if special:
        return        # NaN's gradients: NaN in both, but not on the same elements
    for got, want in zip(_value_and_grads(compiled, arrays), _value_and_grads(fn, arrays)):
        onp.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("form", sorted(FORMS))
def test_many_rows_in_parallel_blocks_and_float64(form, configuration):
    fn = FORMS[form][0]
    for dtype, tol in ((onp.float32, 2e-5), (onp.float64, 1e-12)):
        arrays = [np.array(a) for a in _inputs((301, 257), dtype=dtype)]
        onp.testing.assert_allclose(kiln.hybridize(fn, backend="c")(*arrays).asnumpy(),
                                    fn(*arrays).asnumpy(), rtol=tol, atol=tol)


def test_layer_norm_after_a_residual_add_in_a_layer():
    """nn.LayerNorm after a residual add (BERT's post-LN): the add stays in the dense
    layer's epilogue and the layer norm is one node; compiled equals eager."""
    from kiln.gluon import nn

    class Block(nn.HybridBlock):
        def __init__(self):
            super().__init__()
            self.dense = nn.Dense(6, flatten=False, in_units=6)
            self.ln = nn.LayerNorm(in_channels=6)

        def forward(self, x):
            return self.ln(x + self.dense(x))
    net = Block()
    net.initialize()
    x = np.array(R.normal(size=(2, 3, 6)).astype(onp.float32))
    want = net(x).asnumpy()
    net.hybridize(backend="c")
    onp.testing.assert_allclose(net(x).asnumpy(), want, rtol=1e-5, atol=1e-5)
    ops = [n.op for n in fuse_normalization(run_pipeline(
        "generic", capture(net.forward, (x,), "block").graph)).nodes]
    assert ops.count("layer_norm") == 1 and "sqrt" not in ops


def test_several_kernels_in_one_program(configuration):
    """Two layer norms and both softmaxes in one graph: the kernels go in once."""
    def fn(x, g, b):
        y = npx.layer_norm(npx.layer_norm(x, g, b), b, g)
        return npx.softmax(y, axis=-1) + npx.log_softmax(x, axis=-1)
    arrays = [np.array(a) for a in _inputs((4, 9))]
    onp.testing.assert_allclose(kiln.hybridize(fn, backend="c")(*arrays).asnumpy(),
                                fn(*arrays).asnumpy(), rtol=1e-5, atol=1e-5)


def test_bad_operands_are_refused_with_the_op_named():
    from kiln.ops import REGISTRY
    x = np.array(onp.ones((2, 3), onp.float32))
    with pytest.raises(kiln.base.KilnError, match="layer_norm"):
        REGISTRY["layer_norm"](x, np.array(onp.ones(4, onp.float32)),
                               np.array(onp.ones(3, onp.float32)), eps=1e-5)
    with pytest.raises(kiln.base.KilnError, match="softmax"):
        REGISTRY["softmax"](np.array(onp.ones(3, onp.int32)), log=False)
