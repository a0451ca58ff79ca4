"""A recorded hybridized call is split into a forward and a backward program
(graph/split.py); the layout pass runs on the joint graph before the split, so the
activations backward reads cross between the two programs channels-last (laid out per
program, the transposes at that boundary made the pass not pay, and every convolution kept
oneDNN's blocked copies of its activations for the life of the program)."""
import numpy as onp
import pytest

import kiln
from kiln import np, npx
from kiln import autograd
from kiln.backend import dnnl
from kiln.backend.c import build
from kiln.hybrid.cached import cached_function_of
from kiln.gluon import nn

pytestmark = [pytest.mark.skipif(not (build.available() and dnnl.available()),
                                 reason="needs a C compiler and oneDNN"),
              pytest.mark.filterwarnings("ignore::kiln.graph.capture.KilnTraceWarning")]

HEAVY = ("conv", "conv_bias", "conv_grad_data", "conv_grad_weight", "pool", "pool_grad")


class PreActUnit(nn.HybridBlock):
    """resnet_v2's unit: batch norm, ReLU and convolution, twice, and the shortcut."""

    def __init__(self, channels):
        super().__init__()
        self.bn1, self.conv1 = nn.BatchNorm(), nn.Conv2D(channels, 3, padding=1, use_bias=False)
        self.bn2, self.conv2 = nn.BatchNorm(), nn.Conv2D(channels, 3, padding=1, use_bias=False)

    def forward(self, x):
        y = self.conv1(npx.relu(self.bn1(x)))
        return x + self.conv2(npx.relu(self.bn2(y)))


def _net():
    net = nn.HybridSequential()
    net.add(nn.Conv2D(8, 3, padding=1), PreActUnit(8), nn.MaxPool2D(2), PreActUnit(8),
            nn.GlobalAvgPool2D(), nn.Dense(3))
    net.initialize(kiln.init.Xavier())
    return net


def _steps(net, xs):
    got = []
    for x in xs:
        with autograd.record():
            out = net(x)
            loss = (out ** 2).sum()
        loss.backward()
        got.append([out.asnumpy().copy()] + [p.grad().asnumpy().copy()
                                             for p in net.collect_params().values()
                                             if p.grad_req != "null"])
    return got


def _programs(net):
    entry = next(e for e in cached_function_of(net).entries.values() if e.grad is not None)
    return entry.program, entry.grad[0]


def _xs():
    rng = onp.random.default_rng(0)
    return [np.array(rng.standard_normal((2, 3, 8, 8)).astype("float32")) for _ in range(2)]


def test_split_programs_run_channels_last_and_match_eager():
    net = _net()
    xs = _xs()
    eager = _steps(net, xs)         # no trainer: the parameters stay as they are
    net.hybridize(backend="c")
    hybrid = _steps(net, xs)
    for e_call, h_call in zip(eager, hybrid):
        for e, h in zip(e_call, h_call):
            onp.testing.assert_allclose(h, e, rtol=1e-4, atol=1e-4)
    forward, backward = _programs(net)
    for program in (forward, backward):
        heavy = [n for n in program.graph.nodes if n.op in HEAVY]
        assert heavy and all(n.attrs.get("channels_last") for n in heavy), program.graph.name
    # the activations backward reads leave the forward program channels-last: (N, H, W, C)
    residuals = [o for o in forward.graph.outputs if o.ndim == 4]
    assert residuals and all(o.shape[-1] in (3, 8) for o in residuals)


def test_without_the_layout_pass_the_split_programs_stay_nchw(monkeypatch):
    monkeypatch.setenv("KILN_CHANNELS_LAST", "0")
    net = _net()
    net.hybridize(backend="c")
    _steps(net, _xs()[:1])
    for program in _programs(net):
        assert not any(n.attrs.get("channels_last") for n in program.graph.nodes
                       if n.op in HEAVY)
