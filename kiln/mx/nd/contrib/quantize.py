"""MXNet 1.x's `contrib.quantize` and `contrib.dequantize`: float32 data to int8 / uint8
codes over a given range and back, eagerly in NumPy, as MXNet 1.9.1 computes them on the CPU
(its oneDNN kernels, src/operator/quantization/mkldnn): codes are x * 127 / r (int8) or
x * 255 / r (uint8) rounded to nearest even and saturated, r = max(|min|, |max|); back,
codes times r / 127.5 (int8) or r / 255.5 (uint8). Quantized data has no gradient (MXNet
defines none)."""
import numpy as _np

from .... import np as knp
from ...._core.base import KilnError
from ...._core.ndarray import ndarray

_F32 = _np.float32
# code range, and the range dequantize divides by (MXNet's kInt8Range, kUint8Range)
_CODES = {"int8": (-128, 127, 127.0, 127.5), "uint8": (0, 255, 255.0, 255.5)}


def _range(op, min_range, max_range):
    lo = knp.asarray(min_range)._concrete(f"contrib.{op}()").astype(_F32).reshape(-1)
    hi = knp.asarray(max_range)._concrete(f"contrib.{op}()").astype(_F32).reshape(-1)
    if lo.size != 1 or hi.size != 1:
        raise KilnError(f"contrib.{op}: min_range and max_range hold one value each, got "
                        f"{lo.size} and {hi.size}")
    return lo[0], hi[0]


def _out(value):
    return ndarray._wrap(_np.asarray([value], _F32))


def quantize(data, min_range, max_range, out_type="uint8", **_):
    """(codes, min, max): data quantized over the range; int8's range comes back as
    +-max(|min|, |max|), uint8's as given."""
    if out_type not in _CODES:
        raise KilnError(f"contrib.quantize: out_type must be 'int8' or 'uint8', got "
                        f"{out_type!r}")
    x = knp.asarray(data)._concrete("contrib.quantize()").astype(_F32)
    lo, hi = _range("quantize", min_range, max_range)
    real = max(abs(lo), abs(hi))
    low, high, steps, _ = _CODES[out_type]
    codes = _np.clip(_np.rint(x * _F32(steps / real)), low, high).astype(out_type)
    if out_type == "int8":
        lo, hi = -real, real
    return [ndarray._wrap(codes), _out(lo), _out(hi)]


def dequantize(data, min_range, max_range, out_type="float32", **_):
    """float32 values of int8 / uint8 codes quantized over the range."""
    if out_type != "float32":
        raise KilnError(f"contrib.dequantize: out_type must be 'float32', got {out_type!r}")
    q = knp.asarray(data)._concrete("contrib.dequantize()")
    if q.dtype.name not in _CODES:
        raise KilnError(f"contrib.dequantize: data must be int8 or uint8 codes, got {q.dtype}")
    lo, hi = _range("dequantize", min_range, max_range)
    divisor = _CODES[q.dtype.name][3]
    return ndarray._wrap(q.astype(_F32) * _F32(max(abs(lo), abs(hi)) / divisor))
