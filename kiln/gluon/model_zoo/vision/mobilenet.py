"""MobileNet v1 (Howard et al. 2017) and v2 (Sandler et al. 2018) with width multipliers,
laid out as MXNet's model_zoo builds them, so its pretrained files load."""
from ... import nn
from ._pretrained import load_pretrained


class RELU6(nn.HybridBlock):
    """min(max(x, 0), 6)."""

    def forward(self, x):
        return x.clip(0, 6)


def _add_conv(out, channels=1, kernel=1, stride=1, pad=0, num_group=1, active=True,
              relu6=False):
    out.add(nn.Conv2D(channels, kernel, stride, pad, groups=num_group, use_bias=False))
    out.add(nn.BatchNorm(scale=True))
    if active:
        out.add(RELU6() if relu6 else nn.Activation("relu"))


def _add_conv_dw(out, dw_channels, channels, stride, relu6=False):
    _add_conv(out, channels=dw_channels, kernel=3, stride=stride, pad=1,
              num_group=dw_channels, relu6=relu6)
    _add_conv(out, channels=channels, relu6=relu6)


class LinearBottleneck(nn.HybridBlock):
    """Expand (1x1), depthwise 3x3, project (1x1, linear); a residual when shapes allow."""

    def __init__(self, in_channels, channels, t, stride, **kwargs):
        super().__init__(**kwargs)
        self.use_shortcut = stride == 1 and in_channels == channels
        self.out = nn.HybridSequential()
        _add_conv(self.out, in_channels * t, relu6=True)
        _add_conv(self.out, in_channels * t, kernel=3, stride=stride, pad=1,
                  num_group=in_channels * t, relu6=True)
        _add_conv(self.out, channels, active=False, relu6=True)

    def forward(self, x):
        out = self.out(x)
        return out + x if self.use_shortcut else out


class MobileNet(nn.HybridBlock):
    """MobileNet v1 (Howard et al., 2017): depthwise separable convolutions, with widths scaled by
    `multiplier`."""
    def __init__(self, multiplier=1.0, classes=1000, **kwargs):
        super().__init__(**kwargs)
        self.features = nn.HybridSequential()
        _add_conv(self.features, channels=int(32 * multiplier), kernel=3, pad=1, stride=2)
        dw_channels = [int(x * multiplier) for x in [32, 64] + [128] * 2 + [256] * 2
                       + [512] * 6 + [1024]]
        channels = [int(x * multiplier) for x in [64] + [128] * 2 + [256] * 2 + [512] * 6
                    + [1024] * 2]
        strides = [1, 2] * 3 + [1] * 5 + [2, 1]
        for dwc, c, s in zip(dw_channels, channels, strides):
            _add_conv_dw(self.features, dw_channels=dwc, channels=c, stride=s)
        self.features.add(nn.GlobalAvgPool2D(), nn.Flatten())
        self.output = nn.Dense(classes)

    def forward(self, x):
        return self.output(self.features(x))


class MobileNetV2(nn.HybridBlock):
    """MobileNet v2 (Sandler et al., 2018): inverted residual blocks with linear bottlenecks,
    widths scaled by `multiplier`."""
    def __init__(self, multiplier=1.0, classes=1000, **kwargs):
        super().__init__(**kwargs)
        self.features = nn.HybridSequential()
        _add_conv(self.features, int(32 * multiplier), kernel=3, stride=2, pad=1, relu6=True)
        in_group = [int(x * multiplier) for x in [32] + [16] + [24] * 2 + [32] * 3 + [64] * 4
                    + [96] * 3 + [160] * 3]
        out_group = [int(x * multiplier) for x in [16] + [24] * 2 + [32] * 3 + [64] * 4
                     + [96] * 3 + [160] * 3 + [320]]
        ts = [1] + [6] * 16
        strides = [1, 2] * 2 + [1, 1, 2] + [1] * 6 + [2] + [1] * 3
        for in_c, c, t, s in zip(in_group, out_group, ts, strides):
            self.features.add(LinearBottleneck(in_channels=in_c, channels=c, t=t, stride=s))
        _add_conv(self.features, int(1280 * multiplier) if multiplier > 1.0 else 1280,
                  relu6=True)
        self.features.add(nn.GlobalAvgPool2D())
        self.output = nn.HybridSequential()
        self.output.add(nn.Conv2D(classes, 1, use_bias=False), nn.Flatten())

    def forward(self, x):
        return self.output(self.features(x))


def _file_suffix(multiplier):
    suffix = f"{multiplier:.2f}"
    return suffix[:-1] if suffix in ("1.00", "0.50") else suffix


def get_mobilenet(multiplier, pretrained=False, ctx=None, root=None, **kwargs):
    """MobileNet v1 (Howard et al., 2017) with width `multiplier`; `pretrained=True` loads MXNet's
    parameter file from `root`."""
    net = MobileNet(multiplier, **kwargs)
    return load_pretrained(net, f"mobilenet{_file_suffix(multiplier)}", pretrained, ctx, root)


def get_mobilenet_v2(multiplier, pretrained=False, ctx=None, root=None, **kwargs):
    """MobileNet v2 (Sandler et al., 2018) with width `multiplier`; `pretrained=True` loads MXNet's
    parameter file from `root`."""
    net = MobileNetV2(multiplier, **kwargs)
    return load_pretrained(net, f"mobilenetv2_{_file_suffix(multiplier)}", pretrained, ctx,
                           root)


def mobilenet1_0(**kwargs):
    """MobileNet v1 with width multiplier 1.0."""
    return get_mobilenet(1.0, **kwargs)
def mobilenet0_75(**kwargs):
    """MobileNet v1 with width multiplier 0.75."""
    return get_mobilenet(0.75, **kwargs)
def mobilenet0_5(**kwargs):
    """MobileNet v1 with width multiplier 0.5."""
    return get_mobilenet(0.5, **kwargs)
def mobilenet0_25(**kwargs):
    """MobileNet v1 with width multiplier 0.25."""
    return get_mobilenet(0.25, **kwargs)
def mobilenet_v2_1_0(**kwargs):
    """MobileNet v2 with width multiplier 1.0."""
    return get_mobilenet_v2(1.0, **kwargs)
def mobilenet_v2_0_75(**kwargs):
    """MobileNet v2 with width multiplier 0.75."""
    return get_mobilenet_v2(0.75, **kwargs)
def mobilenet_v2_0_5(**kwargs):
    """MobileNet v2 with width multiplier 0.5."""
    return get_mobilenet_v2(0.5, **kwargs)
def mobilenet_v2_0_25(**kwargs):
    """MobileNet v2 with width multiplier 0.25."""
    return get_mobilenet_v2(0.25, **kwargs)
