"""kiln.init: parameter initializers (MXNet's `mxnet.init`).

An initializer is called as `init(name, arr)` and fills the kiln array `arr` in place. Which
method fills it depends on the parameter's name, as in MXNet: names ending in `weight` go to
`_init_weight`, `bias` to `_init_bias`, `gamma` to `_init_gamma`, and so on. A parameter's
own initializer (`Dense(..., bias_initializer='zeros')`) reaches `_init_weight` directly,
through the `__init__` attribute of the InitDesc it is called with.

Random draws go through kiln.np.random, so `np.random.seed` makes initialization repeatable.
"""
import math

import numpy as _np

from ._core.base import KilnError, where_in_user_code

_REGISTRY = {}


def register(klass):
    """Class decorator: make an Initializer creatable by its lower-case class name."""
    if not (isinstance(klass, type) and issubclass(klass, Initializer)):
        raise KilnError(f"init.register: expected an Initializer subclass, got {klass!r}")
    _REGISTRY[klass.__name__.lower()] = klass
    return klass


def alias(*names):
    """Class decorator: extra string names for an Initializer ('zeros' for Zero...)."""
    def wrap(klass):
        for n in names:
            _REGISTRY[n.lower()] = klass
        return klass
    return wrap


def create(init):
    """An Initializer from an Initializer, a class, a registered name or None."""
    if init is None or isinstance(init, Initializer):
        return init
    if isinstance(init, type) and issubclass(init, Initializer):
        return init()
    if isinstance(init, str) and init.lstrip().startswith("["):
        import json   # Initializer.dumps(): '["name", {kwargs}]', as MXNet's attributes hold
        try:
            name, kwargs = json.loads(init)
            klass = _REGISTRY[name.lower()]
        except (ValueError, TypeError, KeyError):
            raise KilnError(f"cannot read initializer {init!r}: expected "
                            "'[\"name\", {arguments}]' with a known name; known names: "
                            f"{', '.join(sorted(_REGISTRY))}{where_in_user_code()}") from None
        return klass(**kwargs)
    if isinstance(init, str):
        klass = _REGISTRY.get(init.lower())
        if klass is None:
            raise KilnError(f"unknown initializer {init!r}; known names: "
                            f"{', '.join(sorted(_REGISTRY))}{where_in_user_code()}")
        return klass()
    raise KilnError(f"expected an Initializer, its name or None, got {init!r}"
                    f"{where_in_user_code()}")


class InitDesc(str):
    """A parameter name carrying attributes; `attrs['__init__']` forces an initializer."""

    def __new__(cls, name, attrs=None, global_init=None):
        obj = super().__new__(cls, name)
        obj.attrs = dict(attrs or {})
        obj.global_init = global_init
        return obj


def _fill(arr, value):
    arr[:] = value


def _uniform(arr, low, high):
    from . import np as knp
    _fill(arr, knp.random.uniform(low, high, size=arr.shape, dtype=arr.dtype))


def _normal(arr, loc, scale):
    from . import np as knp
    _fill(arr, knp.random.normal(loc, scale, size=arr.shape, dtype=arr.dtype))


class Initializer:
    """Base class: subclasses override `_init_weight(self, name, data)` (and maybe others)."""

    def __init__(self, **kwargs):
        self._kwargs = kwargs
        self._verbose = False
        self._print_func = None

    def set_verbosity(self, verbose=False, print_func=None):
        self._verbose = verbose
        self._print_func = print_func
        return self

    def _verbose_print(self, desc, init, arr):
        if not self._verbose:
            return
        stat = self._print_func(arr) if self._print_func else (
            f"mean={float(_np.mean(arr.asnumpy())):.4g}")
        print(f"Initialized {desc} as {init}: {stat}")

    def dumps(self):
        import json
        return json.dumps([type(self).__name__.lower(), self._kwargs])

    def __repr__(self):
        args = ", ".join(f"{k}={v!r}" for k, v in self._kwargs.items())
        return f"{type(self).__name__}({args})"

    def __eq__(self, other):
        """MXNet's: the same kind of initializer with the same arguments."""
        if not isinstance(other, Initializer):
            return NotImplemented
        return type(self) is type(other) and self.dumps() == other.dumps()

    __hash__ = object.__hash__       # initializers stay usable as keys, by identity

    def __call__(self, desc, arr):
        if not isinstance(desc, InitDesc):
            desc = InitDesc(str(desc))
        if desc.global_init is None:
            desc.global_init = self
        own = desc.attrs.get("__init__")
        if own:
            create(own)._init_weight(desc, arr)
            self._verbose_print(desc, own, arr)
            return
        name = desc.lower()
        if name.endswith("weight"):
            self._init_weight(desc, arr)
        elif name.endswith("bias"):
            self._init_bias(desc, arr)
        elif name.endswith("gamma"):
            self._init_gamma(desc, arr)
        elif name.endswith("beta"):
            self._init_beta(desc, arr)
        elif name.endswith(("running_mean", "moving_mean", "min")):
            self._init_zero(desc, arr)
        elif name.endswith(("running_var", "moving_var", "max")):
            self._init_one(desc, arr)
        elif name.endswith("weight_quantize"):      # an int8 model's weight (quantize_model)
            self._init_quantized_weight(desc, arr)
        elif name.endswith("bias_quantize"):
            self._init_zero(desc, arr)
        else:
            self._init_default(desc, arr)
        self._verbose_print(desc, self, arr)

    def _init_weight(self, name, arr):
        raise NotImplementedError(f"{type(self).__name__} must implement _init_weight(self, "
                                  "name, data)")

    def _init_bias(self, name, arr):
        _fill(arr, 0.0)

    def _init_gamma(self, name, arr):
        _fill(arr, 1.0)

    def _init_beta(self, name, arr):
        _fill(arr, 0.0)

    def _init_zero(self, name, arr):
        _fill(arr, 0.0)

    def _init_one(self, name, arr):
        _fill(arr, 1.0)

    def _init_quantized_weight(self, name, arr):
        # MXNet 1.9's: one random integer in [-127, 127) for the whole tensor
        from . import np as knp
        _fill(arr, float(knp.random.randint(-127, 127)))

    def _init_default(self, name, arr):
        # MXNet refuses unknown names; a custom parameter ('scale', 'alpha') is most often a
        # weight-like tensor, so treat it as one instead of failing.
        self._init_weight(name, arr)


@register
@alias("zeros")
class Zero(Initializer):
    """Initializes to zeros (also known as 'zeros')."""
    def _init_weight(self, name, arr):
        _fill(arr, 0.0)


@register
@alias("ones")
class One(Initializer):
    """Initializes to ones (also known as 'ones')."""
    def _init_weight(self, name, arr):
        _fill(arr, 1.0)


@register
class Constant(Initializer):
    """Initializes every element to `value`."""
    def __init__(self, value=0.0):
        super().__init__(value=value)
        self.value = value

    def _init_weight(self, name, arr):
        _fill(arr, self.value)

    _init_default = _init_weight

    def dumps(self):
        """As MXNet: an array value is written as nested lists (JSON has no arrays)."""
        value = self._kwargs["value"]
        if not _np.isscalar(value):
            self._kwargs["value"] = (value.asnumpy() if hasattr(value, "asnumpy") else
                                     _np.asarray(value)).tolist()
        return super().dumps()


@register
class Uniform(Initializer):
    """Uniform in [-scale, scale]."""

    def __init__(self, scale=0.07):
        super().__init__(scale=scale)
        self.scale = scale

    def _init_weight(self, name, arr):
        _uniform(arr, -self.scale, self.scale)


@register
class Normal(Initializer):
    """Gaussian with mean 0 and standard deviation sigma."""

    def __init__(self, sigma=0.01):
        super().__init__(sigma=sigma)
        self.sigma = sigma

    def _init_weight(self, name, arr):
        _normal(arr, 0.0, self.sigma)


def _fans(name, shape):
    if len(shape) < 2:
        raise KilnError(f"Xavier-style initialization of {name!r} needs at least 2 dimensions, "
                        f"got shape {tuple(shape)}{where_in_user_code()}")
    receptive = int(_np.prod(shape[2:])) if len(shape) > 2 else 1
    return shape[1] * receptive, shape[0] * receptive


@register
class Xavier(Initializer):
    """Glorot init: scale = sqrt(magnitude / fan), fan picked by factor_type."""

    def __init__(self, rnd_type="uniform", factor_type="avg", magnitude=3):
        super().__init__(rnd_type=rnd_type, factor_type=factor_type, magnitude=magnitude)
        if rnd_type not in ("uniform", "gaussian"):
            raise KilnError(f"Xavier: rnd_type must be 'uniform' or 'gaussian', got {rnd_type!r}")
        if factor_type not in ("avg", "in", "out"):
            raise KilnError(f"Xavier: factor_type must be 'avg', 'in' or 'out', got "
                            f"{factor_type!r}")
        self.rnd_type, self.factor_type, self.magnitude = rnd_type, factor_type, float(magnitude)

    def _init_weight(self, name, arr):
        fan_in, fan_out = _fans(name, arr.shape)
        factor = {"avg": (fan_in + fan_out) / 2.0, "in": fan_in, "out": fan_out}[self.factor_type]
        scale = math.sqrt(self.magnitude / factor)
        if self.rnd_type == "uniform":
            _uniform(arr, -scale, scale)
        else:
            _normal(arr, 0.0, scale)


@register
class MSRAPrelu(Xavier):
    """He init for PReLU/ReLU nets: Gaussian Xavier with magnitude 2 / (1 + slope^2)."""

    def __init__(self, factor_type="avg", slope=0.25):
        super().__init__("gaussian", factor_type, 2.0 / (1 + slope ** 2))
        self._kwargs = {"factor_type": factor_type, "slope": slope}


@register
class Orthogonal(Initializer):
    """A (scaled) orthogonal matrix, from the QR decomposition of a Gaussian draw."""

    def __init__(self, scale=1.414, rand_type="uniform"):
        super().__init__(scale=scale, rand_type=rand_type)
        self.scale, self.rand_type = scale, rand_type

    def _init_weight(self, name, arr):
        from . import np as knp
        rows = arr.shape[0]
        cols = int(_np.prod(arr.shape[1:])) if arr.ndim > 1 else 1
        if self.rand_type == "uniform":
            draw = knp.random.uniform(-1.0, 1.0, size=(rows, cols), dtype="float64")
        else:
            draw = knp.random.normal(0.0, 1.0, size=(rows, cols), dtype="float64")
        u, _, v = _np.linalg.svd(draw.asnumpy(), full_matrices=False)
        q = u if u.shape == (rows, cols) else v
        _fill(arr, (self.scale * q).reshape(arr.shape).astype(arr.dtype))


@register
class Mixed(Initializer):
    """Pick an initializer by regex over the parameter name: Mixed(['bias', '.*'], [...])."""

    def __init__(self, patterns, initializers):
        super().__init__()
        import re
        if len(patterns) != len(initializers):
            raise KilnError("Mixed: patterns and initializers must have the same length")
        self.map = [(re.compile(p), create(i)) for p, i in zip(patterns, initializers)]

    def __call__(self, desc, arr):
        for pattern, init in self.map:
            if pattern.match(str(desc)):
                init(desc, arr)
                return
        raise KilnError(f"Mixed: no pattern matches parameter {str(desc)!r}; add '.*' last "
                        "as a default")


@register
class Bilinear(Initializer):
    """Bilinear upsampling kernels for a (..., kh, kw) transposed-convolution weight (the
    FCN recipe): both axes use the width's factor f = ceil(kw / 2), as MXNet does."""

    def _init_weight(self, name, arr):
        kh, kw = arr.shape[-2:]
        f = _np.ceil(kw / 2.0)
        c = (2 * f - 1 - f % 2) / (2.0 * f)
        ramp = lambda n: 1 - _np.abs(_np.arange(n) / f - c)  # noqa: E731
        _fill(arr, _np.broadcast_to(_np.outer(ramp(kh), ramp(kw)), arr.shape)
              .astype(_np.float32))


@register
class LSTMBias(Initializer):
    """Zeros, with the forget gate's quarter (LSTM gates i, f, c, o) at forget_bias."""

    def __init__(self, forget_bias=1.0):
        super().__init__(forget_bias=forget_bias)
        self.forget_bias = forget_bias

    def _init_weight(self, name, arr):
        value = _np.zeros(arr.shape, _np.float32)
        hidden = arr.shape[0] // 4
        value[hidden:2 * hidden] = self.forget_bias
        _fill(arr, value)


class Load:
    """Initialize from saved values (an nd.save file or a dict; 'arg:'/'aux:' prefixes
    dropped), and names not there with default_init."""

    def __init__(self, param, default_init=None, verbose=False):
        if isinstance(param, str):     # MXNet's binary format (nd.save) or kiln's npz
            from .export.mxnet_params import read_any
            param = read_any(param, "init.Load")
        if not isinstance(param, dict):
            raise KilnError(f"init.Load: expected a file of named arrays or a dict, got "
                            f"{type(param).__name__}")
        self.param = {k[4:] if k.startswith(("arg:", "aux:")) else k: v
                      for k, v in param.items()}
        self.default_init, self.verbose = default_init, verbose

    def __call__(self, name, arr):
        name = str(name)
        if name in self.param:
            value = self.param[name]
            if tuple(value.shape) != tuple(arr.shape):
                raise KilnError(f"init.Load: {name!r} has shape {tuple(arr.shape)}, the "
                                f"loaded value {tuple(value.shape)}")
            _fill(arr, value.asnumpy() if hasattr(value, "asnumpy") else _np.asarray(value))
        elif self.default_init is None:
            raise KilnError(f"init.Load: {name!r} is not among the loaded values "
                            f"({sorted(self.param)[:6]}...) and there is no default_init")
        else:
            self.default_init(name, arr)


__all__ = ["Initializer", "InitDesc", "register", "create", "Zero", "One", "Constant",
           "Uniform", "Normal", "Xavier", "MSRAPrelu", "Orthogonal", "Mixed", "Bilinear",
           "LSTMBias", "Load"]
