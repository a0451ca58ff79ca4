"""DenseNet (Huang et al. 2017) 121/161/169/201, laid out as MXNet's model_zoo builds it
(features.4.0.1.2.weight, ...), so its pretrained files load."""
from ... import nn
from ...contrib.nn import HybridConcurrent, Identity
from ._pretrained import load_pretrained


def _dense_layer(growth_rate, bn_size, dropout):
    new = nn.HybridSequential()
    new.add(nn.BatchNorm(), nn.Activation("relu"),
            nn.Conv2D(bn_size * growth_rate, kernel_size=1, use_bias=False),
            nn.BatchNorm(), nn.Activation("relu"),
            nn.Conv2D(growth_rate, kernel_size=3, padding=1, use_bias=False))
    if dropout:
        new.add(nn.Dropout(dropout))
    out = HybridConcurrent(axis=1)
    out.add(Identity(), new)
    return out


def _transition(channels):
    out = nn.HybridSequential()
    out.add(nn.BatchNorm(), nn.Activation("relu"),
            nn.Conv2D(channels, kernel_size=1, use_bias=False),
            nn.AvgPool2D(pool_size=2, strides=2))
    return out


class DenseNet(nn.HybridBlock):
    """DenseNet (Huang et al., 2017): dense blocks whose layers take every earlier feature map,
    joined by transition layers."""
    def __init__(self, num_init_features, growth_rate, block_config, bn_size=4, dropout=0,
                 classes=1000, **kwargs):
        super().__init__(**kwargs)
        self.features = nn.HybridSequential()
        self.features.add(nn.Conv2D(num_init_features, kernel_size=7, strides=2, padding=3,
                                    use_bias=False),
                          nn.BatchNorm(), nn.Activation("relu"),
                          nn.MaxPool2D(pool_size=3, strides=2, padding=1))
        channels = num_init_features
        for i, num_layers in enumerate(block_config):
            block = nn.HybridSequential()
            for _ in range(num_layers):
                block.add(_dense_layer(growth_rate, bn_size, dropout))
            self.features.add(block)
            channels += num_layers * growth_rate
            if i != len(block_config) - 1:
                channels //= 2
                self.features.add(_transition(channels))
        self.features.add(nn.BatchNorm(), nn.Activation("relu"), nn.AvgPool2D(pool_size=7),
                          nn.Flatten())
        self.output = nn.Dense(classes)

    def forward(self, x):
        return self.output(self.features(x))


densenet_spec = {121: (64, 32, [6, 12, 24, 16]), 161: (96, 48, [6, 12, 36, 24]),
                 169: (64, 32, [6, 12, 32, 32]), 201: (64, 32, [6, 12, 48, 32])}


def get_densenet(num_layers, pretrained=False, ctx=None, root=None, **kwargs):
    """A DenseNet of `num_layers` (121, 161, 169 or 201; Huang et al., 2017); `pretrained=True`
    loads MXNet's parameter file from `root`."""
    if num_layers not in densenet_spec:
        raise ValueError(f"get_densenet: num_layers must be one of {sorted(densenet_spec)}, "
                         f"got {num_layers}")
    net = DenseNet(*densenet_spec[num_layers], **kwargs)
    return load_pretrained(net, f"densenet{num_layers}", pretrained, ctx, root)


def densenet121(**kwargs):
    """DenseNet-121 (`get_densenet(121, ...)`)."""
    return get_densenet(121, **kwargs)
def densenet161(**kwargs):
    """DenseNet-161 (`get_densenet(161, ...)`)."""
    return get_densenet(161, **kwargs)
def densenet169(**kwargs):
    """DenseNet-169 (`get_densenet(169, ...)`)."""
    return get_densenet(169, **kwargs)
def densenet201(**kwargs):
    """DenseNet-201 (`get_densenet(201, ...)`)."""
    return get_densenet(201, **kwargs)
