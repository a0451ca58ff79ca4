"""The d2l CNN classifiers (LeNet, AlexNet, VGG, NiN, GoogLeNet, ResNet, DenseNet), shrunk
to small widths and inputs, train compiled with the same losses and weights as eagerly."""
import numpy as onp
import pytest

from kiln import np, npx, init, gluon
from kiln.fit import make_step
from kiln.gluon import nn


def lenet():
    net = nn.HybridSequential()
    net.add(nn.Conv2D(6, 5, padding=2, activation="sigmoid"), nn.AvgPool2D(2, 2),
            nn.Conv2D(16, 5, activation="sigmoid"), nn.AvgPool2D(2, 2),
            nn.Dense(32, activation="sigmoid"), nn.Dense(10))
    return net


def alexnet():
    net = nn.HybridSequential()
    net.add(nn.Conv2D(8, 5, strides=2, padding=1, activation="relu"), nn.MaxPool2D(3, 2),
            nn.Conv2D(16, 3, padding=2, activation="relu"), nn.MaxPool2D(3, 2),
            nn.Conv2D(16, 3, padding=1, activation="relu"), nn.MaxPool2D(2, 2),
            nn.Dense(32, activation="relu"), nn.Dropout(0.5), nn.Dense(10))
    return net


def vgg():
    net = nn.HybridSequential()
    for convs, channels in ((1, 4), (2, 8)):
        for _ in range(convs):
            net.add(nn.Conv2D(channels, 3, padding=1, activation="relu"))
        net.add(nn.MaxPool2D(2, 2))
    net.add(nn.Dense(32, activation="relu"), nn.Dense(10))
    return net


def nin():
    def block(channels, k, s, p):
        blk = nn.HybridSequential()
        blk.add(nn.Conv2D(channels, k, s, p, activation="relu"),
                nn.Conv2D(channels, 1, activation="relu"),
                nn.Conv2D(channels, 1, activation="relu"))
        return blk
    net = nn.HybridSequential()
    net.add(block(8, 5, 2, 0), nn.MaxPool2D(3, 2), block(10, 3, 1, 1), nn.GlobalAvgPool2D(),
            nn.Flatten())
    return net


class Inception(nn.HybridBlock):
    def __init__(self, c1, c2, c3, c4):
        super().__init__()
        self.p1 = nn.Conv2D(c1, 1, activation="relu")
        self.p2_1 = nn.Conv2D(c2[0], 1, activation="relu")
        self.p2_2 = nn.Conv2D(c2[1], 3, padding=1, activation="relu")
        self.p3_1 = nn.Conv2D(c3[0], 1, activation="relu")
        self.p3_2 = nn.Conv2D(c3[1], 5, padding=2, activation="relu")
        self.p4_1 = nn.MaxPool2D(3, 1, 1)
        self.p4_2 = nn.Conv2D(c4, 1, activation="relu")

    def forward(self, x):
        return np.concatenate((self.p1(x), self.p2_2(self.p2_1(x)), self.p3_2(self.p3_1(x)),
                               self.p4_2(self.p4_1(x))), axis=1)


def googlenet():
    net = nn.HybridSequential()
    net.add(nn.Conv2D(8, 7, 2, 3, activation="relu"), nn.MaxPool2D(3, 2, 1),
            Inception(4, (4, 8), (2, 4), 4), nn.GlobalAvgPool2D(), nn.Dense(10))
    return net


class Residual(nn.HybridBlock):
    def __init__(self, channels, use_1x1conv=False, strides=1):
        super().__init__()
        self.conv1 = nn.Conv2D(channels, 3, padding=1, strides=strides)
        self.conv2 = nn.Conv2D(channels, 3, padding=1)
        self.conv3 = nn.Conv2D(channels, 1, strides=strides) if use_1x1conv else None
        self.bn1, self.bn2 = nn.BatchNorm(), nn.BatchNorm()

    def forward(self, x):
        y = npx.relu(self.bn1(self.conv1(x)))
        y = self.bn2(self.conv2(y))
        return npx.relu(y + (self.conv3(x) if self.conv3 else x))


def resnet():
    net = nn.HybridSequential()
    net.add(nn.Conv2D(8, 3, padding=1), nn.BatchNorm(), nn.Activation("relu"),
            Residual(8), Residual(16, use_1x1conv=True, strides=2), nn.GlobalAvgPool2D(),
            nn.Dense(10))
    return net


def densenet():
    def conv_block(channels):
        blk = nn.HybridSequential()
        blk.add(nn.BatchNorm(), nn.Activation("relu"), nn.Conv2D(channels, 3, padding=1))
        return blk

    class DenseBlock(nn.HybridBlock):
        def __init__(self, num_convs, channels):
            super().__init__()
            self.net = nn.HybridSequential()
            for _ in range(num_convs):
                self.net.add(conv_block(channels))

        def forward(self, x):
            for blk in self.net:
                x = np.concatenate((x, blk(x)), axis=1)
            return x
    net = nn.HybridSequential()
    net.add(nn.Conv2D(8, 3, padding=1), DenseBlock(2, 4), nn.BatchNorm(), nn.Activation("relu"),
            nn.Conv2D(8, 1), nn.AvgPool2D(2, 2), nn.GlobalAvgPool2D(), nn.Dense(10))
    return net


NETS = {"lenet": lenet, "alexnet": alexnet, "vgg": vgg, "nin": nin, "googlenet": googlenet,
        "resnet": resnet, "densenet": densenet}


def _train(build, compiled, params_file, x, y):
    net = build()
    net.initialize(init.Xavier())
    net(x)
    net.load_parameters(params_file)
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.1})
    step = make_step(net, gluon.loss.SoftmaxCrossEntropyLoss(), trainer, compiled=compiled)
    return [float(step(x, y).mean().asnumpy()) for _ in range(2)], net


@pytest.mark.parametrize("name", sorted(NETS))
def test_classifier_trains_compiled_like_eager(name, tmp_path):
    rng = onp.random.default_rng(0)
    x = np.array(rng.standard_normal((4, 1, 32, 32)).astype("float32"))
    y = np.array(onp.array([1, 0, 3, 9], dtype="float32"))
    net = NETS[name]()
    net.initialize(init.Xavier())
    net(x)
    path = str(tmp_path / "p.params")
    net.save_parameters(path)
    np.random.seed(1)
    eager, net_e = _train(NETS[name], False, path, x, y)
    np.random.seed(1)
    compiled, net_c = _train(NETS[name], True, path, x, y)
    onp.testing.assert_allclose(compiled, eager, rtol=1e-4, atol=1e-5)
    for (k, pe), pc in zip(net_e.collect_params().items(), net_c.collect_params().values()):
        onp.testing.assert_allclose(pc.data().asnumpy(), pe.data().asnumpy(), rtol=1e-3,
                                    atol=1e-4, err_msg=k)
