"""Activation layers: thin HybridBlocks over kiln.npx functions."""
from ... import npx
from ... import init as kinit
from ..._core.base import KilnError
from ..block import HybridBlock
from ..parameter import Parameter


class Activation(HybridBlock):
    """Applies npx.activation(x, act_type): 'relu', 'sigmoid', 'tanh', 'softrelu', ..."""

    def __init__(self, activation, **kwargs):
        super().__init__(**kwargs)
        if not isinstance(activation, str):
            raise KilnError(f"Activation expects the name of an activation, got {activation!r}")
        self._act_type = activation

    def forward(self, x):
        return npx.activation(x, act_type=self._act_type)

    def __repr__(self):
        return f"Activation({self._act_type})"


class ReLU(HybridBlock):
    def forward(self, x):
        return npx.relu(x)


class Sigmoid(HybridBlock):
    def forward(self, x):
        return npx.sigmoid(x)


class Tanh(HybridBlock):
    def forward(self, x):
        from ... import np as knp
        return knp.tanh(x)


class LeakyReLU(HybridBlock):
    def __init__(self, alpha, **kwargs):
        super().__init__(**kwargs)
        if alpha < 0:
            raise KilnError(f"LeakyReLU: alpha must be >= 0, got {alpha}")
        self._alpha = alpha

    def forward(self, x):
        return npx.leaky_relu(x, act_type="leaky", slope=self._alpha)

    def __repr__(self):
        return f"LeakyReLU({self._alpha})"


class PReLU(HybridBlock):
    """Leaky ReLU with a learned slope per channel (in_channels of them, 1 by default)."""

    def __init__(self, alpha_initializer=kinit.Constant(0.25), in_channels=1, **kwargs):
        super().__init__(**kwargs)
        self.alpha = Parameter("alpha", shape=(in_channels,), init=alpha_initializer)

    def forward(self, x):
        return npx.leaky_relu(x, gamma=self.alpha.data(), act_type="prelu")


class ELU(HybridBlock):
    def __init__(self, alpha=1.0, **kwargs):
        super().__init__(**kwargs)
        self._alpha = alpha

    def forward(self, x):
        return npx.elu(x, self._alpha)


class SELU(HybridBlock):
    def forward(self, x):
        return npx.selu(x)


class SiLU(HybridBlock):
    def forward(self, x):
        return npx.silu(x)


class Swish(HybridBlock):
    """x * sigmoid(beta * x)."""

    def __init__(self, beta=1.0, **kwargs):
        super().__init__(**kwargs)
        self._beta = beta

    def forward(self, x):
        return x * npx.sigmoid(x * self._beta) if self._beta != 1.0 else npx.silu(x)


class GELU(HybridBlock):
    def __init__(self, approximation="erf", **kwargs):
        super().__init__(**kwargs)
        if approximation not in ("erf", "tanh"):
            raise KilnError(f"GELU: approximation must be 'erf' or 'tanh', got "
                            f"{approximation!r}")
        self._approximation = approximation

    def forward(self, x):
        return npx.gelu(x, self._approximation)


class Softmax(HybridBlock):
    def __init__(self, axis=-1, **kwargs):
        super().__init__(**kwargs)
        self._axis = axis

    def forward(self, x):
        return npx.softmax(x, axis=self._axis)
