"""The NumPy-style methods of kiln's ndarray, each a thin call of the kiln.np function."""

_api = None  # kiln.np, which sits above the core and binds itself here when imported


def bind_numpy(namespace):
    """Make `namespace` (kiln.np) the functions these methods call."""
    global _api
    _api = namespace


def _np_api():
    return _api


def _written(result, out):
    """`result`, or `out` holding it when an array `out` is given (NumPy's `out=`)."""
    if out is None:
        return result
    out[...] = result
    return out


class NumpyMethods:
    """Mixed into ndarray: `x.sum(axis=1)` is `kiln.np.sum(x, axis=1)`, and so on."""
    __slots__ = ()

    def reshape(self, *shape, **kwargs):
        if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
            shape = tuple(shape[0])
        if not shape and "shape" in kwargs:
            shape = kwargs.pop("shape")
        return _np_api().reshape(self, shape, **kwargs)

    def transpose(self, *axes):
        if len(axes) == 1 and isinstance(axes[0], (tuple, list)) or axes == (None,):
            axes = axes[0]
        return _np_api().transpose(self, axes or None)

    def swapaxes(self, a, b): return _np_api().swapaxes(self, a, b)
    def flatten(self): return _np_api().reshape(self, (-1,))
    def ravel(self): return self.flatten()
    def squeeze(self, axis=None): return _np_api().squeeze(self, axis)
    def expand_dims(self, axis): return _np_api().expand_dims(self, axis)
    def broadcast_to(self, shape): return _np_api().broadcast_to(self, shape)
    def repeat(self, repeats, axis=None): return _np_api().repeat(self, repeats, axis)
    def tile(self, reps): return _np_api().tile(self, reps)

    def sum(self, axis=None, dtype=None, keepdims=False, **kw):
        return _np_api().sum(self, axis=axis, dtype=dtype, keepdims=keepdims)

    def mean(self, axis=None, dtype=None, keepdims=False, **kw):
        return _np_api().mean(self, axis=axis, dtype=dtype, keepdims=keepdims)

    def std(self, axis=None, dtype=None, ddof=0, keepdims=False):
        return _np_api().std(self, axis=axis, dtype=dtype, ddof=ddof, keepdims=keepdims)

    def var(self, axis=None, dtype=None, ddof=0, keepdims=False):
        return _np_api().var(self, axis=axis, dtype=dtype, ddof=ddof, keepdims=keepdims)

    # `out=` as NumPy's methods have it: np.max(x), np.all(x), ... call x.max(axis, out=None)
    def max(self, axis=None, out=None, keepdims=False):
        return _written(_np_api().max(self, axis, keepdims=keepdims), out)

    def min(self, axis=None, out=None, keepdims=False):
        return _written(_np_api().min(self, axis, keepdims=keepdims), out)

    def prod(self, axis=None, dtype=None, out=None, keepdims=False):
        return _written(_np_api().prod(self, axis=axis, dtype=dtype, keepdims=keepdims), out)

    def argmax(self, axis=None, out=None, keepdims=False):
        return _written(_np_api().argmax(self, axis, keepdims=keepdims), out)

    def argmin(self, axis=None, out=None, keepdims=False):
        return _written(_np_api().argmin(self, axis, keepdims=keepdims), out)

    def cumsum(self, axis=None, dtype=None, out=None):
        return _written(_np_api().cumsum(self, axis, dtype), out)
    def argsort(self, axis=-1): return _np_api().argsort(self, axis)
    def sort(self, axis=-1): return _np_api().sort(self, axis)
    def clip(self, min=None, max=None, out=None, a_min=None, a_max=None):  # MXNet and NumPy
        return _written(_np_api().clip(self, a_min if min is None else min,
                                       a_max if max is None else max), out)
    def abs(self): return _np_api().abs(self)
    def exp(self): return _np_api().exp(self)
    def log(self): return _np_api().log(self)
    def sqrt(self): return _np_api().sqrt(self)
    def square(self): return _np_api().square(self)
    def sin(self): return _np_api().sin(self)
    def cos(self): return _np_api().cos(self)
    def tanh(self): return _np_api().tanh(self)
    def sign(self): return _np_api().sign(self)
    def round(self, decimals=0, out=None): return _written(_np_api().round(self, decimals), out)
    def dot(self, b): return _np_api().dot(self, b)
    def nonzero(self): return _np_api().nonzero(self)
    def all(self, axis=None, out=None, keepdims=False):
        return _written(_np_api().all(self, axis, keepdims=keepdims), out)

    def any(self, axis=None, out=None, keepdims=False):
        return _written(_np_api().any(self, axis, keepdims=keepdims), out)

    def zeros_like(self): return _np_api().zeros_like(self)
    def ones_like(self): return _np_api().ones_like(self)

    def norm(self, ord=None, axis=None, keepdims=False):
        return _np_api().linalg.norm(self, ord, axis, keepdims)

