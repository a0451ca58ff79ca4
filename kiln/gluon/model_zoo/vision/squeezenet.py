"""SqueezeNet 1.0 and 1.1 (Iandola et al. 2016), laid out as MXNet's model_zoo builds them
(the output stage pools 13x13, so inputs are 224x224)."""
from ... import nn
from ...contrib.nn import HybridConcurrent
from ._pretrained import load_pretrained


def _fire_conv(channels, kernel_size, padding=0):
    out = nn.HybridSequential()
    out.add(nn.Conv2D(channels, kernel_size, padding=padding), nn.Activation("relu"))
    return out


def _fire(squeeze, expand1x1, expand3x3):
    out = nn.HybridSequential()
    out.add(_fire_conv(squeeze, 1))
    paths = HybridConcurrent(axis=1)
    paths.add(_fire_conv(expand1x1, 1), _fire_conv(expand3x3, 3, 1))
    out.add(paths)
    return out


def _pool():
    return nn.MaxPool2D(pool_size=3, strides=2, ceil_mode=True)


class SqueezeNet(nn.HybridBlock):
    """SqueezeNet (Iandola et al., 2016) `version` '1.0' or '1.1': fire modules of 1x1 squeeze and
    1x1/3x3 expand convolutions."""
    def __init__(self, version, classes=1000, **kwargs):
        super().__init__(**kwargs)
        if version not in ("1.0", "1.1"):
            raise ValueError(f"SqueezeNet: version must be '1.0' or '1.1', got {version!r}")
        self.features = nn.HybridSequential()
        if version == "1.0":
            self.features.add(nn.Conv2D(96, kernel_size=7, strides=2), nn.Activation("relu"),
                              _pool(), _fire(16, 64, 64), _fire(16, 64, 64),
                              _fire(32, 128, 128), _pool(), _fire(32, 128, 128),
                              _fire(48, 192, 192), _fire(48, 192, 192), _fire(64, 256, 256),
                              _pool(), _fire(64, 256, 256))
        else:
            self.features.add(nn.Conv2D(64, kernel_size=3, strides=2), nn.Activation("relu"),
                              _pool(), _fire(16, 64, 64), _fire(16, 64, 64), _pool(),
                              _fire(32, 128, 128), _fire(32, 128, 128), _pool(),
                              _fire(48, 192, 192), _fire(48, 192, 192), _fire(64, 256, 256),
                              _fire(64, 256, 256))
        self.features.add(nn.Dropout(0.5))
        self.output = nn.HybridSequential()
        self.output.add(nn.Conv2D(classes, kernel_size=1), nn.Activation("relu"),
                        nn.AvgPool2D(13), nn.Flatten())

    def forward(self, x):
        return self.output(self.features(x))


def get_squeezenet(version, pretrained=False, ctx=None, root=None, **kwargs):
    """SqueezeNet `version` '1.0' or '1.1' (Iandola et al., 2016); `pretrained=True` loads MXNet's
    parameter file from `root`."""
    net = SqueezeNet(version, **kwargs)
    return load_pretrained(net, f"squeezenet{version}", pretrained, ctx, root)


def squeezenet1_0(**kwargs):
    """SqueezeNet 1.0."""
    return get_squeezenet("1.0", **kwargs)
def squeezenet1_1(**kwargs):
    """SqueezeNet 1.1."""
    return get_squeezenet("1.1", **kwargs)
