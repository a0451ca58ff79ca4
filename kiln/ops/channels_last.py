"""The channels_last attribute of the heavy ops (conv, pool and their gradients).

With channels_last=True an op's activations (its image inputs and, unless it is a weight
gradient, its output) are (N, *S, C) instead of (N, C, *S); weights keep their layout.
Compiled graphs use it (kiln/graph/passes/layout.py) so that oneDNN works on them in
place. Each rule, kernel and decomposition written for NCHW takes the attribute through
the wrappers below, which move the channel axis around the NCHW version.
"""
import functools

import numpy as _np

from . import compose


def first(shape):
    """(N, *S, C) -> (N, C, *S)"""
    return (shape[0], shape[-1]) + tuple(shape[1:-1])


def last(shape):
    """(N, C, *S) -> (N, *S, C)"""
    return (shape[0],) + tuple(shape[2:]) + (shape[1],)


class _Aval:
    __slots__ = ("shape", "dtype")

    def __init__(self, shape, dtype):
        self.shape, self.dtype = tuple(shape), dtype

    @property
    def ndim(self):
        return len(self.shape)


def rule(acts, act_out):
    """A shape rule for NCHW made to take channels_last: acts are the positions of the
    activation inputs, act_out whether the output is one."""
    def wrap(fn):
        @functools.wraps(fn)
        def run(*avals, channels_last=False, **attrs):
            if not channels_last:
                return fn(*avals, **attrs)
            avals = [_Aval(first(a.shape), a.dtype) if k in acts else a
                     for k, a in enumerate(avals)]
            shape, dtype = fn(*avals, **attrs)
            return (last(shape) if act_out else shape), dtype
        return run
    return wrap


def _move(a, src, dst):
    if isinstance(a, _np.ndarray):
        return _np.ascontiguousarray(_np.moveaxis(a, src, dst))
    return compose.moveaxis(a, src, dst)


def kernel(acts, act_out):
    """A kernel or decomposition for NCHW (on NumPy arrays or kiln arrays) made to take
    channels_last."""
    def wrap(fn):
        @functools.wraps(fn)
        def run(*args, channels_last=False, **attrs):
            if not channels_last:
                return fn(*args, **attrs)
            args = [_move(a, -1, 1) if k in acts else a for k, a in enumerate(args)]
            out = fn(*args, **attrs)
            return _move(out, 1, -1) if act_out else out
        return run
    return wrap


def spatial(shape, channels_last):
    """The spatial dims of an activation's shape."""
    return tuple(shape[1:-1]) if channels_last else tuple(shape[2:])
