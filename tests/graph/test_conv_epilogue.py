"""The conv epilogue pass (kiln/graph/passes/conv_epilogue.py) on hand-built graphs."""
import numpy as onp

from kiln._core.ir import Graph, Node
from kiln.graph.passes.conv_epilogue import fuse_conv_epilogues
from test_layout_pass import inp, node, values, arrays_for, CONV, F32

ZERO = Node("const", (), {}, (), F32, value=onp.zeros((), F32))


def _conv_add(x, w, b, channels_last=False):
    attrs = dict(CONV, channels_last=True) if channels_last else CONV
    y = node("conv", x, w, **attrs)
    f = w.shape[0]
    shape = (1, 1, 1, f) if channels_last else (1, f, 1, 1)
    return node("add", y, node("reshape", b, shape=shape))


def _check(g, fused, arrays):
    for a, b in zip(values(g, arrays), values(fused, arrays)):
        onp.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)


def test_bias_relu_and_the_relu_mask_fold_into_the_conv():
    x, w, b = inp((2, 3, 5, 5)), inp((4, 3, 3, 3), "w"), inp((4,), "b")
    pre = _conv_add(x, w, b)
    out = node("relu", pre)
    mask = node("greater", pre, ZERO)
    g = Graph([x, w, b], [], [out, mask])
    fused = fuse_conv_epilogues(g)
    assert sorted(fused.ops) == ["conv_bias", "greater"]
    conv = [n for n in fused.nodes if n.op == "conv_bias"][0]
    assert conv.attrs["relu"] and fused.outputs[1].inputs[0] is conv
    _check(g, fused, arrays_for(x, w, b))


def test_bias_alone_when_the_sum_has_other_readers():
    x, w, b = inp((2, 5, 5, 3)), inp((4, 3, 3, 3), "w"), inp((4,), "b")
    pre = _conv_add(x, w, b, channels_last=True)
    g = Graph([x, w, b], [], [node("relu", pre), node("exp", pre)])
    fused = fuse_conv_epilogues(g)
    conv = [n for n in fused.nodes if n.op == "conv_bias"]
    assert len(conv) == 1 and not conv[0].attrs["relu"] and "add" not in fused.ops
    _check(g, fused, arrays_for(x, w, b))


def test_left_alone_when_the_conv_output_is_read_elsewhere_or_not_a_bias():
    x, w, b = inp((2, 3, 5, 5)), inp((4, 3, 3, 3), "w"), inp((4,), "b")
    y = node("conv", x, w, **CONV)
    pre = node("add", y, node("reshape", b, shape=(1, 4, 1, 1)))
    g = Graph([x, w, b], [], [node("relu", pre), y])
    assert fuse_conv_epilogues(g) is g
    wide = inp((1, 4, 5, 5), "wide")                # not a per-channel vector
    g2 = Graph([x, w, wide], [], [node("relu", node("add", node("conv", x, w, **CONV), wide))])
    assert fuse_conv_epilogues(g2) is g2
    assert fuse_conv_epilogues(g, takes=lambda n: False) is g


def test_compiled_conv_relu_keeps_nan_and_gives_positive_zeros():
    """oneDNN's relu post-op is max(x, 0), which turns NaN into 0; kiln's relu (NumPy's
    maximum) keeps NaN, and a compiled Conv2D(activation='relu') must equal eager."""
    from kiln import np, init
    from kiln.gluon import nn
    data = onp.random.default_rng(0).normal(size=(2, 1, 6, 7)).astype(F32)
    data[0, 0, 2, 3] = onp.nan
    data[1, 0, 0, 0] = onp.inf
    x = np.array(data)
    blk = nn.Conv2D(3, 3, padding=1, activation="relu", in_channels=1)
    blk.initialize(init.Uniform(0.5))
    eager = blk(x).asnumpy()
    blk.hybridize()
    compiled = blk(x).asnumpy()
    assert onp.isnan(eager).any() and (eager == 0).any()
    onp.testing.assert_allclose(compiled, eager, rtol=1e-5, atol=1e-6, equal_nan=True)
    assert not onp.signbit(compiled[compiled == 0]).any()
