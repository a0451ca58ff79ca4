"""Inception v3 (Szegedy et al. 2015), laid out as MXNet's model_zoo builds it (inputs
299x299), so its pretrained file loads. A branch is a list of (channels, kernel, strides,
padding) convolutions, None meaning the default, each followed by BatchNorm and ReLU."""
from ... import nn
from ...contrib.nn import HybridConcurrent
from ._pretrained import load_pretrained

_SETTINGS = ("channels", "kernel_size", "strides", "padding")


def _basic_conv(**kwargs):
    out = nn.HybridSequential()
    out.add(nn.Conv2D(use_bias=False, **kwargs), nn.BatchNorm(epsilon=0.001),
            nn.Activation("relu"))
    return out


def _branch(pool, *convs):
    out = nn.HybridSequential()
    if pool == "avg":
        out.add(nn.AvgPool2D(pool_size=3, strides=1, padding=1))
    elif pool == "max":
        out.add(nn.MaxPool2D(pool_size=3, strides=2))
    for setting in convs:
        out.add(_basic_conv(**{k: v for k, v in zip(_SETTINGS, setting) if v is not None}))
    return out


def _concurrent(*branches):
    out = HybridConcurrent(axis=1)
    out.add(*branches)
    return out


def _make_A(pool_features):
    return _concurrent(
        _branch(None, (64, 1, None, None)),
        _branch(None, (48, 1, None, None), (64, 5, None, 2)),
        _branch(None, (64, 1, None, None), (96, 3, None, 1), (96, 3, None, 1)),
        _branch("avg", (pool_features, 1, None, None)))


def _make_B():
    return _concurrent(
        _branch(None, (384, 3, 2, None)),
        _branch(None, (64, 1, None, None), (96, 3, None, 1), (96, 3, 2, None)),
        _branch("max"))


def _make_C(c7):
    return _concurrent(
        _branch(None, (192, 1, None, None)),
        _branch(None, (c7, 1, None, None), (c7, (1, 7), None, (0, 3)),
                (192, (7, 1), None, (3, 0))),
        _branch(None, (c7, 1, None, None), (c7, (7, 1), None, (3, 0)),
                (c7, (1, 7), None, (0, 3)), (c7, (7, 1), None, (3, 0)),
                (192, (1, 7), None, (0, 3))),
        _branch("avg", (192, 1, None, None)))


def _make_D():
    return _concurrent(
        _branch(None, (192, 1, None, None), (320, 3, 2, None)),
        _branch(None, (192, 1, None, None), (192, (1, 7), None, (0, 3)),
                (192, (7, 1), None, (3, 0)), (192, 3, 2, None)),
        _branch("max"))


def _split_3x3():
    return _concurrent(_branch(None, (384, (1, 3), None, (0, 1))),
                       _branch(None, (384, (3, 1), None, (1, 0))))


def _make_E():
    b3 = nn.HybridSequential()
    b3.add(_branch(None, (384, 1, None, None)), _split_3x3())
    b3dbl = nn.HybridSequential()
    b3dbl.add(_branch(None, (448, 1, None, None), (384, 3, None, 1)), _split_3x3())
    return _concurrent(_branch(None, (320, 1, None, None)), b3, b3dbl,
                       _branch("avg", (192, 1, None, None)))


class Inception3(nn.HybridBlock):
    """Inception v3 (Szegedy et al., 2016), for 299x299 input."""
    def __init__(self, classes=1000, **kwargs):
        super().__init__(**kwargs)
        self.features = nn.HybridSequential()
        self.features.add(
            _basic_conv(channels=32, kernel_size=3, strides=2),
            _basic_conv(channels=32, kernel_size=3),
            _basic_conv(channels=64, kernel_size=3, padding=1),
            nn.MaxPool2D(pool_size=3, strides=2),
            _basic_conv(channels=80, kernel_size=1),
            _basic_conv(channels=192, kernel_size=3),
            nn.MaxPool2D(pool_size=3, strides=2),
            _make_A(32), _make_A(64), _make_A(64), _make_B(),
            _make_C(128), _make_C(160), _make_C(160), _make_C(192), _make_D(),
            _make_E(), _make_E(), nn.AvgPool2D(pool_size=8), nn.Dropout(0.5))
        self.output = nn.Dense(classes)

    def forward(self, x):
        return self.output(self.features(x))


def inception_v3(pretrained=False, ctx=None, root=None, **kwargs):
    """Inception v3 (Szegedy et al., 2016); with `pretrained=True` its parameters are loaded from
    MXNet's model file under `root`."""
    return load_pretrained(Inception3(**kwargs), "inceptionv3", pretrained, ctx, root)
