"""ResNet v1 (He et al. 2015) and v2 (pre-activation, He et al. 2016), laid out as MXNet's
model_zoo builds them, so parameter names (features.5.0.bn1.gamma, ...) match its files."""
from ... import nn
from ....npx import relu
from ._pretrained import load_pretrained


def _conv3x3(channels, stride, in_channels):
    return nn.Conv2D(channels, kernel_size=3, strides=stride, padding=1, use_bias=False,
                     in_channels=in_channels)


def _v1_shortcut(channels, stride, in_channels):
    block = nn.HybridSequential()
    block.add(nn.Conv2D(channels, kernel_size=1, strides=stride, use_bias=False,
                        in_channels=in_channels), nn.BatchNorm())
    return block


class _ResidualV1(nn.HybridBlock):
    """v1 blocks: relu(body(x) + shortcut(x)); subclasses build `body` and `downsample`."""

    def forward(self, x):
        residual = self.downsample(x) if self.downsample is not None else x
        return relu(self.body(x) + residual)


class BasicBlockV1(_ResidualV1):
    """ResNet v1's basic residual block: two 3x3 convolutions with batch norm, added to the
    (downsampled) input, then ReLU."""
    def __init__(self, channels, stride, downsample=False, in_channels=0, **kwargs):
        super().__init__(**kwargs)
        self.body = nn.HybridSequential()
        self.body.add(_conv3x3(channels, stride, in_channels), nn.BatchNorm(),
                      nn.Activation("relu"), _conv3x3(channels, 1, channels), nn.BatchNorm())
        self.downsample = _v1_shortcut(channels, stride, in_channels) if downsample else None


class BottleneckV1(_ResidualV1):
    """ResNet v1's bottleneck block: 1x1, 3x3 and 1x1 convolutions with batch norm, added to the
    (downsampled) input, then ReLU."""
    def __init__(self, channels, stride, downsample=False, in_channels=0, **kwargs):
        super().__init__(**kwargs)
        self.body = nn.HybridSequential()
        self.body.add(nn.Conv2D(channels // 4, kernel_size=1, strides=stride), nn.BatchNorm(),
                      nn.Activation("relu"), _conv3x3(channels // 4, 1, channels // 4),
                      nn.BatchNorm(), nn.Activation("relu"),
                      nn.Conv2D(channels, kernel_size=1, strides=1), nn.BatchNorm())
        self.downsample = _v1_shortcut(channels, stride, in_channels) if downsample else None


class _ResidualV2(nn.HybridBlock):
    """v2 (pre-activation) blocks: the shortcut takes relu(bn1(x)) when it projects;
    subclasses build their layers and `_body`."""

    def __init__(self, channels, stride, downsample, in_channels, **kwargs):
        super().__init__(**kwargs)
        self.bn1 = nn.BatchNorm()
        self.downsample = (nn.Conv2D(channels, 1, stride, use_bias=False,
                                     in_channels=in_channels) if downsample else None)

    def forward(self, x):
        residual = x
        x = relu(self.bn1(x))
        if self.downsample is not None:
            residual = self.downsample(x)
        return self._body(x) + residual


class BasicBlockV2(_ResidualV2):
    """ResNet v2's basic residual block: batch norm and ReLU before each of two 3x3 convolutions
    (pre-activation)."""
    def __init__(self, channels, stride, downsample=False, in_channels=0, **kwargs):
        super().__init__(channels, stride, downsample, in_channels, **kwargs)
        self.conv1 = _conv3x3(channels, stride, in_channels)
        self.bn2 = nn.BatchNorm()
        self.conv2 = _conv3x3(channels, 1, channels)

    def _body(self, x):
        return self.conv2(relu(self.bn2(self.conv1(x))))


class BottleneckV2(_ResidualV2):
    """ResNet v2's bottleneck block: 1x1, 3x3 and 1x1 convolutions, each after batch norm and ReLU
    (pre-activation)."""
    def __init__(self, channels, stride, downsample=False, in_channels=0, **kwargs):
        super().__init__(channels, stride, downsample, in_channels, **kwargs)
        self.conv1 = nn.Conv2D(channels // 4, kernel_size=1, strides=1, use_bias=False)
        self.bn2 = nn.BatchNorm()
        self.conv2 = _conv3x3(channels // 4, stride, channels // 4)
        self.bn3 = nn.BatchNorm()
        self.conv3 = nn.Conv2D(channels, kernel_size=1, strides=1, use_bias=False)

    def _body(self, x):
        x = self.conv2(relu(self.bn2(self.conv1(x))))
        return self.conv3(relu(self.bn3(x)))


def _stem(features, channels, thumbnail):
    if thumbnail:
        features.add(_conv3x3(channels, 1, 0))
    else:
        features.add(nn.Conv2D(channels, 7, 2, 3, use_bias=False), nn.BatchNorm(),
                     nn.Activation("relu"), nn.MaxPool2D(3, 2, 1))


def _stage(block, num_layers, channels, stride, in_channels):
    stage = nn.HybridSequential()
    stage.add(block(channels, stride, channels != in_channels, in_channels=in_channels))
    for _ in range(num_layers - 1):
        stage.add(block(channels, 1, False, in_channels=channels))
    return stage


def _check_stages(name, layers, channels):
    if len(layers) != len(channels) - 1:
        raise ValueError(f"{name}: {len(layers)} stages need {len(layers) + 1} channel counts, "
                         f"got {len(channels)}")


class ResNetV1(nn.HybridBlock):
    """ResNet v1 (He et al., 2016) built from `block`s in stages of `layers` with `channels`."""
    def __init__(self, block, layers, channels, classes=1000, thumbnail=False, **kwargs):
        super().__init__(**kwargs)
        _check_stages("ResNetV1", layers, channels)
        self.features = nn.HybridSequential()
        _stem(self.features, channels[0], thumbnail)
        for i, num_layers in enumerate(layers):
            self.features.add(_stage(block, num_layers, channels[i + 1], 1 if i == 0 else 2,
                                     channels[i]))
        self.features.add(nn.GlobalAvgPool2D())
        self.output = nn.Dense(classes, in_units=channels[-1])

    def forward(self, x):
        return self.output(self.features(x))


class ResNetV2(nn.HybridBlock):
    """ResNet v2 (pre-activation; He et al., 2016) built from `block`s in stages of `layers` with
    `channels`."""
    def __init__(self, block, layers, channels, classes=1000, thumbnail=False, **kwargs):
        super().__init__(**kwargs)
        _check_stages("ResNetV2", layers, channels)
        self.features = nn.HybridSequential()
        self.features.add(nn.BatchNorm(scale=False, center=False))
        _stem(self.features, channels[0], thumbnail)
        in_channels = channels[0]
        for i, num_layers in enumerate(layers):
            self.features.add(_stage(block, num_layers, channels[i + 1], 1 if i == 0 else 2,
                                     in_channels))
            in_channels = channels[i + 1]
        self.features.add(nn.BatchNorm(), nn.Activation("relu"), nn.GlobalAvgPool2D(),
                          nn.Flatten())
        self.output = nn.Dense(classes, in_units=in_channels)

    def forward(self, x):
        return self.output(self.features(x))


_SPEC = {18: ("basic", [2, 2, 2, 2], [64, 64, 128, 256, 512]),
         34: ("basic", [3, 4, 6, 3], [64, 64, 128, 256, 512]),
         50: ("bottleneck", [3, 4, 6, 3], [64, 256, 512, 1024, 2048]),
         101: ("bottleneck", [3, 4, 23, 3], [64, 256, 512, 1024, 2048]),
         152: ("bottleneck", [3, 8, 36, 3], [64, 256, 512, 1024, 2048])}
_BLOCKS = {1: {"basic": BasicBlockV1, "bottleneck": BottleneckV1},
           2: {"basic": BasicBlockV2, "bottleneck": BottleneckV2}}


def get_resnet(version, num_layers, pretrained=False, ctx=None, root=None, **kwargs):
    """A ResNet of `version` 1 (He et al., 2016) or 2 (pre-activation) with `num_layers` (18, 34,
    50, 101 or 152); `pretrained=True` loads MXNet's parameter file from `root`."""
    if version not in _BLOCKS or num_layers not in _SPEC:
        raise ValueError(f"get_resnet: version must be 1 or 2 and num_layers one of "
                         f"{sorted(_SPEC)}, got {version} and {num_layers}")
    kind, layers, channels = _SPEC[num_layers]
    net = (ResNetV1 if version == 1 else ResNetV2)(_BLOCKS[version][kind], layers, channels,
                                                     **kwargs)
    return load_pretrained(net, f"resnet{num_layers}_v{version}", pretrained, ctx, root)


def resnet18_v1(**kwargs):
    """ResNet-18 v1."""
    return get_resnet(1, 18, **kwargs)
def resnet34_v1(**kwargs):
    """ResNet-34 v1."""
    return get_resnet(1, 34, **kwargs)
def resnet50_v1(**kwargs):
    """ResNet-50 v1."""
    return get_resnet(1, 50, **kwargs)
def resnet101_v1(**kwargs):
    """ResNet-101 v1."""
    return get_resnet(1, 101, **kwargs)
def resnet152_v1(**kwargs):
    """ResNet-152 v1."""
    return get_resnet(1, 152, **kwargs)
def resnet18_v2(**kwargs):
    """ResNet-18 v2 (pre-activation)."""
    return get_resnet(2, 18, **kwargs)
def resnet34_v2(**kwargs):
    """ResNet-34 v2 (pre-activation)."""
    return get_resnet(2, 34, **kwargs)
def resnet50_v2(**kwargs):
    """ResNet-50 v2 (pre-activation)."""
    return get_resnet(2, 50, **kwargs)
def resnet101_v2(**kwargs):
    """ResNet-101 v2 (pre-activation)."""
    return get_resnet(2, 101, **kwargs)
def resnet152_v2(**kwargs):
    """ResNet-152 v2 (pre-activation)."""
    return get_resnet(2, 152, **kwargs)
