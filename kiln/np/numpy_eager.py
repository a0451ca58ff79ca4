"""NumPy functions kiln runs eagerly, in NumPy: those whose result shape depends on the
values (bincount, histogram, unique-like set operations, nonzero-like indices), and
integer/bookkeeping helpers with nothing to differentiate.

Inside a hybridized trace they raise kiln's usual "needs a concrete value" error (the
same as `nonzero()`); a float64 result of float32 (or integer) inputs comes back in the
default float, as MXNet returns it.
"""
import numpy as _np

from .._core.base import DEFAULT_FLOAT
from .._core.ndarray import ndarray


def _concrete(value, what):
    if isinstance(value, ndarray):
        return value._concrete(what)
    if isinstance(value, (list, tuple)) and any(isinstance(v, ndarray) for v in value):
        return type(value)(_concrete(v, what) for v in value)
    return value


def _had_float64(values):
    for v in values:
        if isinstance(v, ndarray) and v.dtype == _np.float64:
            return True
        if isinstance(v, (list, tuple)) and _had_float64(v):
            return True
    return False


def _wrap(result, keep64):
    if isinstance(result, (tuple, list)):
        return type(result)(_wrap(r, keep64) for r in result)
    if isinstance(result, _np.ndarray) or isinstance(result, _np.generic):
        arr = _np.asarray(result)
        if arr.dtype == _np.float64 and not keep64:
            arr = arr.astype(DEFAULT_FLOAT)
        return ndarray._wrap(arr)
    return result


def eager(name, fn=None, wrap=True):
    """kiln's `name`: NumPy's function of that name on the concrete values."""
    fn = fn or getattr(_np, name)

    def call(*args, **kwargs):
        what = f"{name}()"
        vals = [_concrete(a, what) for a in args]
        kw = {k: _concrete(v, what) for k, v in kwargs.items()}
        result = fn(*vals, **kw)
        if not wrap:
            return result
        return _wrap(result, _had_float64(list(args) + list(kwargs.values())))
    call.__name__ = call.__qualname__ = name
    call.__doc__ = f"NumPy's {name}, computed eagerly (no gradient)."
    return call


_NAMES = ("bincount histogram histogram_bin_edges histogram2d histogramdd digitize "
          "argpartition searchsorted lexsort unravel_index indices tril_indices_from "
          "triu_indices_from in1d isin intersect1d union1d setdiff1d setxor1d packbits "
          "unpackbits interp unwrap polyfit roots poly polyadd polysub polymul polydiv "
          "polyint polyval vander trim_zeros lcm spacing piecewise resize nanmax nanmin "
          "nanargmax nanargmin nancumsum nancumprod nanprod nanmedian nanpercentile "
          "nanquantile percentile quantile").split()

FUNCTIONS = {n: eager(n, getattr(_np, n, None)) for n in _NAMES if hasattr(_np, n)}
# NumPy 2 removed in1d; MXNet still names it
FUNCTIONS.setdefault("in1d", eager("in1d", lambda a, b, assume_unique=False, invert=False:
                                   _np.isin(_np.ravel(a), b, assume_unique, invert)))
FUNCTIONS.update({n: eager(n, wrap=False) for n in
                  "array_equiv may_share_memory shares_memory".split()})


def ix_(*args):
    """Open meshes from 1-D index sequences, for cross-product indexing (`a[np.ix_(rows, cols)]`);
    computed eagerly."""
    return tuple(ndarray._wrap(r) for r in _np.ix_(*[_concrete(a, "ix_()") for a in args]))


promote_types = _np.promote_types
result_type = _np.result_type
min_scalar_type = _np.min_scalar_type
