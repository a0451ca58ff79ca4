"""The CNN benchmark's models, built the same way in kiln and in PyTorch: d2l's LeNet (ReLU,
max-pool) and d2l's ResNet-18 for 96x96 single-channel images."""


def kiln_lenet():
    from kiln.gluon import nn
    net = nn.HybridSequential()
    net.add(nn.Conv2D(6, kernel_size=5, padding=2, activation="relu"),
            nn.MaxPool2D(pool_size=2, strides=2),
            nn.Conv2D(16, kernel_size=5, activation="relu"),
            nn.MaxPool2D(pool_size=2, strides=2),
            nn.Dense(120, activation="relu"), nn.Dense(84, activation="relu"), nn.Dense(10))
    return net


def kiln_resnet18():
    from kiln import npx
    from kiln.gluon import nn

    class Residual(nn.HybridBlock):
        def __init__(self, channels, use_1x1conv=False, strides=1):
            super().__init__()
            self.conv1 = nn.Conv2D(channels, kernel_size=3, padding=1, strides=strides)
            self.conv2 = nn.Conv2D(channels, kernel_size=3, padding=1)
            self.conv3 = nn.Conv2D(channels, kernel_size=1, strides=strides) \
                if use_1x1conv else None
            self.bn1, self.bn2 = nn.BatchNorm(), nn.BatchNorm()

        def forward(self, x):
            y = npx.relu(self.bn1(self.conv1(x)))
            y = self.bn2(self.conv2(y))
            if self.conv3 is not None:
                x = self.conv3(x)
            return npx.relu(y + x)

    def block(channels, n, first=False):
        blk = nn.HybridSequential()
        for i in range(n):
            if i == 0 and not first:
                blk.add(Residual(channels, use_1x1conv=True, strides=2))
            else:
                blk.add(Residual(channels))
        return blk

    net = nn.HybridSequential()
    net.add(nn.Conv2D(64, kernel_size=7, strides=2, padding=3), nn.BatchNorm(),
            nn.Activation("relu"), nn.MaxPool2D(pool_size=3, strides=2, padding=1))
    net.add(block(64, 2, first=True), block(128, 2), block(256, 2), block(512, 2))
    net.add(nn.GlobalAvgPool2D(), nn.Dense(10))
    return net


def torch_lenet(torch):
    nn = torch.nn
    return nn.Sequential(nn.Conv2d(1, 6, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2, 2),
                         nn.Conv2d(6, 16, 5), nn.ReLU(), nn.MaxPool2d(2, 2), nn.Flatten(),
                         nn.Linear(400, 120), nn.ReLU(), nn.Linear(120, 84), nn.ReLU(),
                         nn.Linear(84, 10))


def torch_resnet18(torch):
    nn = torch.nn

    class Residual(nn.Module):
        def __init__(self, cin, cout, use_1x1conv=False, stride=1):
            super().__init__()
            self.conv1 = nn.Conv2d(cin, cout, 3, padding=1, stride=stride)
            self.conv2 = nn.Conv2d(cout, cout, 3, padding=1)
            self.conv3 = nn.Conv2d(cin, cout, 1, stride=stride) if use_1x1conv else None
            self.bn1, self.bn2 = nn.BatchNorm2d(cout), nn.BatchNorm2d(cout)

        def forward(self, x):
            y = torch.relu(self.bn1(self.conv1(x)))
            y = self.bn2(self.conv2(y))
            if self.conv3 is not None:
                x = self.conv3(x)
            return torch.relu(y + x)

    def block(cin, cout, n, first=False):
        layers = []
        for i in range(n):
            if i == 0 and not first:
                layers.append(Residual(cin, cout, use_1x1conv=True, stride=2))
            else:
                layers.append(Residual(cout, cout))
        return layers

    return nn.Sequential(nn.Conv2d(1, 64, 7, stride=2, padding=3), nn.BatchNorm2d(64), nn.ReLU(),
                         nn.MaxPool2d(3, 2, 1), *block(64, 64, 2, first=True),
                         *block(64, 128, 2), *block(128, 256, 2), *block(256, 512, 2),
                         nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(512, 10))
