"""sym.zeros / ones / full / arange / eye: Symbols of MXNet's creation ops (_zeros, ...).

While hybridize traces a hybrid_forward, `F` is this namespace and the values are kiln
arrays, so there the same calls make arrays (nd's functions), as the trace needs."""
from ..._core import trace
from ..nd import functions as nd_functions
from .symbol import apply_op


def _attrs(**kw):
    return {k: v for k, v in kw.items() if v is not None}


def _dtype_name(dtype):
    """MXNet's dtype attribute: a name ('float32'), from a name, a NumPy type or a dtype."""
    import numpy as np
    return np.dtype(dtype or "float32").name


def _build(op, nd_fn, attrs, name):
    if trace.active():
        return nd_fn()
    return apply_op(op, [], attrs, name)


def zeros(shape, dtype=None, name=None, **_):
    """A Symbol of zeros of `shape` (float32 by default)."""
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    return _build("_zeros", lambda: nd_functions.zeros(shape, dtype=dtype),
                  _attrs(shape=shape, dtype=_dtype_name(dtype)), name)


def ones(shape, dtype=None, name=None, **_):
    """A Symbol of ones of `shape` (float32 by default)."""
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    return _build("_ones", lambda: nd_functions.ones(shape, dtype=dtype),
                  _attrs(shape=shape, dtype=_dtype_name(dtype)), name)


def full(shape, val, dtype=None, name=None, **_):
    """A Symbol of `shape` filled with `val`."""
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    return _build("_full", lambda: nd_functions.full(shape, val, dtype=dtype),
                  _attrs(shape=shape, value=float(val), dtype=_dtype_name(dtype)), name)


def arange(start, stop=None, step=1.0, repeat=1, infer_range=False, name=None, dtype=None,
           **_):
    """A Symbol of the values from `start` to `stop` by `step`, each repeated `repeat`
    times."""
    return _build("_arange", lambda: nd_functions.arange(start, stop, step, repeat,
                                                         dtype=dtype),
                  _attrs(start=start, stop=stop, step=step, repeat=repeat,
                         dtype=_dtype_name(dtype)), name)


def eye(N, M=0, k=0, dtype=None, name=None, **_):
    """A Symbol of the N x M matrix with ones on diagonal `k`."""
    from ... import np as knp
    return _build("_eye", lambda: knp.eye(N, M or None, k, dtype=dtype or "float32"),
                  _attrs(N=N, M=M, k=k, dtype=_dtype_name(dtype)), name)
