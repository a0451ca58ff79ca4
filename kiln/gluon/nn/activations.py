"""Activation layers: thin HybridBlocks over kiln.npx functions."""
from ... import npx
from ... import init as kinit
from ..._core.base import KilnError
from ..block import HybridBlock
from ..parameter import Parameter


class Activation(HybridBlock):
    """Applies npx.activation(x, act_type): 'relu', 'sigmoid', 'tanh', 'softrelu', ..."""

    def __init__(self, activation, **kwargs):
        if not isinstance(activation, str):
            raise KilnError(f"Activation expects the name of an activation, got {activation!r}")
        object.__setattr__(self, "_mx_alias", activation)   # MXNet 1.x names it 'relu0_'
        super().__init__(**kwargs)
        self._act_type = activation

    def forward(self, x):
        return npx.activation(x, act_type=self._act_type)

    def __repr__(self):
        return f"Activation({self._act_type})"


class ReLU(HybridBlock):
    """The layer of `npx.relu`: `max(x, 0)`."""
    def forward(self, x):
        return npx.relu(x)


class Sigmoid(HybridBlock):
    """The layer of `npx.sigmoid`: `1 / (1 + exp(-x))`."""
    def forward(self, x):
        return npx.sigmoid(x)


class Tanh(HybridBlock):
    """The layer of `np.tanh`."""
    def forward(self, x):
        from ... import np as knp
        return knp.tanh(x)


class LeakyReLU(HybridBlock):
    """Leaky ReLU: `x` for `x > 0`, else `alpha * x` (`alpha >= 0`)."""
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
    """The layer of `npx.elu`: `x` for `x > 0`, else `alpha * (exp(x) - 1)`."""
    def __init__(self, alpha=1.0, **kwargs):
        super().__init__(**kwargs)
        self._alpha = alpha

    def forward(self, x):
        return npx.elu(x, self._alpha)


class SELU(HybridBlock):
    """The layer of `npx.selu`: a scaled ELU with fixed constants."""
    def forward(self, x):
        return npx.selu(x)


class SiLU(HybridBlock):
    """The layer of `npx.silu`: `x * sigmoid(x)`."""
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
    """The layer of `npx.gelu`, exact (`approximation='erf'`) or the tanh approximation."""
    def __init__(self, approximation="erf", **kwargs):
        super().__init__(**kwargs)
        if approximation not in ("erf", "tanh"):
            raise KilnError(f"GELU: approximation must be 'erf' or 'tanh', got "
                            f"{approximation!r}")
        self._approximation = approximation

    def forward(self, x):
        return npx.gelu(x, self._approximation)


class Softmax(HybridBlock):
    """The layer of `npx.softmax` along `axis`."""
    def __init__(self, axis=-1, **kwargs):
        super().__init__(**kwargs)
        self._axis = axis

    def forward(self, x):
        return npx.softmax(x, axis=self._axis)
