"""Batchify functions: turn a list of samples into one batch of kiln arrays.

Stacking happens on NumPy buffers (no per-sample ops, nothing recorded by autograd).  The
helpers `to_wire` / `from_wire` carry a batch between DataLoader worker processes and the
main process: kiln arrays refuse pickling by design, so they travel as plain NumPy arrays
inside a small marker and become kiln arrays again on arrival.
"""
import numpy as _np

from ..._core.base import KilnError
from ..._core.ndarray import ndarray


def _as_numpy(x):
    if isinstance(x, ndarray):
        return x._concrete("batchify")
    return _np.asarray(x)


def _stack(samples):
    first = samples[0]
    if isinstance(first, (ndarray, _np.ndarray)):
        try:
            return _np.stack([_as_numpy(s) for s in samples])
        except ValueError as exc:
            shapes = sorted({tuple(_as_numpy(s).shape) for s in samples})
            raise KilnError(f"batchify: samples of different shapes {shapes[:4]} cannot be "
                            f"stacked; pad them (gluon.data.batchify.Pad) or pass a "
                            f"batchify_fn") from exc
    return _np.asarray(samples)


def default_batchify_fn(data):
    """Stack samples; tuple samples (data, label) become a tuple of stacked fields."""
    if isinstance(data[0], (tuple, list)) and not isinstance(data[0], ndarray):
        return tuple(default_batchify_fn(list(field)) for field in zip(*data))
    return ndarray._wrap(_stack(data))


# MXNet's batchify for worker processes (it stacks into shared memory there); kiln's workers
# send batches back through to_wire/from_wire, so the same function serves both
default_mp_batchify_fn = default_batchify_fn


class Stack:
    """Stack samples along a new first axis."""

    def __call__(self, data):
        return ndarray._wrap(_stack(data))


class Pad:
    """Pad samples along every axis to the largest size in the batch, then stack."""

    def __init__(self, val=0, dtype=None):
        self._val, self._dtype = val, dtype

    def __call__(self, data):
        arrays = [_as_numpy(d) for d in data]
        shape = tuple(max(s) for s in zip(*[a.shape for a in arrays]))
        dtype = self._dtype or arrays[0].dtype
        out = _np.full((len(arrays),) + shape, self._val, dtype=dtype)
        for i, a in enumerate(arrays):
            out[(i,) + tuple(slice(0, d) for d in a.shape)] = a
        return ndarray._wrap(out)


class Group:
    """Apply one batchify function per field of tuple samples."""

    def __init__(self, *fns):
        if len(fns) == 1 and isinstance(fns[0], (list, tuple)):
            fns = tuple(fns[0])
        self._fns = fns

    def __call__(self, data):
        if len(data[0]) != len(self._fns):
            raise KilnError(f"batchify.Group: samples have {len(data[0])} fields but "
                            f"{len(self._fns)} functions were given")
        return tuple(fn([d[i] for d in data]) for i, fn in enumerate(self._fns))


Tuple = Group


class _Wire:
    """A kiln array in transit between processes, as its NumPy value."""
    __slots__ = ("value",)

    def __init__(self, value):
        self.value = value

    def __getstate__(self):
        return self.value

    def __setstate__(self, state):
        self.value = state


def to_wire(batch):
    """Replace every kiln array in a (nested) batch by a picklable NumPy carrier."""
    if isinstance(batch, ndarray):
        return _Wire(batch._concrete("DataLoader worker"))
    if isinstance(batch, (tuple, list)):
        return type(batch)(to_wire(b) for b in batch)
    if isinstance(batch, dict):
        return {k: to_wire(v) for k, v in batch.items()}
    return batch


def from_wire(batch):
    """Undo to_wire: carriers become kiln arrays again, everything else is unchanged."""
    if isinstance(batch, _Wire):
        return ndarray._wrap(batch.value)
    if isinstance(batch, (tuple, list)):
        return type(batch)(from_wire(b) for b in batch)
    if isinstance(batch, dict):
        return {k: from_wire(v) for k, v in batch.items()}
    return batch
