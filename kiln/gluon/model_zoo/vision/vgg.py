"""VGG (Simonyan & Zisserman 2014), laid out as MXNet's model_zoo builds it, so parameter
names (features.0.weight, ..., output.weight) match its files."""
from ... import nn
from .... import init
from ._pretrained import load_pretrained


class VGG(nn.HybridBlock):
    """VGG (Simonyan and Zisserman, 2014): stages of 3x3 convolutions (`layers` per stage,
    `filters` each) and max pooling, then three dense layers."""
    def __init__(self, layers, filters, classes=1000, batch_norm=False, **kwargs):
        super().__init__(**kwargs)
        if len(layers) != len(filters):
            raise ValueError(f"VGG: {len(layers)} stages need as many filter counts, got "
                             f"{len(filters)}")
        self.features = nn.HybridSequential()
        for num, channels in zip(layers, filters):
            for _ in range(num):
                self.features.add(nn.Conv2D(
                    channels, kernel_size=3, padding=1, bias_initializer="zeros",
                    weight_initializer=init.Xavier(rnd_type="gaussian", factor_type="out",
                                                   magnitude=2)))
                if batch_norm:
                    self.features.add(nn.BatchNorm())
                self.features.add(nn.Activation("relu"))
            self.features.add(nn.MaxPool2D(strides=2))
        for _ in range(2):
            self.features.add(nn.Dense(4096, activation="relu", weight_initializer="normal",
                                       bias_initializer="zeros"), nn.Dropout(rate=0.5))
        self.output = nn.Dense(classes, weight_initializer="normal", bias_initializer="zeros")

    def forward(self, x):
        return self.output(self.features(x))


_SPEC = {11: [1, 1, 2, 2, 2], 13: [2, 2, 2, 2, 2], 16: [2, 2, 3, 3, 3], 19: [2, 2, 4, 4, 4]}
_FILTERS = [64, 128, 256, 512, 512]


def get_vgg(num_layers, pretrained=False, ctx=None, root=None, **kwargs):
    """A VGG network of `num_layers` (11, 13, 16 or 19; Simonyan and Zisserman, 2014), with batch
    normalization when `batch_norm=True`; `pretrained=True` loads MXNet's parameter file from
    `root`."""
    if num_layers not in _SPEC:
        raise ValueError(f"get_vgg: num_layers must be one of {sorted(_SPEC)}, got "
                         f"{num_layers}")
    net = VGG(_SPEC[num_layers], _FILTERS, **kwargs)
    name = f"vgg{num_layers}" + ("_bn" if kwargs.get("batch_norm") else "")
    return load_pretrained(net, name, pretrained, ctx, root)


def vgg11(**kwargs):
    """VGG-11."""
    return get_vgg(11, **kwargs)
def vgg13(**kwargs):
    """VGG-13."""
    return get_vgg(13, **kwargs)
def vgg16(**kwargs):
    """VGG-16."""
    return get_vgg(16, **kwargs)
def vgg19(**kwargs):
    """VGG-19."""
    return get_vgg(19, **kwargs)
def vgg11_bn(**kwargs):
    """VGG-11 with batch normalization."""
    return get_vgg(11, batch_norm=True, **kwargs)
def vgg13_bn(**kwargs):
    """VGG-13 with batch normalization."""
    return get_vgg(13, batch_norm=True, **kwargs)
def vgg16_bn(**kwargs):
    """VGG-16 with batch normalization."""
    return get_vgg(16, batch_norm=True, **kwargs)
def vgg19_bn(**kwargs):
    """VGG-19 with batch normalization."""
    return get_vgg(19, batch_norm=True, **kwargs)
