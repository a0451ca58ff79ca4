"""Guards: notice when a value a compiled graph baked in as a constant has changed.

While hybridize traces, Python numbers and arrays that the traced code reads from outside
its arguments -- `self.<attr>` (recorded by converted code), the globals and closure
variables of the traced functions -- end up as constants in the graph. The recorder keeps
a snapshot of each; before a compiled entry is reused, its check compares them (identity
and content for arrays, value for numbers) and a mismatch makes hybridize trace again.

Cost: an entry without guards pays one attribute test per call; each guard costs a lookup
and a comparison (an array guard compares bytes, so it scales with the array's size).
Helper methods of the traced object are converted too, so their reads are watched. Values
reached other ways (an array inside a dict attribute, a number in the globals of a plain
function the traced code calls) are not watched.
"""
import threading

import numpy as _np


class _ThreadBuilds(threading.local):
    def __init__(self):
        # recorders of this thread's builds in progress (nested builds: children blocks);
        # per thread, as traces are: another thread's trace reads other values
        self.active = []


_local = _ThreadBuilds()

_SCALARS = (bool, int, float, complex, str, type(None))


def _global_loads(code):
    """Names the code reads as globals. co_names also lists attribute names (x.mean), which
    would watch an unrelated global of the same name and retrace on its changes."""
    import dis
    return {i.argval for i in dis.get_instructions(code)
            if i.opname in ("LOAD_GLOBAL", "LOAD_NAME")}


def _snapshot(value):
    """(kind, reference, copy) for a value worth watching, else None."""
    from .._core.ndarray import ndarray
    if type(value) in _SCALARS or isinstance(value, _np.number):
        return ("value", value, None)
    if isinstance(value, ndarray):
        if value._node is not None or value._data is None:
            return None
        return ("kiln", value, value._data.tobytes())
    if isinstance(value, _np.ndarray):
        return ("numpy", value, value.tobytes())
    return None


def _same(snap, value):
    kind, ref, copy = snap
    if kind == "value":
        return type(value) is type(ref) and (value == ref or value != value and ref != ref)
    if value is not ref:
        return False
    data = value._data if kind == "kiln" else value
    return data.tobytes() == copy


class Recorder:
    def __init__(self):
        self.watched = {}     # key -> (getter, description)
        self.functions = set()

    def watch(self, key, getter, value, description):
        if key in self.watched:
            return
        if _snapshot(value) is not None:
            self.watched[key] = (getter, description)

    def note_function(self, fn):
        code = getattr(fn, "__code__", None)
        if code is None or code in self.functions:
            return
        self.functions.add(code)
        from .convert import _all_code
        glob = fn.__globals__
        for c in _all_code(code):
            for name in _global_loads(c):
                if name in glob:
                    self.watch(("global", id(glob), name),
                               lambda g=glob, n=name: g.get(n, _MISSING), glob[name],
                               f"global {name!r}")
        for name, cell in zip(code.co_freevars, fn.__closure__ or ()):
            try:
                value = cell.cell_contents
            except ValueError:
                continue
            self.watch(("cell", id(cell)), lambda c=cell: _cell_value(c), value,
                       f"closure variable {name!r}")

    def check(self):
        """A function returning True while every watched value is unchanged, or None."""
        if not self.watched:
            return None
        # snapshots are taken when the trace ends: a value the traced code itself updates
        # (a call counter) must not force a new trace on every call
        items = []
        for getter, _ in self.watched.values():
            snap = _snapshot(getter())
            if snap is not None:
                items.append((getter, snap))
        if not items:
            return None

        def unchanged():
            for getter, snap in items:
                if not _same(snap, getter()):
                    return False
            return True
        unchanged.descriptions = [d for _, d in self.watched.values()]
        return unchanged


_MISSING = object()


def _cell_value(cell):
    try:
        return cell.cell_contents
    except ValueError:
        return _MISSING


def start():
    rec = Recorder()
    _local.active.append(rec)
    return rec


def stop(rec):
    _local.active.remove(rec)


def note_attribute(obj, name, value):
    active = _local.active
    if not active:
        return
    active[-1].watch(("attr", id(obj), name), lambda o=obj, n=name: getattr(o, n, _MISSING),
                      value, f"attribute {type(obj).__name__}.{name}")


def note_function(fn):
    active = _local.active
    if active:
        active[-1].note_function(fn)
