"""matmul_bf16's epilogue (kiln/ops/lowp.py; folded in by graph/passes/amp.py; oneDNN
post-ops in backend/dnnl/lowp.c): attention's scale, Dense + GELU and a residual add
compiled (C on oneDNN, C without it, the NumPy executor) equal the eager primitives
written out unfused, and the fused primitive's gradient equals the unfused one's."""
import numpy as onp
import pytest

from kiln import autograd, np, npx
from kiln.backend import dnnl
from kiln.hybrid.cached import hybridize
from kiln.ops import REGISTRY

R = onp.random.default_rng(44)


def _block(x, wqkv, w1, b1, w2, b2):
    """A small transformer layer: one head of attention, a GELU FFN, residual adds (the
    products written as Gluon's Dense(flatten=False) traces them)."""
    q, k, v = (np.matmul(x, wqkv[i].T) for i in range(3))
    att = npx.softmax(np.matmul(q, k.swapaxes(-1, -2)) / 4.0, axis=-1)
    h = x + np.matmul(att, v)
    return h + (np.matmul(npx.gelu(np.matmul(h, w1.T) + b1), w2.T) + b2)


def _block_unfused(x, wqkv, w1, b1, w2, b2):
    """_block as the AMP pass rounds it, with every epilogue a float32 op of its own."""
    mm = REGISTRY["matmul_bf16"]
    q, k, v = (mm(x, wqkv[i], transpose_b=True) for i in range(3))
    att = npx.softmax(mm(q, k, transpose_b=True) / 4.0, axis=-1)
    h = x + mm(att, v)
    return h + (mm(npx.gelu(mm(h, w1, b1, transpose_b=True)), w2, b2, transpose_b=True))


def _args():
    shapes = ((2, 6, 16), (3, 16, 16), (32, 16), (32,), (16, 32), (16,))
    args = [R.standard_normal(s).astype("float32") for s in shapes]
    args[0][1, 2, 3] = onp.nan
    return [np.array(a) for a in args]


@pytest.mark.parametrize("backend,onednn", [("c", True), ("c", False), ("numpy", True)])
def test_compiled_epilogues_equal_the_unfused_eager_ops(backend, onednn):
    args = _args()
    want = _block_unfused(*args).asnumpy()
    f = hybridize(_block, backend=backend)
    f._cached.precision = ("amp-bfloat16", {})
    if onednn:
        got = f(*args).asnumpy()
    else:
        with dnnl.disabled():
            got = f(*args).asnumpy()
    assert onp.isnan(got[1]).all() and onp.isfinite(got[0]).all()
    # oneDNN's GELU is its own erf: float32 rounding apart, not bfloat16's
    onp.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    if backend == "c" and onednn and dnnl.available():
        (entry,) = f._cached.entries.values()
        attrs = [n.attrs for n in entry.program.graph.nodes if n.op == "matmul_bf16"]
        assert [a.get("scale") for a in attrs if "scale" in a] == [0.25]
        assert sum(bool(a.get("gelu")) for a in attrs) == 1
        assert sum(bool(a.get("residual")) for a in attrs) == 2
        assert "erf" not in {n.op for n in entry.program.graph.nodes}


@pytest.mark.parametrize("epilogue", [{"scale": 0.125}, {"gelu": True},
                                      {"scale": 0.5, "gelu": True, "residual": True}])
def test_the_fused_gradient_equals_the_unfused_one(epilogue):
    a, w, bias, r = (np.array(R.standard_normal(s).astype("float32"))
                     for s in ((3, 5, 7), (4, 7), (4,), (3, 5, 4)))
    mm = REGISTRY["matmul_bf16"]
    grads = []
    for fused in (True, False):
        for t in (a, w, bias, r):
            t.attach_grad()
        with autograd.record():
            if fused:
                y = mm(a, w, bias, *((r,) if epilogue.get("residual") else ()),
                       transpose_b=True, **epilogue)
            else:
                y = mm(a, w, bias, transpose_b=True) * epilogue.get("scale", 1.0)
                y = npx.gelu(y) if epilogue.get("gelu") else y
                y = y + r if epilogue.get("residual") else y
            (y * y).sum().backward()
        grads.append([t.grad.asnumpy().copy() for t in (a, w, bias, r)])
    for got, want in zip(*grads):
        onp.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
