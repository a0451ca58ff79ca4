"""bfloat16 convolutions under mixed precision (graph/passes/amp.py, conv_epilogue.py,
layout.py; backend/c/heavy.py and the shim's bfloat16 flag): in a compiled program a
conv_bf16 takes its bias and ReLU (oneDNN's bias argument and post-op) and runs
channels-last between convolutions; a training step runs both halves of each
convolution's gradient in bfloat16 (conv_grad_data / conv_grad_weight with bf16=True),
with float32 gradients for the float32 master weights. Generated C equals the NumPy
executor (the eager kernels: operands rounded to bfloat16, float32 products) within
float32 reordering, and float32 training within bfloat16's rounding."""
import numpy as onp
import pytest

from kiln import autograd, gluon, init, np, npx
from kiln.backend.dnnl import lowp
from kiln.contrib import amp
from kiln.gluon import nn
from kiln.ops import REGISTRY

R = onp.random.default_rng(29)

pytestmark = pytest.mark.skipif(not (lowp.isa() or "").startswith("avx512_core"),
                                reason="oneDNN runs bfloat16 convolutions on AVX-512")


class Net(nn.HybridBlock):
    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2D(16, 3, padding=1, activation="relu")
        self.c2 = nn.Conv2D(16, 3, padding=1, activation="relu")
        self.c3 = nn.Conv2D(8, 3, strides=2, padding=1)
        self.bn = nn.BatchNorm()
        self.out = nn.Dense(10)

    def forward(self, x):
        h = self.c2(self.c1(x))
        return self.out(npx.relu(self.bn(self.c3(h))))


def _net():
    net = Net()
    net.initialize(init.Xavier())
    net(np.array(R.standard_normal((4, 3, 12, 12)).astype("float32")))
    return net


def _copy_params(src, dst):
    for (_, a), (_, b) in zip(sorted(src.collect_params().items()),
                              sorted(dst.collect_params().items())):
        b.set_data(a.data())


def _program_nodes(net):
    nodes = []
    for entry in net._kiln_cached.entries.values():
        for prog in (entry.program, entry.grad[0] if entry.grad else None):
            graph = getattr(prog, "graph", None)
            if graph is not None:
                nodes += graph.nodes
    return nodes


def test_inference_convs_take_bias_and_relu_channels_last_and_equal_eager():
    x = np.array(R.standard_normal((4, 3, 12, 12)).astype("float32"))
    nets, base = [], _net()
    for backend in ("c", "numpy"):
        net = _net()
        _copy_params(base, net)
        amp.convert_hybrid_block(net, "bfloat16")
        net.hybridize(backend=backend)
        nets.append((net, net(x).asnumpy()))
    (c_net, got), (_, want) = nets
    convs = [n for n in _program_nodes(c_net) if n.op == "conv_bf16"]
    assert len(convs) == 3 and all(n.attrs.get("channels_last") for n in convs)
    # c1 and c2 take their bias and ReLU, c3 its bias (BatchNorm follows)
    assert sorted((len(n.inputs), bool(n.attrs.get("relu"))) for n in convs) == [
        (3, False), (3, True), (3, True)]
    assert not {"conv", "conv_bias"} & {n.op for n in _program_nodes(c_net)}
    onp.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4 * onp.abs(want).max())


def _train_step(net, x, y):
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    with autograd.record():
        loss = loss_fn(net(x), y)
    loss.backward()
    return {name: p.grad().asnumpy() for name, p in net.collect_params().items()
            if p.grad_req != "null"}


@pytest.mark.parametrize("convert", [True, False])
def test_training_step_runs_conv_gradients_in_bfloat16(convert):
    x = np.array(R.standard_normal((4, 3, 12, 12)).astype("float32"))
    y = np.array(R.integers(0, 10, 4).astype("float32"))
    grads, base = {}, _net()
    for backend in ("c", "numpy"):
        net = _net()
        _copy_params(base, net)
        net.hybridize(backend=backend)
        if convert:
            amp.convert_hybrid_block(net, "bfloat16")
        grads[backend] = _train_step(net, x, y)
        if backend == "c":
            nodes = _program_nodes(net)
    halves = [n for n in nodes if n.op in ("conv_grad_data", "conv_grad_weight")]
    assert halves and all(bool(n.attrs.get("bf16")) == convert for n in halves)
    for name, g in grads["c"].items():
        assert g.dtype == onp.float32
        want = grads["numpy"][name]
        onp.testing.assert_allclose(g, want, rtol=2e-3, atol=2e-3 * onp.abs(want).max() + 1e-5,
                                    err_msg=name)


def test_bfloat16_gradient_halves_round_their_operands():
    """conv_grad_data / conv_grad_weight with bf16: the float32 kernels on operands rounded
    to bfloat16, which differs from float32's own result."""
    from kiln._core.bfloat16 import round_to_bfloat16
    g = R.standard_normal((2, 4, 5, 5)).astype("float32")
    w = R.standard_normal((4, 3, 3, 3)).astype("float32")
    x = R.standard_normal((2, 3, 5, 5)).astype("float32")
    a = dict(stride=(1, 1), dilation=(1, 1), pad=(1, 1, 1, 1), groups=1)
    data, weight = REGISTRY["conv_grad_data"].impl, REGISTRY["conv_grad_weight"].impl
    gx = data(g, w, in_shape=(5, 5), bf16=True, **a)
    onp.testing.assert_array_equal(gx, data(round_to_bfloat16(g), round_to_bfloat16(w),
                                            in_shape=(5, 5), **a))
    assert not onp.array_equal(gx, data(g, w, in_shape=(5, 5), **a))
    gw = weight(x, g, kernel=(3, 3), bf16=True, **a)
    onp.testing.assert_array_equal(gw, weight(round_to_bfloat16(x), round_to_bfloat16(g),
                                              kernel=(3, 3), **a))
