"""NumPy arrays whose data starts on a 64-byte boundary, for memory compiled code streams.

NumPy aligns its allocations to 16 bytes only. A 64-byte vector load from an address that
is not a multiple of 64 touches two cache lines, and a batch-1 Dense layer is nothing but
such loads over its weight matrix: here a 256 x 512 layer took 10.5 us with its weights
32 bytes past a line and 6-7 us aligned. Parameters, their gradients and optimizer state,
and the compiled programs' buffers are therefore allocated here, 64-byte aligned as in the
CPU allocators of PyTorch and MXNet.

The arrays are views into a slightly larger NumPy buffer (`.base`), so they are ordinary
NumPy arrays in every other respect.
"""
import numpy as _np

ALIGNMENT = 64


def empty(shape, dtype):
    """An uninitialized C-contiguous array of `shape` and `dtype`, 64-byte aligned."""
    dtype = _np.dtype(dtype)
    shape = tuple(shape) if _np.iterable(shape) else (shape,)
    if dtype.hasobject or dtype.itemsize == 0 or any(int(d) < 0 for d in shape):
        return _np.empty(shape, dtype)      # nothing compiled code reads; NumPy's errors
    nbytes = int(_np.prod(shape, dtype=_np.int64)) * dtype.itemsize
    raw = _np.empty(nbytes + ALIGNMENT, _np.uint8)
    start = -raw.ctypes.data % ALIGNMENT
    return raw[start:start + nbytes].view(dtype).reshape(shape)


def zeros(shape, dtype):
    out = empty(shape, dtype)
    out.fill(0)
    return out


def copy_of(value, dtype=None):
    """A 64-byte aligned copy of `value`, cast to `dtype` as numpy.array(value, dtype) does."""
    value = _np.asarray(value, dtype=dtype)       # NumPy's own conversion and casting
    out = empty(value.shape, value.dtype)
    _np.copyto(out, value)
    return out


def is_aligned(array):
    """The data starts on a 64-byte boundary; an empty array has no data to start anywhere."""
    return array.size == 0 or array.ctypes.data % ALIGNMENT == 0
