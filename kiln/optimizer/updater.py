"""MXNet's `optimizer.Updater` / `get_updater`: an optimizer with its per-key states.

`updater(index, grad, weight)` creates the state of `index` on first use and updates
`weight` in place. A KVStore (kiln/mx/kvstore.py) calls it on push. States save as NPZ bytes
with a JSON index (MXNet pickles them; kiln never unpickles, see README).
"""
import io
import json

import numpy as _np

from .._core.base import KilnError
from .._core.ndarray import ndarray
from ..npx.io import read_npz
from .base import _as_numpy

_FORMAT = "kiln-updater-states-v1"


class Updater:
    """MXNet's Updater: called with (index, gradient, weight), it applies its optimizer to the
    weight in place, keeping one optimizer state per index."""
    def __init__(self, optimizer):
        self.optimizer = optimizer
        self.states = {}

    def __call__(self, index, grad, weight):
        if isinstance(index, (list, tuple)):
            for i, g, w in zip(index, grad, weight):
                self(i, g, w)
            return
        if isinstance(index, bytes):
            index = index.decode()
        w = _as_numpy(weight)
        if index not in self.states:
            self.states[index] = _arrays(self.optimizer.create_state_multi_precision(index, w))
        self.optimizer.update_multi_precision(index, w, _as_numpy(grad),
                                              _buffers(self.states[index]))

    def get_states(self, dump_optimizer=False):
        """The states as bytes (an NPZ archive); the optimizer itself is not saved."""
        if dump_optimizer:
            raise KilnError("Updater.get_states(dump_optimizer=True): kiln saves states "
                            "only (MXNet pickles the optimizer; kiln never pickles)")
        index, arrays = [], {}
        for n, (key, state) in enumerate(self.states.items()):
            kind = ("none" if state is None else "tuple" if isinstance(state, tuple) else
                    "list" if isinstance(state, list) else "array")
            parts = self.optimizer.state_arrays(_buffers(state))
            index.append({"key": key, "kind": kind, "n": len(parts)})
            for j, a in enumerate(parts):
                arrays[f"s{n}_{j}"] = _np.asarray(a)
        buf = io.BytesIO()
        _np.savez(buf, __index__=_np.array(json.dumps({"format": _FORMAT, "states": index})),
                  **arrays)
        return buf.getvalue()

    def set_states(self, states):
        try:
            z = read_npz(states, "Updater.set_states")
            meta = json.loads(str(z["__index__"]))
            if meta.get("format") != _FORMAT:
                raise ValueError(f"format {meta.get('format')!r}")
            loaded = {}
            for n, item in enumerate(meta["states"]):
                parts = [z[f"s{n}_{j}"] for j in range(int(item["n"]))]
                kind = item["kind"]
                loaded[item["key"]] = (None if kind == "none" else parts[0] if
                                       kind == "array" else tuple(parts) if
                                       kind == "tuple" else parts)
        except (KilnError, ValueError, KeyError, TypeError) as e:
            raise KilnError(f"Updater.set_states: not kiln updater states ({e})") from None
        self.states = {key: _arrays(state) for key, state in loaded.items()}


def _arrays(state):
    """A state as MXNet shows it (kiln arrays; states are NDArrays there), over the same
    buffers the optimizer updates in place."""
    if isinstance(state, _np.ndarray):
        return ndarray._wrap(state)
    if isinstance(state, (tuple, list)):
        return type(state)(_arrays(part) for part in state)
    return state


def _buffers(state):
    """The NumPy buffers of a state made by _arrays, as the optimizer takes them."""
    if isinstance(state, ndarray):
        return state._data
    if isinstance(state, (tuple, list)):
        return type(state)(_buffers(part) for part in state)
    return state


def get_updater(optimizer):
    """An Updater for `optimizer` (an Optimizer instance)."""
    return Updater(optimizer)
