"""MXNet's model_zoo.vision networks that kiln builds: ResNet v1/v2, VGG, AlexNet, DenseNet,
Inception v3, MobileNet v1/v2 and SqueezeNet."""
from ...._core.base import KilnError
from .resnet import (ResNetV1, ResNetV2, BasicBlockV1, BasicBlockV2, BottleneckV1,  # noqa
                     BottleneckV2, get_resnet, resnet18_v1, resnet34_v1, resnet50_v1,
                     resnet101_v1, resnet152_v1, resnet18_v2, resnet34_v2, resnet50_v2,
                     resnet101_v2, resnet152_v2)
from .vgg import (VGG, get_vgg, vgg11, vgg13, vgg16, vgg19, vgg11_bn, vgg13_bn,  # noqa
                  vgg16_bn, vgg19_bn)

from .alexnet import AlexNet, alexnet  # noqa: F401,E402
from .densenet import (DenseNet, get_densenet, densenet121, densenet161,  # noqa: F401,E402
                       densenet169, densenet201)
from .inception import Inception3, inception_v3  # noqa: F401,E402
from .mobilenet import (MobileNet, MobileNetV2, get_mobilenet, get_mobilenet_v2,  # noqa
                        mobilenet1_0, mobilenet0_75, mobilenet0_5, mobilenet0_25,
                        mobilenet_v2_1_0, mobilenet_v2_0_75, mobilenet_v2_0_5,
                        mobilenet_v2_0_25)
from .squeezenet import SqueezeNet, get_squeezenet, squeezenet1_0, squeezenet1_1  # noqa

_MODELS = {f.__name__: f for f in (
    resnet18_v1, resnet34_v1, resnet50_v1, resnet101_v1, resnet152_v1, resnet18_v2,
    resnet34_v2, resnet50_v2, resnet101_v2, resnet152_v2, vgg11, vgg13, vgg16, vgg19,
    vgg11_bn, vgg13_bn, vgg16_bn, vgg19_bn, alexnet, densenet121, densenet161, densenet169,
    densenet201, inception_v3, squeezenet1_0, squeezenet1_1, mobilenet1_0, mobilenet0_75,
    mobilenet0_5, mobilenet0_25, mobilenet_v2_1_0, mobilenet_v2_0_75, mobilenet_v2_0_5,
    mobilenet_v2_0_25)}
# MXNet's get_model names these by their pretrained file names
_MODELS.update({"inceptionv3": inception_v3, "squeezenet1.0": squeezenet1_0,
                "squeezenet1.1": squeezenet1_1, "mobilenet1.0": mobilenet1_0,
                "mobilenet0.75": mobilenet0_75, "mobilenet0.5": mobilenet0_5,
                "mobilenet0.25": mobilenet0_25, "mobilenetv2_1.0": mobilenet_v2_1_0,
                "mobilenetv2_0.75": mobilenet_v2_0_75, "mobilenetv2_0.5": mobilenet_v2_0_5,
                "mobilenetv2_0.25": mobilenet_v2_0_25})


def get_model(name, **kwargs):
    """A model by MXNet's name ('resnet18_v2', 'vgg19', ...), e.g. pretrained=True."""
    key = name.lower()
    if key not in _MODELS:
        raise KilnError(f"model_zoo.vision.get_model: kiln does not build {name!r}; "
                        f"available: {', '.join(sorted(_MODELS))}")
    return _MODELS[key](**kwargs)
