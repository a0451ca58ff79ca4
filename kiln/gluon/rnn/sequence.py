"""Sequence helpers shared by the recurrent cells: MXNet's input formats for `unroll`
(one array with a time axis, or a list of per-step arrays), begin states, and the
valid_length operations (mask, last valid state, reverse within the valid part).

The cells' `unroll` asks `ops_for(inputs)` for these functions: this module's for arrays,
and for MXNet 1.x Symbols the same functions built of symbol nodes, which kiln/mx/rnn
registers (gluon sits below the MXNet 1.x floor), so one unroll serves both.
"""
import sys

from ... import np as knp, npx

_SYMBOLIC = []


def register_symbolic(ops):
    """ops: an object with this module's functions, building MXNet 1.x Symbols."""
    _SYMBOLIC[:] = [ops]


def ops_for(inputs):
    """The sequence functions for these unroll inputs (one value or a list of steps)."""
    first = inputs[0] if isinstance(inputs, (list, tuple)) and inputs else inputs
    if _SYMBOLIC:
        from ..symbol_block import symbol_types
        if isinstance(first, symbol_types()):
            return _SYMBOLIC[0]
    return sys.modules[__name__]


def as_steps(length, inputs, layout):
    """(list of per-step arrays (N, ...), time axis, batch size)."""
    axis, batch_axis = layout.find("T"), layout.find("N")
    if isinstance(inputs, (list, tuple)):
        if length is not None and len(inputs) != length:
            raise ValueError(f"unroll: got {len(inputs)} steps of input for length {length}")
        return list(inputs), axis, inputs[0].shape[0]
    if length is not None and inputs.shape[axis] != length:
        raise ValueError(f"unroll: input of shape {tuple(inputs.shape)} has "
                         f"{inputs.shape[axis]} steps along axis {axis} (layout {layout}), "
                         f"not {length}")
    steps = [knp.take(inputs, knp.array(t, dtype="int64"), axis=axis)
             for t in range(inputs.shape[axis])]
    return steps, axis, inputs.shape[batch_axis]


def merge(steps, axis, merge_outputs, masked=False):
    """Per-step outputs as MXNet returns them: a list, or stacked along the time axis. Masked
    by valid_length, they are stacked unless merge_outputs=False (MXNet masks the stack)."""
    if merge_outputs or (merge_outputs is None and masked):
        return knp.stack(steps, axis=axis)
    return list(steps)


def zeros_state(func, shape, dtype, kwargs):
    """One begin state: func(shape=..., **kwargs) (MXNet's `func=np.zeros` protocol); the
    MXNet 1.x keywords name and __layout__ are dropped."""
    kwargs = {k: v for k, v in kwargs.items() if k not in ("name", "__layout__")}
    kwargs.setdefault("dtype", dtype)
    return func(shape=shape, **kwargs)


def begin_state(cell, begin, batch_size, first_step=None):
    """The states to start from: given, or the cell's zeros for this batch size."""
    return cell.begin_state(batch_size=batch_size) if begin is None else list(begin)


def stack(steps, axis):
    return knp.stack(steps, axis=axis)


def concat(left, right, name=None):
    """Per-step outputs of two directions side by side (name: the Symbol's node name)."""
    return knp.concatenate([left, right], axis=-1)


def mask(outputs, valid_length, axis, merged):
    """Outputs past each sequence's valid length set to zero."""
    data = outputs if merged else knp.stack(outputs, axis=axis)
    masked = npx.sequence_mask(data, sequence_length=valid_length, use_sequence_length=True,
                               axis=axis)
    if merged:
        return masked
    return [knp.take(masked, knp.array(t, dtype="int64"), axis=axis)
            for t in range(data.shape[axis])]


def last_valid(per_step, valid_length):
    """From per-step values [(N, ...)] the one at step valid_length - 1 of each sequence."""
    stacked = knp.stack(per_step, axis=0)                     # (T, N, ...)
    steps = knp.arange(stacked.shape[0]).reshape((-1, 1))
    pick = (steps == (knp.array(valid_length).astype("int64") - 1).reshape((1, -1)))
    pick = pick.astype(stacked.dtype).reshape(pick.shape + (1,) * (stacked.ndim - 2))
    return (stacked * pick).sum(axis=0)


def reverse(steps, valid_length=None):
    """Steps in reverse order; with valid_length, only each sequence's valid part is
    reversed (MXNet's SequenceReverse), the padding stays where it is."""
    if valid_length is None:
        return list(reversed(steps))
    length = len(steps)
    stacked = knp.stack(steps, axis=0)                        # (T, N, ...)
    batch = stacked.shape[1]
    t = knp.arange(length).reshape((-1, 1))
    valid = knp.array(valid_length).astype("int64").reshape((1, -1))
    source = knp.where(t < valid, valid - 1 - t, t)            # (T, N): step to read
    flat = knp.reshape(stacked, (length * batch,) + tuple(stacked.shape[2:]))
    index = source * batch + knp.arange(batch).reshape((1, -1))
    gathered = knp.take(flat, knp.reshape(index, (-1,)), axis=0)
    out = knp.reshape(gathered, tuple(stacked.shape))
    return [out[k] for k in range(length)]
