"""MXNet's model_zoo.vision networks that kiln builds: ResNet v1/v2 and VGG."""
from ....base import KilnError
from .resnet import (ResNetV1, ResNetV2, BasicBlockV1, BasicBlockV2, BottleneckV1,  # noqa
                     BottleneckV2, get_resnet, resnet18_v1, resnet34_v1, resnet50_v1,
                     resnet101_v1, resnet152_v1, resnet18_v2, resnet34_v2, resnet50_v2,
                     resnet101_v2, resnet152_v2)
from .vgg import (VGG, get_vgg, vgg11, vgg13, vgg16, vgg19, vgg11_bn, vgg13_bn,  # noqa
                  vgg16_bn, vgg19_bn)

_MODELS = {f.__name__: f for f in (
    resnet18_v1, resnet34_v1, resnet50_v1, resnet101_v1, resnet152_v1, resnet18_v2,
    resnet34_v2, resnet50_v2, resnet101_v2, resnet152_v2, vgg11, vgg13, vgg16, vgg19,
    vgg11_bn, vgg13_bn, vgg16_bn, vgg19_bn)}


def get_model(name, **kwargs):
    """A model by MXNet's name ('resnet18_v2', 'vgg19', ...), e.g. pretrained=True."""
    key = name.lower()
    if key not in _MODELS:
        raise KilnError(f"model_zoo.vision.get_model: kiln does not build {name!r}; "
                        f"available: {', '.join(sorted(_MODELS))}")
    return _MODELS[key](**kwargs)
