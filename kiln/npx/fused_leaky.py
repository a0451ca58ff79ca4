"""Eager leaky ReLU (0 <= slope <= 1) on a float32 array: one pass forward, one backward.

The composite (npx/nn.py) is x * maximum((x > 0).astype(x.dtype), slope): four full-size
NumPy passes forward and a full-size factor kept for the gradient (DCGAN's discriminator
runs it after each of its batch norms). The shim's loops (kiln/backend/dnnl/activation.c)
give the same bits, and the gradient g times the same factor, read off the output, so the
tape keeps only y. create_graph, tracing and other dtypes keep the composite.
"""
import numpy as _np

from .._core import autograd
from .. import np as knp
from .._core.ndarray import ndarray
from .fused_softmax import concrete_float


def _shim(x):
    if x.dtype != _np.float32 or not concrete_float(x):
        return None
    from ..backend.dnnl.library import shim
    return shim()


def _composite_grad(g, y, slope):
    return g * knp.maximum((y > 0).astype(y.dtype), slope)


def apply(x, slope):
    """leaky_relu(x) on the tape if x is, or None when the shortcut does not apply."""
    lib = _shim(x)
    if lib is None:
        return None
    # (not ascontiguousarray: it turns a 0-d value into shape (1,))
    xd = _np.require(x._data, requirements="C")
    y = _np.empty(xd.shape, _np.float32)
    lib.kd_leaky_forward(xd.ctypes.data, xd.size, slope, y.ctypes.data)
    out = ndarray._wrap(y)
    if not (autograd.is_recording() and x._tape is not None):
        return out
    saved = []

    def backward(out_grads):
        g, y = out_grads[0], saved[0]
        if (autograd.is_recording() or g._node is not None or g.dtype != _np.float32
                or tuple(g.shape) != tuple(y.shape)):
            return [_composite_grad(g, y, slope)]
        gd = _np.require(g._data, requirements="C")
        dx = _np.empty(gd.shape, _np.float32)
        lib.kd_leaky_backward(gd.ctypes.data, y._data.ctypes.data, gd.size, slope,
                              dx.ctypes.data)
        return [ndarray._wrap(dx)]

    autograd.record_custom("leaky_relu", [x], [out], backward)
    saved.append(out._alias())     # on the tape: create_graph differentiates through it
    return out
