"""AlexNet (Krizhevsky et al. 2012) laid out as MXNet's model_zoo builds it, so parameter
names (features.0.weight, ..., output.weight) match its pretrained file."""
from ... import nn
from ._pretrained import load_pretrained


class AlexNet(nn.HybridBlock):
    """AlexNet (Krizhevsky et al., 2012): five convolutions and three dense layers, for `classes`
    classes."""
    def __init__(self, classes=1000, **kwargs):
        super().__init__(**kwargs)
        self.features = nn.HybridSequential()
        self.features.add(
            nn.Conv2D(64, kernel_size=11, strides=4, padding=2, activation="relu"),
            nn.MaxPool2D(pool_size=3, strides=2),
            nn.Conv2D(192, kernel_size=5, padding=2, activation="relu"),
            nn.MaxPool2D(pool_size=3, strides=2),
            nn.Conv2D(384, kernel_size=3, padding=1, activation="relu"),
            nn.Conv2D(256, kernel_size=3, padding=1, activation="relu"),
            nn.Conv2D(256, kernel_size=3, padding=1, activation="relu"),
            nn.MaxPool2D(pool_size=3, strides=2),
            nn.Flatten(),
            nn.Dense(4096, activation="relu"), nn.Dropout(0.5),
            nn.Dense(4096, activation="relu"), nn.Dropout(0.5))
        self.output = nn.Dense(classes)

    def forward(self, x):
        return self.output(self.features(x))


def alexnet(pretrained=False, ctx=None, root=None, **kwargs):
    """AlexNet (Krizhevsky et al., 2012); with `pretrained=True` its parameters are loaded from
    MXNet's model file under `root`."""
    return load_pretrained(AlexNet(**kwargs), "alexnet", pretrained, ctx, root)
