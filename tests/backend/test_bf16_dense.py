"""Dense layers on sequences in an AMP training step (graph/passes/amp.py,
backend/c/lowp.py): the input gradient reads the weight as it lies (no transposed copy
made by the forward program), the weight gradient reads its operands transposed in place
(transpose_a), and the compiled step's gradients equal the NumPy executor's (the eager
kernels) on oneDNN and without it, with NaN and infinity in the inputs too."""
import numpy as onp
import pytest

from kiln import autograd, gluon, init, np
from kiln.backend import dnnl
from kiln.contrib import amp
from kiln.gluon import nn

R = onp.random.default_rng(31)


class FeedForward(nn.HybridBlock):
    def __init__(self):
        super().__init__()
        self.up = nn.Dense(12, flatten=False, in_units=8, activation="relu")
        self.down = nn.Dense(8, flatten=False, in_units=12)

    def forward(self, x):
        return x + self.down(self.up(x))


def _net(params=None):
    net = FeedForward()
    net.initialize(init.Xavier())
    if params is not None:
        for (_, a), (_, b) in zip(sorted(params.items()),
                                  sorted(net.collect_params().items())):
            b.set_data(a.data())
    return net


def _step(net, x):
    with autograd.record():
        loss = gluon.loss.L2Loss()(net(x), x)
    loss.backward()
    return {name: p.grad().asnumpy() for name, p in net.collect_params().items()}


def _graphs(net):
    (entry,) = net._kiln_cached.entries.values()
    return entry.program.graph, entry.grad[0].graph


@pytest.mark.parametrize("onednn", [True, False])
@pytest.mark.parametrize("shape, special", [((2, 5, 8), False), ((2, 5, 8), True),
                                            ((1, 1, 8), False)])
def test_amp_training_step_of_dense_layers_equals_eager(onednn, shape, special):
    xv = R.standard_normal(shape).astype("float32")
    if special:
        xv[1, 2, 3], xv[0, 4, 0] = onp.nan, onp.inf
    x = np.array(xv)
    base = _net()
    base(x)
    grads = {}
    for backend in ("c", "numpy"):
        net = _net(base.collect_params())
        net.hybridize(backend=backend)
        amp.convert_hybrid_block(net, "bfloat16")
        if onednn:
            grads[backend] = _step(net, x)
        else:
            with dnnl.disabled():
                grads[backend] = _step(net, x)
        if backend == "c" and onednn:
            forward, backward = _graphs(net)
    for name, g in grads["c"].items():
        want = grads["numpy"][name]
        assert g.dtype == onp.float32
        finite = onp.abs(want[onp.isfinite(want)])
        scale = finite.max() if finite.size else 0.0
        # NaN and infinity where eager has them, the rest within float32 reordering
        onp.testing.assert_allclose(g, want, rtol=1e-4, atol=1e-4 * scale + 1e-6,
                                    err_msg=name)
    if onednn and dnnl.available():
        mms = [n for n in backward.nodes if n.op == "matmul_bf16"]
        assert sum(bool(n.attrs.get("transpose_a")) for n in mms) == 2
        # no transposed copy of a weight or of an activation is made for the backward
        assert not [n for n in forward.nodes if n.op == "transpose"]
