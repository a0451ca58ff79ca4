"""MXNet 1.x's sequence and layout operators by their MXNet names (SequenceMask,
SequenceLast, SequenceReverse, Pad, LRN, SwapAxis, depth_to_space, space_to_depth,
broadcast_axis), for `nd.X` and `sym.X`; see kiln/mx/ops for the table.

Each is composed of registry primitives: masks are `where` against a constant step index,
per-sequence picks and reversals are one `take` on the (time x batch) rows with an index
computed from the lengths, padding is a gather with clipped or reflected indices. So all of
them record gradients and trace.
"""
import numpy as _np

from ... import np as knp
from ..._core.base import KilnError
from .table import _op
from ..._core.ndarray import ndarray


def _const(values):
    return ndarray._wrap(_np.asarray(values))


def _along(values, axis, ndim):
    """A 1-d array shaped to broadcast along `axis` of an ndim-d array."""
    shape = [1] * ndim
    shape[axis] = -1
    return knp.reshape(values, tuple(shape))


def _check_axis(op, axis):
    if axis not in (0, 1):
        raise KilnError(f"{op}: axis must be 0 (time-major) or 1 (batch-major), got {axis}")


@_op("SequenceMask _npx_sequence_mask", ("data", "sequence_length"))
def SequenceMask(data, sequence_length=None, use_sequence_length=False, value=0.0, axis=0,
                 **_):
    if not use_sequence_length:
        return data + 0
    axis = int(axis)
    _check_axis("SequenceMask", axis)
    steps = _along(_const(_np.arange(data.shape[axis])), axis, data.ndim)
    lengths = _along(sequence_length.astype(data.dtype), 1 - axis, data.ndim)
    fill = knp.full((), float(value), dtype=data.dtype)
    return knp.where(steps < lengths, data, fill)


def _time_major_rows(data, axis):
    """(T, N, rest...) flattened to (T * N, rest...)."""
    tm = knp.swapaxes(data, 0, 1) if axis == 1 else data
    return tm, knp.reshape(tm, (tm.shape[0] * tm.shape[1],) + tm.shape[2:])


@_op("SequenceLast", ("data", "sequence_length"))
def SequenceLast(data, sequence_length=None, use_sequence_length=False, axis=0, **_):
    axis = int(axis)
    _check_axis("SequenceLast", axis)
    if not use_sequence_length:
        return knp.take(data, [data.shape[axis] - 1], axis=axis).squeeze(axis)
    tm, rows = _time_major_rows(data, axis)
    n = tm.shape[1]
    last = sequence_length.astype(_np.int64) - 1
    flat = last * n + _const(_np.arange(n))
    return knp.take(rows, flat, axis=0)


@_op("SequenceReverse", ("data", "sequence_length"))
def SequenceReverse(data, sequence_length=None, use_sequence_length=False, axis=0, **_):
    if int(axis) != 0:
        raise KilnError("SequenceReverse: only axis=0 (time-major data) is supported, as in "
                        "MXNet")
    if not use_sequence_length:
        return knp.flip(data, 0)
    t_len, n = data.shape[0], data.shape[1]
    steps = _const(_np.arange(t_len).reshape(-1, 1))
    lengths = knp.reshape(sequence_length.astype(_np.int64), (1, n))
    source = knp.where(steps < lengths, lengths - 1 - steps, steps)
    flat = source * n + _const(_np.arange(n).reshape(1, n))
    rows = knp.reshape(data, (t_len * n,) + data.shape[2:])
    return knp.take(rows, flat, axis=0)


@_op("SwapAxis swapaxes")
def SwapAxis(data, dim1=0, dim2=0, **_):
    return knp.swapaxes(data, int(dim1), int(dim2))


@_op("broadcast_axis broadcast_axes")
def broadcast_axis(data, axis=(), size=(), **_):
    axes = (axis,) if isinstance(axis, int) else tuple(axis)
    sizes = (size,) if isinstance(size, int) else tuple(size)
    shape = list(data.shape)
    for a, s in zip(axes, sizes):
        a = int(a) % data.ndim
        if shape[a] != 1:
            raise KilnError(f"broadcast_axis: axis {a} has size {shape[a]}, expected 1")
        shape[a] = int(s)
    return knp.broadcast_to(data, tuple(shape))


def _pad_index(n, lo, hi, mode):
    i = _np.arange(-lo, n + hi)
    if mode == "edge":
        return _np.clip(i, 0, n - 1)
    if lo >= n or hi >= n:
        raise KilnError(f"Pad: reflect padding ({lo}, {hi}) must be smaller than the axis "
                        f"size {n}")
    i = _np.abs(i)
    return _np.where(i > n - 1, 2 * (n - 1) - i, i)


@_op("Pad pad")
def Pad(data, mode="constant", pad_width=(), constant_value=0.0, **_):
    widths = [int(w) for w in pad_width]
    if len(widths) != 2 * data.ndim:
        raise KilnError(f"Pad: pad_width needs 2 entries per axis ({2 * data.ndim}), got "
                        f"{len(widths)}")
    pairs = list(zip(widths[0::2], widths[1::2]))
    if mode == "constant":
        return knp.pad(data, pairs, constant_values=float(constant_value))
    if mode not in ("edge", "reflect"):
        raise KilnError(f"Pad: mode must be 'constant', 'edge' or 'reflect', got {mode!r}")
    out = data
    for axis, (lo, hi) in enumerate(pairs):
        if lo or hi:
            out = knp.take(out, _pad_index(out.shape[axis], lo, hi, mode), axis=axis)
    return out


@_op("LRN")
def LRN(data, alpha=1e-4, beta=0.75, knorm=2.0, nsize=5, **_):
    """x / (knorm + alpha / nsize * sum of x^2 over nsize neighbouring channels)^beta."""
    nsize = int(nsize)
    half = nsize // 2
    sq = data * data
    widths = [(0, 0)] * data.ndim
    widths[1] = (half, half)
    padded = knp.pad(sq, widths)
    c = data.shape[1]
    window = padded[:, 0:c]
    for k in range(1, nsize):
        window = window + padded[:, k:k + c]
    return data / (float(knorm) + float(alpha) / nsize * window) ** float(beta)


def _check_block(op, data, b):
    if b < 1 or data.ndim != 4 or 0 in data.shape:
        raise KilnError(f"{op}: needs block_size >= 1 and a non-empty 4-d input, got "
                        f"block_size {b} and shape {tuple(data.shape)}")


@_op("depth_to_space")
def depth_to_space(data, block_size=1, **_):
    b = int(block_size)
    _check_block("depth_to_space", data, b)
    n, c, h, w = data.shape
    if c % (b * b):
        raise KilnError(f"depth_to_space: channels {c} not divisible by block_size^2 = {b * b}")
    x = knp.reshape(data, (n, b, b, c // (b * b), h, w))
    x = knp.transpose(x, (0, 3, 4, 1, 5, 2))
    return knp.reshape(x, (n, c // (b * b), h * b, w * b))


@_op("space_to_depth")
def space_to_depth(data, block_size=1, **_):
    b = int(block_size)
    _check_block("space_to_depth", data, b)
    n, c, h, w = data.shape
    if h % b or w % b:
        raise KilnError(f"space_to_depth: height {h} and width {w} must be multiples of "
                        f"block_size {b}")
    x = knp.reshape(data, (n, c, h // b, b, w // b, b))
    x = knp.transpose(x, (0, 3, 5, 1, 2, 4))
    return knp.reshape(x, (n, c * b * b, h // b, w // b))


@_op("SliceChannel split", num_outputs=lambda attrs: attrs.get("num_outputs", 1))
def SliceChannel(data, num_outputs=1, axis=1, squeeze_axis=False, **_):
    """nd.SliceChannel / nd.split of MXNet 1.x: `num_outputs` equal parts along `axis`,
    always a list (the axis dropped with squeeze_axis when the parts have size 1)."""
    parts = knp.split(data, int(num_outputs), axis=int(axis))
    if squeeze_axis:
        parts = [knp.squeeze(p, axis=int(axis)) for p in parts]
    return list(parts)
