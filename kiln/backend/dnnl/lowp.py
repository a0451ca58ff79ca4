"""Low-precision matmuls on oneDNN (lowp.c) for NumPy arrays: the eager kernel of
matmul_bf16 (registered into the primitive on import) and int8 matmuls for quantized
layers; and the ISA oneDNN dispatches to.

Each function returns None when oneDNN cannot take the call (the layer off or missing,
shapes it does not take, or only oneDNN's reference kernel for these types on this CPU:
bfloat16 without AVX-512 and int8 without VNNI run slowly there); the caller then
computes the same values with NumPy, and a warning says once why it is slow.
"""
import ctypes
import threading
import warnings

import numpy as _np

from ..._core.base import KilnError
from . import ops as _shim_ops
from .library import shim

F32, BF16, S8, U8 = 0, 1, 2, 3      # lowp.c's KD_F32, KD_BF16, KD_S8, KD_U8
ACT_NONE, ACT_RELU, ACT_GELU = 0, 1, 2     # matmul.c's KD_ACT_*
TYPE_CODES = {_np.dtype(_np.float32): F32, _np.dtype(_np.int8): S8,
              _np.dtype(_np.uint8): U8}

# the ISAs with VNNI: without it oneDNN's int8 kernels multiply-add pairs in 16 bits,
# which saturate (its documentation asks for weights scaled down for them): kiln then
# computes the exact int32 product with NumPy instead
VNNI_ISAS = ("avx2_vnni", "avx2_vnni_2", "avx512_core_vnni", "avx512_core_bf16",
             "avx512_core_fp16", "avx512_core_amx", "avx512_core_amx_fp16")

_bound = []
_refused = {}           # op key -> why oneDNN would not make it (reference kernel only)
_warned = set()
_lock = threading.Lock()


def _lib():
    lib = shim()
    if lib is not None and not _bound:
        with _lock:
            if not _bound:
                i64p = ctypes.POINTER(ctypes.c_int64)
                lib.kd_matmul_lowp.restype = ctypes.c_void_p
                lib.kd_matmul_lowp.argtypes = [ctypes.c_int, i64p, i64p, i64p, i64p] + \
                    [ctypes.c_int] * 4 + [ctypes.c_float, ctypes.c_int]
                lib.kd_conv_lowp.restype = ctypes.c_void_p
                lib.kd_conv_lowp.argtypes = [ctypes.c_int] + [i64p] * 7 + [ctypes.c_int64] + \
                    [ctypes.c_int] * 6 + [ctypes.c_float]
                lib.kd_isa.restype = ctypes.c_char_p
                _bound.append(True)
    return lib


def isa():
    """The instruction set oneDNN dispatches to ('avx512_core_bf16', ...), or None."""
    lib = _lib()
    return lib.kd_isa().decode() if lib is not None else None


def make_matmul(lib, a_dims, a_strides, b_dims, b_strides, in_type, out_type, bias, act,
                scale=1.0, residual=False):
    """A new shim op (0 on failure) for y = act((a . b + bias) * scale) + residual, act
    ACT_NONE, ACT_RELU (or a bool: ReLU or none) or ACT_GELU (erf's): arguments a, b,
    [bias], y, [residual], [scale (int8)]."""
    i64 = _shim_ops._i64
    return lib.kd_matmul_lowp(len(a_dims), i64(a_dims), i64(a_strides), i64(b_dims),
                              i64(b_strides), in_type, out_type, int(bias), int(act),
                              float(scale), int(residual))


def make_conv(lib, x_shape, w_shape, y_shape, stride, dilation, pad, groups, in_type, bias,
              relu, channels_last=False, out_type=F32, sum_type=None, sum_scale=1.0):
    """A new shim op (0 on failure): arguments x, w, [bias], y, [scale (int8)], [y's scale
    (out_type int8/uint8: requantized)]. Shapes NCHW; channels_last: x and y lie
    (N, *S, C). sum_type: y's type code when the op adds what y holds (times sum_scale)."""
    i64 = _shim_ops._i64
    return lib.kd_conv_lowp(len(stride), i64(x_shape), i64(w_shape), i64(y_shape),
                            i64(stride), i64(dilation), i64(pad[0::2]), i64(pad[1::2]),
                            groups, in_type, int(bias), int(relu), int(channels_last),
                            out_type, -1 if sum_type is None else sum_type, float(sum_scale))


def _conv_ok(x, w, stride):
    return 1 <= len(stride) <= 3 and x.ndim == len(stride) + 2 and x.size and w.size


def conv_bf16(x, w, y_shape, stride, dilation, pad, groups=1):
    """float32 conv(x, w) with x and w rounded to bfloat16, in float32 (NCHW); or None."""
    lib = _lib()
    if lib is None or x.dtype != _np.float32 or w.dtype != _np.float32 or not _conv_ok(
            x, w, stride):
        return None
    x, w = _np.ascontiguousarray(x), _np.ascontiguousarray(w)
    key = ("bfloat16 conv", x.shape, w.shape, tuple(y_shape), tuple(stride),
           tuple(dilation), tuple(pad), groups)

    def make(lib):
        return make_conv(lib, x.shape, w.shape, y_shape, stride, dilation, pad, groups, BF16,
                         False, False)
    y = _np.empty(y_shape, _np.float32)
    if not _run(key, make, [x, w, y], w if w.base is None else None):
        return None
    return y


def conv_int8(xq, wq, scale, bias, y_shape, stride, dilation, pad, groups=1, relu=False,
              residual=None, residual_scale=1.0, out_scale=None, out_dtype=None):
    """y = requant(act(conv(xq, wq) * scale[f] + bias[f] + residual * residual_scale)):
    xq int8/uint8, wq int8, scale float32 (F,) (x's scale times w's per channel); y
    float32, or out_dtype int8/uint8 (divided by out_scale, rounded to nearest even,
    saturated); a residual float32, or int8/uint8 (times residual_scale); NCHW, run
    channels-last (oneDNN's int8 kernels work on (N, *S, C) in place, and only there add
    a residual); or None."""
    lib = _lib()
    if lib is None or TYPE_CODES.get(xq.dtype) not in (S8, U8) or wq.dtype != _np.int8 \
            or not _conv_ok(xq, wq, stride):
        return None
    if isa() not in VNNI_ISAS:
        _note_refusal(("int8 conv",), f"oneDNN dispatches to {isa()}, without VNNI")
        return None
    wq = _np.ascontiguousarray(wq)
    in_type = TYPE_CODES[xq.dtype]
    y_dtype = _np.dtype(_np.float32 if out_scale is None else out_dtype)
    out_type = TYPE_CODES[y_dtype]
    sum_type, sum_scale, binary = None, 1.0, False
    if residual is not None:
        if residual.dtype.itemsize != y_dtype.itemsize:
            if residual.dtype == _np.float32:       # added as an argument of its own
                binary = True
            else:                                   # an int8 residual, float32 y
                residual = residual.astype(_np.float32) * _np.float32(residual_scale)
        sum_type = TYPE_CODES.get(_np.dtype(residual.dtype))
        if sum_type is None:
            return None
        if sum_type != F32:
            sum_scale = float(_np.float32(residual_scale))
    key = ("int8 conv", xq.shape, wq.shape, tuple(y_shape), tuple(stride), tuple(dilation),
           tuple(pad), groups, in_type, bool(relu), out_type, sum_type, sum_scale)

    def make(lib):
        return make_conv(lib, xq.shape, wq.shape, y_shape, stride, dilation, pad, groups,
                         in_type, True, relu, True, out_type, sum_type, sum_scale)
    last = (0,) + tuple(range(2, xq.ndim)) + (1,)
    y = _np.empty(tuple(y_shape[p] for p in last), y_dtype) if residual is None or binary \
        else _np.ascontiguousarray(_np.transpose(residual, last), y_dtype)
    arrays = [_np.ascontiguousarray(_np.transpose(xq, last)), wq,
              _np.ascontiguousarray(bias, dtype=_np.float32), y]
    if binary:
        arrays.append(_np.ascontiguousarray(_np.transpose(residual, last)))
    arrays.append(_np.ascontiguousarray(scale, dtype=_np.float32))
    if out_scale is not None:
        arrays.append(_np.array([out_scale], _np.float32))
    if not _run(key, make, arrays, wq if wq.base is None else None):
        return None
    return _np.ascontiguousarray(_np.moveaxis(y, -1, 1))


def _element_strides(x):
    return tuple(s // x.itemsize for s in x.strides)


def _operands(a, b):
    """(a, b) as the shim takes them (2 or 3 dims, b's batch dim 1 or a's; equal batch
    dims collapsed into one), the shape of y as the caller wants it, or None."""
    if b.ndim == 2 and a.ndim >= 2:
        rows = a.reshape(-1, a.shape[-1]) if a.ndim > 2 else a
        return rows, b, a.shape[:-1] + (b.shape[-1],)
    if a.ndim == 3 and b.ndim == 3 and (a.shape[0] == b.shape[0] or 1 in (a.shape[0],
                                                                          b.shape[0])):
        return a, b, (max(a.shape[0], b.shape[0]), a.shape[1], b.shape[2])
    if a.ndim == b.ndim > 3 and a.shape[:-2] == b.shape[:-2]:     # batch dims collapsed
        return (a.reshape((-1,) + a.shape[-2:]), b.reshape((-1,) + b.shape[-2:]),
                a.shape[:-1] + (b.shape[-1],))
    return None


_makes = {}     # key -> does oneDNN make the op with a real kernel (generated C asks)


def makes(key, maker, refusal=None):
    """Whether oneDNN makes the op `maker(lib)` builds, for the C backend's lowerings
    (bfloat16 matmul, int8 layers): made once per key and freed; a refusal is noted as a
    `refusal` kernel's when one is named (the one-time warning that says why)."""
    ok = _makes.get(key)
    if ok is None:
        lib = _lib()
        op = maker(lib)
        ok = _makes[key] = bool(op)
        if op:
            lib.kd_free(op)
        elif refusal is not None:
            _note_refusal((refusal,) + tuple(key[1:]), lib.kd_error().decode())
    return ok


def _note_refusal(key, why):
    _refused[key] = why
    kind = key[0]
    if kind not in _warned:
        _warned.add(kind)
        why = why.replace("; set KILN_DNNL=0 to use kiln's own kernels", "")
        warnings.warn(f"kiln: oneDNN has no fast {kind} kernel for this CPU ({why}); kiln "
                      "computes the same values with NumPy, more slowly",
                      RuntimeWarning, stacklevel=3)


def _run(key, make, arrays, keep_weight):
    if key in _refused:
        return False
    try:
        if keep_weight is not None:
            _shim_ops._run_keeping((key, make), arrays, {1: (keep_weight, True)})
        else:
            _shim_ops._run((key, make), arrays)
    except KilnError as exc:
        if "oneDNN could not make" not in str(exc):
            raise
        _note_refusal(key, str(exc).split(": ", 1)[-1][:200])
        return False
    return True


def matmul_bf16(a, b, bias=None, scale=1.0, gelu=False, residual=None):
    """float32 gelu?((a @ b + bias) * scale) + residual with a and b rounded to bfloat16,
    in float32 (bias (N,) and residual, of y's shape, when given); None when not taken."""
    lib = _lib()
    if lib is None or a.dtype != _np.float32 or b.dtype != _np.float32 or not a.size \
            or not b.size:
        return None
    got = _operands(a, b)
    if got is None:
        return None
    a2, b2, out_shape = got
    if min(a2.strides) < 0 or min(b2.strides) < 0:
        return None
    ad, bd = a2.shape, b2.shape
    act = ACT_GELU if gelu else ACT_NONE
    key = ("bfloat16 matmul", ad, _element_strides(a2), bd, _element_strides(b2),
           bias is not None, act, float(scale), residual is not None)

    def make(lib):
        return make_matmul(lib, ad, key[2], bd, key[4], BF16, F32, bias is not None, act,
                           scale, residual is not None)
    y_shape = (max(ad[0], bd[0]), ad[1], bd[2]) if len(ad) == 3 else (ad[0], bd[1])
    y = _np.empty(y_shape, _np.float32)
    keep = b2 if b2.base is None and b2.flags.c_contiguous else None
    arrays = [a2, b2] + ([_np.ascontiguousarray(bias, dtype=_np.float32)]
                         if bias is not None else []) + [y]
    if residual is not None:
        arrays.append(_np.ascontiguousarray(_np.broadcast_to(residual, out_shape),
                                            _np.float32).reshape(y_shape))
    if not _run(key, make, arrays, keep):
        return None
    return y.reshape(out_shape)


def matmul_int8(a_q, w_q, scale, bias=None, relu=False, out_dtype=_np.float32):
    """y = act(a_q @ w_q * scale + bias): a_q int8/uint8 (rows, K), w_q int8 (K, N), scale
    float32 (N,) (the product of a's and w's scales, over y's when y is int8), bias float32
    (N,) or None, y float32 or int8/uint8 (rounded to nearest even, saturated); or None
    when not taken."""
    lib = _lib()
    if lib is None or a_q.ndim != 2 or w_q.ndim != 2 or not a_q.size or not w_q.size:
        return None
    if isa() not in VNNI_ISAS:
        _note_refusal(("int8 matmul",), f"oneDNN dispatches to {isa()}, without VNNI")
        return None
    in_type, out_type = TYPE_CODES.get(a_q.dtype), TYPE_CODES.get(_np.dtype(out_dtype))
    if in_type not in (S8, U8) or w_q.dtype != _np.int8 or out_type is None:
        return None
    a_q = _np.ascontiguousarray(a_q)
    ad, bd = a_q.shape, w_q.shape
    key = ("int8 matmul", ad, bd, in_type, out_type, bias is not None, bool(relu),
           _element_strides(w_q))

    def make(lib):
        return make_matmul(lib, ad, (ad[1], 1), bd, key[-1], in_type, out_type,
                           bias is not None, relu)
    y = _np.empty((ad[0], bd[1]), out_dtype)
    scale = _np.ascontiguousarray(scale, dtype=_np.float32)
    arrays = [a_q, w_q] + ([_np.ascontiguousarray(bias, dtype=_np.float32)]
                           if bias is not None else []) + [y, scale]
    keep = w_q if w_q.base is None else None
    if not _run(key, make, arrays, keep):
        return None
    return y

