"""bfloat16, the optional dtype: its lazy import from ml_dtypes, its promotion with NumPy's
dtypes, and running a NumPy kernel on bfloat16 operands the way PyTorch does on CPU
(compute in float32, round the result to bfloat16 once).

NumPy stays kiln's only hard dependency: ml_dtypes is imported when a bfloat16 is first
asked for, and a clear error says how to install it when it is missing. A bfloat16 NumPy
dtype has kind 'V' (it is not a NumPy float), so code that asks "is this a float?" asks
`is_floating` here.
"""
import numpy as _np

from .base import bfloat16_dtype as dtype

_F32 = _np.dtype(_np.float32)


def is_bfloat16(dt):
    """Whether dt is bfloat16, without importing ml_dtypes."""
    return dt.kind == "V" and dt.name == "bfloat16"


def is_floating(dt):
    return dt.kind == "f" or is_bfloat16(dt)


def promote(a, b):
    """The result dtype of bfloat16 meeting `b` (PyTorch's rules): integers and bool
    become bfloat16, float16 meets it in float32, wider floats win."""
    other = b if is_bfloat16(a) else a
    if is_bfloat16(other) or other.kind in "iub":
        return dtype()
    if other.itemsize <= 2:
        return _F32
    return other


def any_bfloat16(values):
    for v in values:
        if is_bfloat16(v.dtype):
            return True
    return False


def run_in_float32(impl, datas, attrs):
    """impl applied to `datas` with every bfloat16 operand widened to float32; the caller
    rounds the result to the dtype the shape rule gave (one rounding, as PyTorch does)."""
    widened = [d.astype(_F32) if is_bfloat16(d.dtype) else d for d in datas]
    return impl(*widened, **attrs)


def finfo(dt):
    """NumPy's finfo, which knows no bfloat16, or ml_dtypes' for it."""
    if isinstance(dt, (type, str, _np.dtype)) and is_bfloat16(_np.dtype(dt)):
        import ml_dtypes
        return ml_dtypes.finfo(dt)
    return _np.finfo(dt)


def round_to_bfloat16(x):
    """float32 values rounded to the nearest bfloat16 (ties to even), still as float32;
    NaN stays NaN. Bit arithmetic: no ml_dtypes needed."""
    x = _np.ascontiguousarray(x, dtype=_F32)
    bits = x.view(_np.uint32)
    rounded = (bits + (_np.uint32(0x7FFF) + ((bits >> 16) & 1))) & _np.uint32(0xFFFF0000)
    rounded = _np.where((bits & 0x7FFFFFFF) > 0x7F800000, bits | 0x00400000, rounded)
    return rounded.astype(_np.uint32).view(_F32)
