"""Compiled training steps with heavy ops channels-last (kiln/graph/passes/layout.py)
against eager: LeNet- and ResNet-like blocks, losses and updated parameters."""
import numpy as onp
import pytest

from kiln import np, npx, init, gluon
from kiln.backend import dnnl
from kiln.fit import make_step
from kiln.gluon import nn

pytestmark = [pytest.mark.skipif(not dnnl.available(), reason="oneDNN not installed"),
              pytest.mark.filterwarnings("ignore::kiln.graph.capture.KilnTraceWarning")]


def lenet_like():
    net = nn.HybridSequential()
    net.add(nn.Conv2D(6, kernel_size=5, padding=2, activation="relu"),
            nn.MaxPool2D(pool_size=2, strides=2),
            nn.Conv2D(16, kernel_size=3, activation="relu"),
            nn.MaxPool2D(pool_size=2, strides=2), nn.Dense(10))
    return net


class Residual(nn.HybridBlock):
    def __init__(self, channels, strides=1):
        super().__init__()
        self.conv1 = nn.Conv2D(channels, kernel_size=3, padding=1, strides=strides)
        self.conv2 = nn.Conv2D(channels, kernel_size=3, padding=1)
        self.conv3 = nn.Conv2D(channels, kernel_size=1, strides=strides) if strides > 1 else None
        self.bn1, self.bn2 = nn.BatchNorm(), nn.BatchNorm()

    def forward(self, x):
        y = npx.relu(self.bn1(self.conv1(x)))
        y = self.bn2(self.conv2(y))
        if self.conv3 is not None:
            x = self.conv3(x)
        return npx.relu(y + x)


def resnet_like():
    net = nn.HybridSequential()
    net.add(nn.Conv2D(8, kernel_size=3, padding=1), nn.BatchNorm(), nn.Activation("relu"),
            nn.MaxPool2D(pool_size=3, strides=2, padding=1), Residual(8), Residual(12, 2),
            nn.GlobalAvgPool2D(), nn.Dense(10))
    return net


def _train(build, compiled, x, y, steps=2):
    np.random.seed(0)
    net = build()
    net.initialize(init.Xavier())
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.1})
    step = make_step(net, gluon.loss.SoftmaxCrossEntropyLoss(), trainer, compiled=compiled)
    losses = [step(x, y).asnumpy() for _ in range(steps)]
    params = {k: p.data().asnumpy() for k, p in net.collect_params().items()}
    return losses, params


def _assert_compiled_trains_as_eager(build, x, y):
    eager_losses, eager_params = _train(build, False, x, y)
    losses, params = _train(build, True, x, y)
    for a, b in zip(eager_losses, losses):
        onp.testing.assert_allclose(b, a, rtol=1e-4, atol=1e-5)
    for k in eager_params:
        onp.testing.assert_allclose(params[k], eager_params[k], rtol=1e-3, atol=1e-5,
                                    err_msg=k)


@pytest.mark.parametrize("build,shape", [(lenet_like, (8, 1, 16, 16)),
                                         (resnet_like, (4, 3, 16, 16))])
def test_compiled_step_with_channels_last_matches_eager(build, shape):
    rng = onp.random.default_rng(0)
    x = np.array(rng.standard_normal(shape).astype("float32"))
    y = np.array(rng.integers(0, 10, size=shape[0]).astype("float32"))
    _assert_compiled_trains_as_eager(build, x, y)


def test_channels_last_and_nchw_programs_agree(monkeypatch):
    """The same step compiled with the layout pass and without it (KILN_CHANNELS_LAST=0)."""
    rng = onp.random.default_rng(1)
    x = np.array(rng.standard_normal((4, 3, 16, 16)).astype("float32"))
    y = np.array(rng.integers(0, 10, size=4).astype("float32"))
    from kiln.graph.passes import layout
    calls = []
    real = layout.assign_layouts

    def counted(graph, takes=lambda n: True):
        out = real(graph, takes)
        calls.append(out is not graph)
        return out
    monkeypatch.setattr(layout, "assign_layouts", counted)
    on = _train(resnet_like, True, x, y)
    assert any(calls)
    monkeypatch.setenv("KILN_CHANNELS_LAST", "0")
    off = _train(resnet_like, True, x, y)
    for a, b in zip(on[0], off[0]):
        onp.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("dims", [1, 3])
def test_one_and_three_spatial_dims_compiled_channels_last(dims):
    conv, pool = getattr(nn, f"Conv{dims}D"), getattr(nn, f"AvgPool{dims}D")
    maxpool = getattr(nn, f"MaxPool{dims}D")

    def build():
        net = nn.HybridSequential()
        net.add(conv(4, kernel_size=3, padding=1, activation="relu"), maxpool(pool_size=2),
                conv(5, kernel_size=3, strides=2), pool(pool_size=2, padding=1), nn.Dense(10))
        return net
    rng = onp.random.default_rng(2)
    x = np.array(rng.standard_normal((3, 2) + (8,) * dims).astype("float32"))
    y = np.array(rng.integers(0, 10, size=3).astype("float32"))
    _assert_compiled_trains_as_eager(build, x, y)
