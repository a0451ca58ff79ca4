"""Batch normalization on the shim's bnorm.c from eager mode: float32 NumPy arrays in and out.

x is viewed as (outer, C, inner) around its channel axis (`view`). With inner == 1 the work
goes to oneDNN's batch_normalization primitive (its JIT kernel on the 2-D (outer, C)); with
inner > 1 (NCHW) to bnorm.c's row loops, faster than oneDNN on that plain layout. Each
function returns None when the shim cannot take the call; the caller then uses NumPy.
"""
import numpy as _np

from .library import shim
from .ops import _i64, _run

F32 = _np.dtype(_np.float32)


def usable(*arrays):
    """Can the shim take batch normalization over these arrays (float32, non-empty)?"""
    return (shim() is not None and all(a.dtype == F32 for a in arrays)
            and arrays[0].size > 0)


def _c(a):
    return _np.ascontiguousarray(a)


def _bn_op(which, outer, c, eps):
    return (("bnorm", which, outer, c, eps),
            lambda lib: lib.kd_bnorm(which, 2, _i64((outer, c)), eps))


def stats(x, view):
    """(mean, biased variance) of x per channel, float32 (C) each."""
    outer, c, inner = view
    x = _c(x)
    mean, var = _np.empty(c, F32), _np.empty(c, F32)
    work = _np.empty(2 * c)     # held here: a temporary's address would be freed memory
    shim().kd_bn_rows_stats(x.ctypes.data, outer, c, inner, mean.ctypes.data,
                            var.ctypes.data, work.ctypes.data)
    return mean, var


def _apply(x, mean, var, gamma, beta, eps, view):
    outer, c, inner = view
    y = _np.empty(x.shape, F32)
    shim().kd_bn_rows_apply(x.ctypes.data, outer, c, inner, mean.ctypes.data,
                            var.ctypes.data, gamma.ctypes.data, beta.ctypes.data, eps,
                            y.ctypes.data)
    return y


def train(x, gamma, beta, eps, view):
    """(y, mean, var): x normalized by its own statistics, scaled and shifted."""
    outer, c, inner = view
    x, gamma, beta = _c(x), _c(gamma), _c(beta)
    if inner > 1:
        mean, var = stats(x, view)
        return _apply(x, mean, var, gamma, beta, eps, view), mean, var
    y, mean, var = _np.empty(x.shape, F32), _np.empty(c, F32), _np.empty(c, F32)
    _run(_bn_op(0, outer, c, eps), (x, gamma, beta, y, mean, var))
    return y, mean, var


def infer(x, mean, var, gamma, beta, eps, view):
    """x normalized by the given statistics, scaled and shifted."""
    outer, c, inner = view
    x, mean, var, gamma, beta = (_c(a) for a in (x, mean, var, gamma, beta))
    if inner > 1:
        return _apply(x, mean, var, gamma, beta, eps, view)
    y = _np.empty(x.shape, F32)
    _run(_bn_op(1, outer, c, eps), (x, mean, var, gamma, beta, y))
    return y


def backward(x, g, gamma, eps, view):
    """(dx, dgamma, dbeta) of train's y given its gradient g; the statistics are x's,
    recomputed (the forward pass keeps nothing full-size)."""
    outer, c, inner = view
    x, g, gamma = _c(x), _c(g), _c(gamma)
    dx, dgamma, dbeta = _np.empty(x.shape, F32), _np.empty(c, F32), _np.empty(c, F32)
    if inner > 1:
        work = _np.empty(4 * c)
        shim().kd_bn_rows_backward(x.ctypes.data, g.ctypes.data, outer, c, inner,
                                   gamma.ctypes.data, eps, dx.ctypes.data,
                                   dgamma.ctypes.data, dbeta.ctypes.data, work.ctypes.data)
    else:
        mean, var = stats(x, view)
        _run(_bn_op(2, outer, c, eps), (x, mean, var, g, gamma, dx, dgamma, dbeta))
    return dx, dgamma, dbeta
