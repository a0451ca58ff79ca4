"""Arrays whose identity after an `if` or `while` on an array depends on the path taken.

Eagerly, `if x.max() < 1: x = -x` leaves the name x on the caller's array when the test is
false and on a new array when it is true; `while c: x = x * 2` does the same with zero
iterations or more. An in-place write afterwards (`x += 1`, or a write through a view of
x) changes the caller's array on one path only, and a write into the caller's array is
seen through x on one path only. One compiled program has one aliasing: the merged result
is a new value. So control_trace marks such pairs here, and the first in-place write into
either (or into a view of either) breaks the trace: hybridize runs that code eagerly, with
a warning, instead of compiling a write the eager program would not make.

The marks belong to the trace that made them, so they are kept per thread, as traces are.
"""
import threading
import weakref

from .base import ControlFlowError


class _ThreadMarks(threading.local):
    def __init__(self):
        # id(array) -> (weak reference, why its identity is path-dependent); keyed by
        # identity, since an array's == is elementwise
        self.marked = {}


_local = _ThreadMarks()


def mark(originals, results, same_on_paths, where, what, label):
    """Mark results[k] and originals[k] when same_on_paths[k] (one bool per path: did that
    path leave the original object in place?) is neither all true nor all false."""
    from .ndarray import ndarray
    for k, (orig, result, same) in enumerate(zip(originals, results, same_on_paths)):
        if not isinstance(orig, ndarray) or not isinstance(result, ndarray) or result is orig:
            continue
        if any(same) and not all(same):
            why = (f"{what}: {label(k)} is the same array as before on one path through "
                   f"the {what} and a new array on another, so an in-place write to it (or to "
                   "the array it was) reaches the other name on one path only, which one "
                   f"compiled program cannot follow (the {what}"
                   f"{where.splitlines()[0] if where else ''})")
            marked = _local.marked
            for a in (result, orig):
                marked[id(a)] = (weakref.ref(a), why)


def check_write(array):
    """Raise ControlFlowError before an in-place write into a marked array or its views."""
    marked = _local.marked
    if not marked:
        return
    from .trace import current
    if current() is None:
        return
    seen = array
    while seen is not None:
        entry = marked.get(id(seen))
        if entry is not None and entry[0]() is seen:
            raise ControlFlowError(entry[1])
        link = seen._view
        seen = link.base if link is not None else None


def clear():
    """Forget the marks (a trace ended: its arrays are no longer written symbolically)."""
    _local.marked.clear()
