"""Memory layouts of traced arrays, which decide whether a reshape of them is a view.

NumPy's reshape returns a view when the array's strides allow one, else a copy.
aliasing.note_view decides for a traced array by running the reshape on a stand-in with
the array's strides (its ViewLink's `shadow`: np.empty, which commits no memory). A root
array without a shadow is C-contiguous, and a view's shadow is its view op applied to its
source's. This module gives the other arrays the layout eager NumPy would give them:

- a ufunc or a reduction keeps the memory order of its operands (NumPy allocates the
  result with order='K': -x.T is F-ordered, so (-x.T).reshape(-1) is a copy, and a write
  into it leaves -x.T alone): `note_result` runs the op's kernel on small stand-ins with
  the operands' axis order, and gives the result that order;
- a branch or loop body gets its variables with their layouts (`inherit`); a loop whose
  body changes a carried array's layout is traced again with each layout an iteration
  may start with, no symbol saying which (`loop_layouts`, `set_layouts`), until the body
  makes no new one (after a few rounds, the layout is unknown);
- after an `if`/`while` on an array, a variable is on each path what that path made of
  it, so its layout may depend on the path: `merge` records the candidate layouts, each
  with the 0-d bool symbol true on the paths that give it (None where no symbol says),
  and `candidates` gives them, for the array or any view of it, to note_view, which
  decides per path whether a reshape is a view (alias_paths follows the paths where it
  is, or refuses a write when it cannot tell).

Records belong to the trace that made them and are kept per thread, as traces are.
"""
import threading
import weakref

import numpy as _np

from .symdim import hinted

# ops whose NumPy kernels allocate the result in the operands' memory order (besides the
# elementwise ones)
_ORDER_KEEPING = frozenset(("sum", "max", "min", "prod", "argmax", "argmin"))


class _ThreadState(threading.local):
    def __init__(self):
        self.paths = {}     # id(array) -> (weak reference, [(condition or None, stand-in)])
        self.given = {}     # id(array) -> (weak reference, stand-in): a root's own layout


_local = _ThreadState()


def of(array):
    """A NumPy array with `array`'s strides: its data when eager, else its stand-in (which
    aliasing._link_of takes as the shadow of a root array)."""
    if array._node is None:
        return array._data
    link = array._view
    if link is not None and link.shadow is not None:
        return link.shadow
    hit = _local.given.get(id(array))
    if hit is not None and hit[0]() is array:
        return hit[1]
    return _np.empty(hinted(array.shape), array.dtype)


def _same(a, b):
    return a.strides == b.strides or (a.flags.c_contiguous and b.flags.c_contiguous)


def _give(array, stand_in):
    """`array` (a new root array) has the layout of `stand_in`."""
    if stand_in is None or stand_in.flags.c_contiguous:
        return
    if array._view is not None:
        if array._view.base is None:
            array._view.shadow = stand_in
        return
    _local.given[id(array)] = (weakref.ref(array), stand_in)


def set_paths(array, entries):
    """`array` (a new root array) has, on the paths where each condition holds, the layout
    of that entry's stand-in (None: unknown)."""
    first = entries[0][1]
    if all(s is not None for _, s in entries) and all(_same(first, s) for _, s in entries):
        _give(array, first)
    else:
        _local.paths[id(array)] = (weakref.ref(array), list(entries))


def merge(result, arrays, conditions):
    """`result` (a new root array) is, on each path, arrays[i] (or has its layout) where
    conditions()[i] holds. An array whose own layout depends on the path gives each of
    its layouts, with no symbol saying where (its conditions may belong to another
    trace, a loop body's)."""
    stands = [layouts_of(a) for a in arrays]
    flat = [s for found in stands for s in found]
    if all(s is not None for s in flat) and all(_same(flat[0], s) for s in flat):
        _give(result, flat[0])
        return
    entries = []
    for found, condition in zip(stands, conditions()):
        entries += [(condition, found[0])] if len(found) == 1 else [(None, s) for s in found]
    _local.paths[id(result)] = (weakref.ref(result), entries)


def layouts_of(array):
    """The layouts `array` may have (stand-ins; None: unknown), one per path."""
    found = candidates(array)
    return [of(array)] if found is None else [s for _, s in found]


def loop_layouts(known, returned):
    """A loop body, traced with a carried array laid out as any of `known` (stand-ins;
    None: unknown), returned `returned` for it. The layouts to trace the body with again,
    so that every iteration starts with one of them, or None when `known` has them all."""
    if any(k is None for k in known):
        return None
    found = layouts_of(returned)
    if any(s is None for s in found):
        return [None]
    new = [s for s in found if not any(_same(s, k) for k in known)]
    return known + new if new else None


def set_layouts(array, stands):
    """`array` (a new root array: a loop-carried value in the body) is laid out as one of
    `stands` (None: unknown), no symbol saying which."""
    set_paths(array, [(None, s) for s in stands])


def inherit(array, source):
    """`array` (a new root array standing for `source` in a branch or loop body) has
    source's layout, path-dependent or not."""
    found = candidates(source)
    if found is not None:
        _local.paths[id(array)] = (weakref.ref(array), found)
    else:
        _give(array, of(source))


def set_unknown(array):
    """`array`'s layout is not known (a loop-carried value whose layout changes between
    iterations): a reshape of it that may be a view cannot be followed."""
    _local.paths[id(array)] = (weakref.ref(array), [(None, None)])


def candidates(array):
    """None when `array`'s layout does not depend on the path; else [(condition or None,
    stand-in with array's strides on those paths, or None when unknown)]."""
    if not _local.paths:
        return None
    chain, a = [], array
    while a is not None:
        hit = _local.paths.get(id(a))
        if hit is not None and hit[0]() is a:
            break
        link = a._view
        if link is None or link.base is None:
            return None
        chain.append((link.prim, link.attrs))
        a = link.base
    out = []
    for condition, stand_in in hit[1]:
        if stand_in is not None:
            for prim, attrs in reversed(chain):
                stand_in = prim.impl(stand_in, **attrs)
        out.append((condition, stand_in))
    return out


def strided(arrays):
    """Does an operand have a layout other than C-contiguous (or one that depends on the
    path)? Only then does note_result have work."""
    for a in arrays:
        if a._node is None:
            if not a._data.flags.c_contiguous:
                return True
            continue
        link = a._view
        if link is not None and link.shadow is not None:
            if not link.shadow.flags.c_contiguous:
                return True
        elif _local.given and id(a) in _local.given and _local.given[id(a)][0]() is a:
            return True
        if _local.paths and candidates(a) is not None:
            return True
    return False


def note_result(prim, arrays, attrs, out):
    """`out = prim(*arrays)`, just traced, is not a view, and an operand is `strided`:
    give out the layout NumPy's kernel would give it, per path if an operand's layout
    depends on the path."""
    if not (prim.elementwise or prim.name in _ORDER_KEEPING) or out.ndim < 2 or out.size == 0:
        return
    varying = [(i, found) for i, a in enumerate(arrays)
               if (found := candidates(a)) is not None]
    layouts = [of(a) for a in arrays]
    if not varying:
        _give(out, _result_layout(prim, layouts, attrs, out))
        return
    if len(varying) > 1:
        set_unknown(out)
        return
    i, found = varying[0]
    entries = []
    for condition, stand_in in found:
        if stand_in is None:
            entries.append((condition, None))
            continue
        layouts[i] = stand_in
        laid = _result_layout(prim, layouts, attrs, out)
        if laid is None:
            laid = _np.empty(hinted(out.shape), out.dtype)
        entries.append((condition, laid))
    set_paths(out, entries)


def _result_layout(prim, layouts, attrs, out):
    """A full-size stand-in for `out` in the axis order prim's kernel gives its result
    (None: C order)."""
    try:
        with _np.errstate(all="ignore"):
            small = _np.asarray(prim.impl(*[_small(s) for s in layouts], **attrs))
    except Exception:   # noqa: BLE001 -- a kernel that refuses stand-ins: keep C order
        return None
    if small.ndim != out.ndim or small.flags.c_contiguous:
        return None
    order = _axis_order(small)
    return _np.empty(tuple(hinted(out.shape[i]) for i in order), out.dtype).transpose(
        _np.argsort(order))


def _axis_order(a):
    """Axes from the slowest-varying in memory to the fastest (stable for ties)."""
    return sorted(range(a.ndim), key=lambda i: -abs(a.strides[i]))


def _small(layout):
    """An array of ones with at most 2 elements per axis, in `layout`'s axis order, with
    its reversed and broadcast (stride 0) axes."""
    shape, strides = layout.shape, layout.strides
    small_shape = tuple(min(d, 2) for d in shape)
    order = _axis_order(layout)
    dense = tuple(1 if strides[i] == 0 else small_shape[i] for i in order)
    a = _np.ones(dense, layout.dtype).transpose(_np.argsort(order))
    flips = tuple(i for i in range(len(shape)) if strides[i] < 0 and small_shape[i] > 1)
    if flips:
        a = _np.flip(a, flips)
    if a.shape != small_shape:
        a = _np.broadcast_to(a, small_shape)
    return a


def clear():
    """Forget the records (a trace ended)."""
    _local.paths.clear()
    _local.given.clear()
