"""Calling the shim's ops from Python on NumPy arrays (eager mode, the NumPy executor).

One op per (kind, shapes, attributes), made on first use and kept: oneDNN picks and JITs
its kernel once per shape. Each function returns None when the layer cannot take the call
(layer off, not float32), and the caller then uses kiln's own kernel.
"""
import ctypes
import threading

import numpy as _np

from ..._core.base import KilnError
from . import derived
from .library import shim

_ops = {}
_lock = threading.Lock()
MAX_OPS = 512       # shapes seen by one process; past this the oldest ops are dropped

POOL_KINDS = {"max": 0, "avg": 1, "avg_valid": 2}
MAX_SPATIAL = 3     # oneDNN's convolutions and poolings are 1-, 2- or 3-D
KD_MAX_ARGS = 6     # shim.c's


def _i64(values):
    values = tuple(int(v) for v in values)
    return (ctypes.c_int64 * max(len(values), 1))(*values)


def _op(key, make):
    """The cached op for `key`; call with _lock held (an op may be evicted and freed)."""
    op = _ops.pop(key, None)
    if op is not None:
        _ops[key] = op          # the most recently used last: evicted last
    else:
        lib = shim()
        op = make(lib)
        if not op:
            raise KilnError(f"oneDNN could not make {key[0]} for {key[1:]}: "
                            f"{lib.kd_error().decode()}; set KILN_DNNL=0 to use "
                            "kiln's own kernels")
        if len(_ops) >= MAX_OPS:
            lib.kd_free(_ops.pop(next(iter(_ops))))
        _ops[key] = op
    return op


def _run(spec, arrays):
    """Run the op of spec = (key, make) on arrays. Eager calls hold one lock while they
    run, so no op is freed under a call in another thread."""
    ptrs = (ctypes.c_void_p * len(arrays))(*[a.ctypes.data for a in arrays])
    lib = shim()
    with _lock:
        # without stamps an op keeps no copy between calls: its copies in the primitive's
        # layout and its scratchpad come out of the calling thread's buffer (shim.c)
        rc = lib.kd_run(_op(*spec), ptrs, None)
    if rc != 0:
        raise KilnError(f"oneDNN failed: {lib.kd_error().decode()}")


_layouts = {}       # (op key, argument) -> kd_arg_layout as a tuple, None: no copy


def _layout(key, op, i):
    """The layout argument i of the op (cache key `key`) wants, as a tuple, or None when it
    reads the caller's array as it lies; call with _lock held."""
    got = _layouts.get((key, i), False)
    if got is False:
        if len(_layouts) >= 4 * MAX_OPS:
            _layouts.clear()        # shapes the op cache has long dropped
        out = (ctypes.c_int64 * 64)()
        n = shim().kd_arg_layout(op, i, out, 64)
        got = _layouts[(key, i)] = tuple(out[:n]) if n > 0 else None
    return got


def _held(key, op, keep):
    """For keep = {argument: (the array it came from, make)}: the held copies (a ctypes
    array of pointers), the bit mask of those to convert now, and the new ones to file
    once the op ran. A copy in the op's layout filed with the array (derived.py) is read
    as it is; without one, make=True converts into a new buffer, kept afterwards (while
    the kept values stay within derived.limit_bytes())."""
    held = (ctypes.c_void_p * KD_MAX_ARGS)()
    fill, made = 0, []
    for i, (source, make) in keep.items() if derived.active() else ():
        layout = _layout(key, op, i)
        if layout is None:
            continue
        name = ("layout", layout)
        buf = derived.get(source, name)
        if buf is None and make and derived.held_bytes() + layout[0] <= derived.limit_bytes():
            buf = _np.empty(layout[0], _np.uint8)
            fill |= 1 << i
            made.append((source, name, buf))
        if buf is not None:
            held[i] = buf.ctypes.data
    return held, fill, made


def _run_keeping(spec, arrays, keep):
    """_run, with copies of some inputs in the op's layout kept with their arrays (_held),
    so the next op on the same array that wants that layout does not convert it again."""
    ptrs = (ctypes.c_void_p * len(arrays))(*[a.ctypes.data for a in arrays])
    lib = shim()
    with _lock:
        op = _op(*spec)
        held, fill, made = _held(spec[0], op, keep)
        rc = lib.kd_run_held(op, ptrs, held, fill)
    if rc != 0:
        raise KilnError(f"oneDNN failed: {lib.kd_error().decode()}")
    for source, name, buf in made:
        derived.put(source, name, buf)


def spatial_ok(stride):
    """Can the shim take an op over len(stride) spatial dimensions?"""
    return 1 <= len(stride) <= MAX_SPATIAL


def _usable(stride, *arrays):
    return (spatial_ok(stride) and shim() is not None
            and all(a.dtype == _np.float32 for a in arrays))


def _pads(pad):
    return pad[0::2], pad[1::2]


def _f32(a):
    return _np.ascontiguousarray(a, dtype=_np.float32)


CHANNELS_LAST = 2      # the shim's KD_CHANNELS_LAST flag


def channels_first(shape):
    """(N, *S, C) -> (N, C, *S): the shim takes an activation's dims in NCHW order."""
    return (shape[0], shape[-1]) + tuple(shape[1:-1])


# the shim's KD_BIAS, KD_RELU, KD_TRAINING, KD_MIXED_BF16
BIAS, RELU, TRAINING, BF16 = 1, 4, 8, 16


def make_conv(lib, which, x_shape, w_shape, y_shape, stride, dilation, pad, groups,
              channels_last=False, bias=False, relu=False, training=False, bf16=False):
    """A new shim op (an address, 0 on failure): 0 forward, 1 data gradient, 2 weights'.
    Shapes are NCHW; channels_last: the activations lie (N, *S, C) in memory; bias, relu:
    the forward op takes a bias (x, w, b, y) and applies ReLU to its output; training:
    the forward op is oneDNN's training kernel (cheaper reorders of NCHW activations);
    bf16: the products in bfloat16 (float32 arguments, rounded by the op's reorders)."""
    lo, hi = _pads(pad)
    flags = ((CHANNELS_LAST if channels_last else 0) | (BIAS if bias else 0)
             | (RELU if relu else 0) | (TRAINING if training else 0) | (BF16 if bf16 else 0))
    return lib.kd_conv(which, len(stride), _i64(x_shape), _i64(w_shape), _i64(y_shape),
                       _i64(stride), _i64(dilation), _i64(lo), _i64(hi), groups, flags)


def make_pool(lib, which, kind, x_shape, y_shape, kernel, stride, pad, channels_last=False):
    """A new shim op: 0 forward, 1 forward keeping the max workspace, 2 backward."""
    lo, hi = _pads(pad)
    return lib.kd_pool(which, POOL_KINDS[kind], len(kernel), _i64(x_shape), _i64(y_shape),
                       _i64(kernel), _i64(stride), _i64(lo), _i64(hi),
                       CHANNELS_LAST if channels_last else 0)


def _conv_op(which, x_shape, w_shape, y_shape, stride, dilation, pad, groups, bias=False,
             relu=False, training=False):
    key = ("conv", which, x_shape, w_shape, y_shape, stride, dilation, pad, groups, bias,
           relu, training)
    return key, lambda lib: make_conv(lib, which, x_shape, w_shape, y_shape, stride,
                                      dilation, pad, groups, bias=bias, relu=relu,
                                      training=training)


def conv_forward(x, w, y_shape, stride, dilation, pad, groups, b=None, relu=False,
                 training=False):
    """conv(x, w), plus the bias b (F,) and then ReLU when given: one pass over the output.
    training: on oneDNN's training kernel (a step whose backward follows, as MXNet does)."""
    if not _usable(stride, x, w, *(() if b is None else (b,))):
        return None
    source, x, w = x, _f32(x), _f32(w)
    y = _np.empty(y_shape, _np.float32)
    args = (x, w, y) if b is None else (x, w, _f32(b), y)
    spec = _conv_op(0, x.shape, w.shape, y_shape, stride, dilation, pad, groups,
                    bias=b is not None, relu=relu, training=training)
    if training:
        # x's blocked copy stays with x for the other convolutions that read it and for
        # the weight gradients of the backward
        _run_keeping(spec, args, {0: (source, True)})
    else:
        _run(spec, args)
    return y


def conv_backward_data(g, w, x_shape, stride, dilation, pad, groups):
    if not _usable(stride, g, w):
        return None
    g, w = _f32(g), _f32(w)
    gx = _np.empty(x_shape, _np.float32)
    _run(_conv_op(1, x_shape, w.shape, g.shape, stride, dilation, pad, groups), (g, w, gx))
    return gx


def conv_backward_weights(x, g, w_shape, stride, dilation, pad, groups):
    if not _usable(stride, x, g):
        return None
    source, x, g = x, _f32(x), _f32(g)
    gw = _np.empty(w_shape, _np.float32)
    _run_keeping(_conv_op(2, x.shape, w_shape, g.shape, stride, dilation, pad, groups),
                 (x, g, gw), {0: (source, False)})
    return gw


def conv_backward(g, x, w, stride, dilation, pad, groups, bias=False):
    """(data gradient, weights gradient[, bias gradient]) of conv(x, w) (+ bias) for the
    output gradient g, both computed from one copy of g in oneDNN's layout, the bias's
    inside the weights' primitive (kd_conv_backward); or None."""
    if not _usable(stride, g, x, w):
        return None
    source, g, x, w = x, _f32(g), _f32(x), _f32(w)
    grads = (_np.empty(x.shape, _np.float32), _np.empty(w.shape, _np.float32)) + (
        (_np.empty(w.shape[0], _np.float32),) if bias else ())
    geometry = (x.shape, w.shape, g.shape, stride, dilation, pad, groups)
    arrays = (g, w, x) + grads + ((None,) if not bias else ())
    ptrs = (ctypes.c_void_p * 6)(*[None if a is None else a.ctypes.data for a in arrays])
    lib = shim()
    with _lock:
        data = _op(*_conv_op(1, *geometry))
        spec = _conv_op(2, *geometry, bias=bias)
        weights = _op(*spec)
        # x as the forward left it converted, when it did (and nothing wrote since)
        held = _held(spec[0], weights, {0: (source, False)})[0]
        rc = lib.kd_conv_backward(data, weights, ptrs, held[0])
    if rc != 0:
        raise KilnError(f"oneDNN failed: {lib.kd_error().decode()}")
    return grads


def _pool_op(which, kind, x_shape, y_shape, kernel, stride, pad):
    key = ("pool", which, kind, x_shape, y_shape, kernel, stride, pad)
    return key, lambda lib: make_pool(lib, which, kind, x_shape, y_shape, kernel, stride, pad)


def _workspace_key(kind, y_shape, kernel, stride, pad):
    return ("pool workspace", kind, y_shape, kernel, stride, pad)


def _pool_with_workspace(x, kind, y_shape, kernel, stride, pad):
    """Max pooling's forward that also writes where each maximum was: (y, workspace)."""
    fwd = _pool_op(1, kind, x.shape, y_shape, kernel, stride, pad)
    y = _np.empty(y_shape, _np.float32)
    lib = shim()
    with _lock:
        ws = _np.empty(lib.kd_arg_size(_op(*fwd), 2), _np.uint8)
    _run(fwd, (x, y, ws))
    return y, ws


def pool_forward(x, kind, y_shape, kernel, stride, pad, training=False):
    """training (a step whose backward follows): max pooling keeps its workspace with x
    (derived.py), so the backward need not run the forward again to get it."""
    if not _usable(stride, x):
        return None
    if training and kind == "max":
        y, ws = _pool_with_workspace(_f32(x), kind, y_shape, kernel, stride, pad)
        derived.put(x, _workspace_key(kind, y_shape, kernel, stride, pad), ws)
        return y
    x = _f32(x)
    y = _np.empty(y_shape, _np.float32)
    _run(_pool_op(0, kind, x.shape, y_shape, kernel, stride, pad), (x, y))
    return y


def pool_backward(g, x, kind, kernel, stride, pad):
    """The gradient with respect to x; max pooling takes oneDNN's record of where each
    maximum was from its forward, or runs the forward again to make it."""
    if not _usable(stride, g, x):
        return None
    ws = None
    if kind == "max":
        ws = derived.get(x, _workspace_key(kind, tuple(g.shape), kernel, stride, pad))
    g, x = _f32(g), _f32(x)
    gx = _np.empty(x.shape, _np.float32)
    if kind == "max":
        if ws is None:
            ws = _pool_with_workspace(x, kind, g.shape, kernel, stride, pad)[1]
        _run(_pool_op(2, kind, x.shape, g.shape, kernel, stride, pad), (g, ws, gx))
    else:
        _run(_pool_op(2, kind, x.shape, g.shape, kernel, stride, pad), (g, gx))
    return gx


# ---- elementwise ops on large arrays -------------------------------------------------------
# NumPy runs these on one core; oneDNN on its OpenMP threads. Below this many elements the
# call's own cost (about 10 us) outweighs what a second thread saves.
ELEMENTWISE_MIN = 1 << 17
EW_RELU, EW_RELU_GRAD, EW_ADD, EW_MULTIPLY = 0, 1, 2, 3     # kd_elementwise's kinds


def _flat_f32(*arrays):
    """Can oneDNN take these as one run of float32 each (same size, C-contiguous)?"""
    n = arrays[0].size
    if n < ELEMENTWISE_MIN or shim() is None:
        return False
    for a in arrays:
        if a.dtype != _np.float32 or a.size != n or not a.flags.c_contiguous:
            return False
    return True


def _elementwise(kind, out_shape, *arrays):
    n = arrays[0].size
    out = _np.empty(out_shape, _np.float32)
    _run((("elementwise", kind, n), lambda lib: lib.kd_elementwise(kind, n)),
         arrays + (out,))
    return out


def relu_forward(x):
    """max(x, 0) of a large contiguous float32 array, or None (the caller uses NumPy).
    NaN becomes 0 here, where NumPy's maximum keeps it."""
    return _elementwise(EW_RELU, x.shape, x) if _flat_f32(x) else None


def relu_backward(g, y):
    """g where y > 0, else 0 (y: ReLU's output), or None. Where y is NaN, g passes (as in
    PyTorch's threshold_backward); NumPy's g * (y > 0) gives 0 there."""
    if g.shape != y.shape or not _flat_f32(g, y):
        return None
    return _elementwise(EW_RELU_GRAD, g.shape, g, y)


def add(a, b):
    """a + b for two large float32 arrays of one shape, or None."""
    if a.shape != b.shape or not _flat_f32(a, b):
        return None
    return _elementwise(EW_ADD, a.shape, a, b)


def multiply(a, b):
    if a.shape != b.shape or not _flat_f32(a, b):
        return None
    return _elementwise(EW_MULTIPLY, a.shape, a, b)
