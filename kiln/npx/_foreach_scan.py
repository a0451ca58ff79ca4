"""npx.foreach while hybridize traces: the body becomes the body of one `scan` node
(kiln/graph/scan_trace.py), so the compiled program loops over the data itself.

`scan` carries states and stacks one step output of the states' dtype over one sequence.
foreach's several data arrays are packed as the columns of one (T, total) sequence, and its
several outputs as one flat row per step; both are unpacked by slicing.
"""
import numpy as _np

from .._core.base import ControlFlowError


def _size(shape):
    return int(_np.prod(shape, dtype=_np.int64))


def _pack_rows(datas):
    from .. import np
    if len(datas) == 1:
        return datas[0]
    length = datas[0].shape[0]
    return np.concatenate([np.reshape(d, (length, -1)) for d in datas], axis=1)


def _unpack_row(row, shapes):
    from .. import np
    if len(shapes) == 1:
        return [row]
    out, at = [], 0
    for shape in shapes:
        out.append(np.reshape(row[at:at + _size(shape)], shape))
        at += _size(shape)
    return out


def foreach_as_scan(body, datas, single_data, states, single_state):
    """(stacked outputs, final states) from one scan node, or None when the loop does not
    fit scan (no states or outputs, mixed dtypes, a random op in the body): the caller then
    runs it step by step."""
    from .. import np
    from ..graph.scan_trace import emit_scan
    from .._core.ndarray import ndarray
    if not states or not all(isinstance(a, ndarray) for a in list(datas) + list(states)):
        return None
    state_dtype = states[0].dtype
    if any(s.dtype != state_dtype for s in states) or \
            any(d.dtype != datas[0].dtype for d in datas):
        return None
    data_shapes = [tuple(d.shape[1:]) for d in datas]
    out_shapes = []

    def step(x_t, carried):
        items = _unpack_row(x_t, data_shapes)
        outs, new = body(items[0] if single_data else items,
                         carried[0] if single_state else carried)
        outs = list(outs) if isinstance(outs, (list, tuple)) else [outs]
        new = list(new) if isinstance(new, (list, tuple)) else [new]
        if not outs or any(not isinstance(o, ndarray) or o.dtype != state_dtype
                           for o in outs):
            raise _NotScan()
        out_shapes.extend(tuple(o.shape) for o in outs)
        y = outs[0] if len(outs) == 1 else np.concatenate([np.reshape(o, (-1,)) for o in outs])
        return y, new

    try:
        ys, final = emit_scan(step, _pack_rows(datas), states, what="npx.foreach")
    except (_NotScan, ControlFlowError):
        return None
    if len(out_shapes) == 1:
        return [ys], list(final)
    length = datas[0].shape[0]
    outputs, at = [], 0
    for shape in out_shapes:
        outputs.append(np.reshape(ys[:, at:at + _size(shape)], (length,) + shape))
        at += _size(shape)
    return outputs, list(final)


class _NotScan(Exception):
    """The body's outputs do not fit one scan node (none, or not of the states' dtype)."""
