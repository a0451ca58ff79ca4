"""Containers and basic layers: Sequential, Dense, Dropout, Flatten, Embedding, Lambda..."""
import warnings

from ... import np as knp, npx
from ..._core.base import KilnError, where_in_user_code
from .. import f_namespace
from ..block import Block, HybridBlock, _deref
from ..parameter import Parameter
from .activations import Activation
from .inputs import expect_batch, expect_dtype


# ---- containers ------------------------------------------------------------------------------
class _SequentialMixin:
    """Children named '0', '1', ... run one after another."""

    def add(self, *blocks):
        for block in blocks:
            self._children[str(len(self._children))] = block
        self._drop_compiled()
        return self

    def forward(self, x, *args):
        for block in self._children.values():
            x = _deref(block)(x, *args)
            args = ()
            if isinstance(x, (tuple, list)):
                x, args = x[0], tuple(x[1:])
        return (x,) + args if args else x

    def _blocks(self):
        return [_deref(b) for b in self._children.values()]

    def __getitem__(self, key):
        blocks = self._blocks()
        if isinstance(key, slice):
            net = type(self)()
            net.add(*blocks[key])
            return net
        return blocks[key]

    def __len__(self):
        return len(self._children)

    def __iter__(self):
        return iter(self._blocks())


class Sequential(_SequentialMixin, Block):
    """A Block that runs its children in the order they were added (`add`), each on the previous
    one's output."""

    def hybridize(self, active=True, **kwargs):
        blocks = self._blocks()
        if active and blocks and all(isinstance(b, HybridBlock) for b in blocks):
            # MXNet says so too: only a HybridSequential compiles the chain as one graph
            warnings.warn(f"All children of this Sequential layer '{self.name}' are "
                          "HybridBlocks. Consider using HybridSequential for the best "
                          "performance.", stacklevel=2)
        super().hybridize(active, **kwargs)


class HybridSequential(_SequentialMixin, HybridBlock):
    """A HybridBlock that runs its children in the order they were added (`add`); hybridized, the
    whole chain becomes one compiled graph."""
    pass


class _ConcatenateMixin:
    """Runs every child on the same input and concatenates their outputs along `axis`."""

    def __init__(self, axis=-1, **kwargs):
        super().__init__(**kwargs)
        self._axis = axis

    def add(self, *blocks):
        for block in blocks:
            self._children[str(len(self._children))] = block
        self._drop_compiled()
        return self

    def forward(self, x):
        return knp.concatenate([_deref(b)(x) for b in self._children.values()], axis=self._axis)


class Concatenate(_ConcatenateMixin, Block):
    """A Block that runs each child on the same input and concatenates their outputs along `axis`.
    """
    pass


class HybridConcatenate(_ConcatenateMixin, HybridBlock):
    """A HybridBlock that runs each child on the same input and concatenates their outputs along
    `axis`."""
    pass


# ---- layers with parameters ------------------------------------------------------------------
def _features(shape, flatten):
    """How many input features a Dense layer sees for an input of this shape."""
    if flatten and len(shape) >= 2:
        n = 1
        for d in shape[1:]:
            n *= d
        return n
    return shape[-1]


class Dense(HybridBlock):
    """y = activation(x @ weight.T + bias); weight has shape (units, in_units)."""

    def __init__(self, units, activation=None, use_bias=True, flatten=True, dtype="float32",
                 weight_initializer=None, bias_initializer="zeros", in_units=0, **kwargs):
        super().__init__(**kwargs)
        self._units, self._in_units = units, in_units
        self._flatten, self._use_bias = flatten, use_bias
        self.weight = Parameter("weight", shape=(units, in_units), init=weight_initializer,
                                dtype=dtype, allow_deferred_init=True)
        self.bias = Parameter("bias", shape=(units,), init=bias_initializer, dtype=dtype,
                              allow_deferred_init=True) if use_bias else None
        self.act = Activation(activation) if activation is not None else None

    def _expected_input(self):
        n = self.weight.shape[1] or "features"
        return f"(batch, {n}) or (batch, ...) flattening to it" if self._flatten else \
            f"(..., {n})"

    def infer_shape(self, x, *args):
        expect_batch(self, x, self._expected_input())
        self.weight.shape = (self._units, _features(x.shape, self._flatten))

    def forward(self, x):
        expect_batch(self, x, self._expected_input())
        expect_dtype(self, x, self.weight)
        weight = self.weight.data()
        if _features(x.shape, self._flatten) != weight.shape[1]:
            raise KilnError(f"{self.name} (Dense {weight.shape[1]} -> {self._units}): expected "
                            f"input with {weight.shape[1]} features "
                            f"{'after flattening ' if self._flatten else ''}but got input of "
                            f"shape {tuple(x.shape)}{where_in_user_code()}")
        bias = self.bias.data() if self.bias is not None else None
        y = npx.fully_connected(x, weight, bias, num_hidden=self._units,
                                no_bias=bias is None, flatten=self._flatten)
        return self.act(y) if self.act is not None else y

    def __repr__(self):
        shape = self.weight.shape
        act = repr(self.act) if self.act is not None else "linear"
        return f"Dense({shape[1] if shape[1] else 0} -> {shape[0]}, {act})"


class Embedding(HybridBlock):
    """Rows of a (input_dim, output_dim) table, picked by integer indices."""

    def __init__(self, input_dim, output_dim, dtype="float32", weight_initializer=None,
                 sparse_grad=False, **kwargs):
        super().__init__(**kwargs)
        self._input_dim, self._output_dim = input_dim, output_dim
        # sparse_grad: the gradient is row_sparse, holding only the rows looked up (MXNet 1.x)
        self.weight = Parameter("weight", shape=(input_dim, output_dim),
                                init=weight_initializer, dtype=dtype,
                                grad_stype="row_sparse" if sparse_grad else "default")

    def forward(self, x):
        return npx.embedding(x, self.weight.data(), input_dim=self._input_dim,
                             output_dim=self._output_dim)

    def __repr__(self):
        return f"Embedding({self._input_dim} -> {self._output_dim}, {self.weight.dtype.name})"


# ---- layers without parameters ---------------------------------------------------------------
class Dropout(HybridBlock):
    """Zeroes a fraction `rate` of the inputs in training (autograd.record) only."""

    def __init__(self, rate, axes=(), **kwargs):
        super().__init__(**kwargs)
        if not 0 <= rate <= 1:
            raise KilnError(f"Dropout: rate must be in [0, 1], got {rate}{where_in_user_code()}")
        self._rate, self._axes = rate, tuple(axes)

    def forward(self, x):
        return npx.dropout(x, p=self._rate, axes=self._axes)

    def __repr__(self):
        return f"Dropout(p = {self._rate}, axes={self._axes})"


class Flatten(HybridBlock):
    """(N, d1, d2, ...) -> (N, d1 * d2 * ...)."""

    def forward(self, x):
        expect_batch(self, x, "(batch, ...)")
        features = 1
        for d in x.shape[1:]:
            features *= d
        # the size, not -1: with a dimension of 0 (an empty batch) -1 is ambiguous
        return knp.reshape(x, (x.shape[0], features))


class Identity(HybridBlock):
    """A layer that returns its input unchanged."""
    def forward(self, x):
        return x


def _resolve_function(function, where):
    if isinstance(function, str):
        for space in (npx, knp):
            if hasattr(space, function):
                return getattr(space, function)
        raise KilnError(f"{where}: no function named {function!r} in kiln.np or kiln.npx"
                        f"{where_in_user_code()}")
    if not callable(function):
        raise KilnError(f"{where}: expected a function or its name, got {function!r}"
                        f"{where_in_user_code()}")
    return function


class Lambda(Block):
    """Wraps fn(x, ...) (or the name of a kiln.np / kiln.npx function) as a Block."""

    def __init__(self, function, prefix=None):
        super().__init__()
        self._func = _resolve_function(function, "Lambda")
        self._func_name = function if isinstance(function, str) else getattr(
            function, "__name__", repr(function))

    def forward(self, *args):
        return self._func(*args)

    def __repr__(self):
        return f"Lambda({self._func_name})"


class HybridLambda(HybridBlock):
    """Wraps fn(F, x, ...) (or a function name looked up on F) as a HybridBlock."""

    def __init__(self, function, prefix=None):
        super().__init__()
        if isinstance(function, str):
            name = function
            self._func = lambda F, *args: getattr(F, name)(*args)
            self._func_name = name
        elif callable(function):
            self._func = function
            self._func_name = getattr(function, "__name__", repr(function))
        else:
            raise KilnError(f"HybridLambda: expected a function or its name, got {function!r}")

    def forward(self, *args):
        F = f_namespace.current()
        return self._func(F, *args)

    def __repr__(self):
        return f"HybridLambda({self._func_name})"
