"""Arrays whose identity after an `if` or `while` on an array depends on the path taken.

Eagerly, `if x.max() < 1: x = -x` leaves the name x on the caller's array when the test is
false and on a new array when it is true; `while c: x = x * 2` does the same with zero
iterations or more. An in-place write afterwards (`x += 1`, or a write through a view of
x) then changes the caller's array on one path only, and a write into the caller's array
(through another name, or a view) is seen through x on one path only.

One compiled program follows every path. control_trace links the merged result to the
array it is on some paths, with a 0-d bool symbol that is true on exactly those paths
(`link`). After an in-place write into either array, or into an array sharing memory with
it (a view of it, the array it views), the other one takes the written value where the
symbol is true: `other = where(same, written, other)` (`after_write`). Each merged result
gets one link, to an array older than itself, and a view belongs to the memory of its
base, so the links between memories form a forest: following them from the written
memory reaches every linked memory once, along the only chain there is, and a chain of
`where`s is exact.

A reshape of such a result may be a view on one path and a copy on another (the result
is a transposed view of the caller's array on one path and a new C-ordered array on the
other; layouts.py): it is a new array then, linked to what it reshapes as a reshape of
its memory on the paths where NumPy makes a view (`link(..., view=True)`).

What a link cannot say is marked instead (`mark`): a result that is, on some path,
another name's array or a view of its own (a swap, `x = y` or `x = x[::-1]` in one
branch), and a reshape whose view-ness on some path no symbol says. The first in-place
write into such an array or its views breaks the trace (PathAliasingError), and hybridize
runs that code eagerly, with a warning; strict mode refuses it.

Links and marks belong to the trace that made them and are kept per thread, as traces
are; a write follows only the links of the trace it is made in.
"""
import threading
import weakref

from .base import ControlFlowError
from .primitive import REGISTRY


class PathAliasingError(ControlFlowError):
    """An in-place write whose target depends on the path taken through an if/while in a
    way no link follows: hybridize runs the code eagerly (strict mode refuses it)."""

    def __init__(self, message):
        super().__init__(message)
        self.kind = "path-aliasing"


class _Link:
    """`child` (a merged result) is `parent` on the paths where `same` is true; with
    `view`, it is a reshape of parent's memory there (and a copy elsewhere)."""
    __slots__ = ("child", "parent", "same", "ctx", "view")

    def __init__(self, child, parent, same, ctx, view):
        # the parent is held: a view that only the link still reaches (the name moved to
        # the merged result) is how a write through the child reaches its base's memory
        self.child, self.parent = weakref.ref(child), parent
        self.same, self.ctx, self.view = same, ctx, view


class _ThreadState(threading.local):
    def __init__(self):
        # keyed by id(array) (an array's == is elementwise), checked through weak references
        self.parent = {}       # id(child) -> its _Link
        self.children = {}     # id(parent) -> [_Link, ...]
        self.marked = {}       # id(array) -> (weak reference, why it cannot be compiled)


_local = _ThreadState()


def link(original, result, same, view=False):
    """Record that `result` is the array `original` (with `view`: a reshape of its memory)
    on the paths where `same` (a 0-d bool array of the current trace) is true, and a
    different array on the others."""
    from .trace import current
    entry = _Link(result, original, same, current(), view)
    _local.parent[id(result)] = entry
    _local.children.setdefault(id(original), []).append(entry)


def _parent_link(array):
    entry = _local.parent.get(id(array))
    return entry if entry is not None and entry.child() is array else None


def ancestors(array):
    """[(array, []), (its linked original, [same]), (that one's original, [same, same2]),
    ...]: the chain of arrays `array` may be, each with the conditions that make it so."""
    chain, conditions = [(array, [])], []
    entry = _parent_link(array)
    while entry is not None and not entry.view:
        conditions = conditions + [entry.same]
        chain.append((entry.parent, conditions))
        entry = _parent_link(entry.parent)
    return chain


class _Cross:
    def __repr__(self):
        return "CROSS"


# identity(): the result may be an array no link can name (compare with `is`: the other
# answers may be arrays, whose == is elementwise)
CROSS = _Cross()


def identity(result, given, all_given, ctx):
    """How `result`, returned for a variable by a branch or loop body traced in `ctx`,
    relates to `given`, the array that branch got for the same variable: True (it is that
    array), False (a new array), a 0-d bool array of ctx (it is that array where the symbol
    holds: an inner if/while linked them), or CROSS (on some path it is, or views, another
    given array or an array from outside the branch: no link can say that)."""
    owned = getattr(ctx, "owned", None)
    for a, conditions in ancestors(result):
        if a is given:
            return all_of(conditions)
        b = a
        while b is not None:        # a, then the arrays it is a view of
            entry = _parent_link(b)
            if b is given or any(b is g for g in all_given) or (
                    owned is not None and b._node is not None and id(b._node) not in owned
            ) or (entry is not None and entry.view):
                return CROSS
            b = b._view.base if b._view is not None else None
    return False


def all_of(conditions):
    """True for no condition, else the logical and of the 0-d bool arrays."""
    if not conditions:
        return True
    result = conditions[0]
    for c in conditions[1:]:
        result = REGISTRY["logical_and"](result, c)
    return result


def _memory(array):
    """Every live array sharing `array`'s memory: its root base and all views of it."""
    root = array
    while root._view is not None and root._view.base is not None:
        root = root._view.base
    found, stack = [], [root]
    while stack:
        a = stack.pop()
        found.append(a)
        link_ = a._view
        if link_ is not None:
            for ref in link_.views:
                v = ref()
                if v is not None and v._view is not None and v._view.base is a:
                    stack.append(v)
    return found


def _links_of(array, ctx):
    """(link, the array at its other end) for every link of `array` made in trace `ctx`."""
    out = []
    entry = _parent_link(array)
    if entry is not None and entry.ctx is ctx:
        out.append((entry, entry.parent))
    for entry in _local.children.get(id(array), ()):
        child = entry.child()
        if entry.ctx is ctx and entry.parent is array and child is not None:
            out.append((entry, child))
    return out


def after_write(array):
    """`array` was just written in place: make the write where each linked array is the
    same memory (see the module docstring)."""
    if not _local.parent:
        return
    from .trace import current
    ctx = current()
    if ctx is None:
        return
    from .aliasing import write
    memory = _memory(array)
    done = {id(a) for a in memory}
    pending = list(memory)
    while pending:
        written = pending.pop()
        for entry, other in _links_of(written, ctx):
            if id(other) in done:
                continue
            check_write(other)
            value = written
            if entry.view:
                value = REGISTRY["reshape"](written, shape=tuple(other.shape))
            write(other, REGISTRY["where"](entry.same, value, other))
            more = _memory(other)
            done.update(id(a) for a in more)
            pending.extend(more)


def mark(pairs, why):
    """Refuse in-place writes into the arrays of these pairs from now on: which memory
    they are depends on the path in a way no link follows."""
    marked = _local.marked
    for pair in pairs:
        for a in pair:
            marked[id(a)] = (weakref.ref(a), why)


def check_write(array):
    """Raise PathAliasingError before an in-place write into a marked array or its views."""
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
            raise PathAliasingError(entry[1])
        link_ = seen._view
        seen = link_.base if link_ is not None else None


def clear():
    """Forget links and marks (a trace ended: its arrays are no longer written symbolically)."""
    _local.parent.clear()
    _local.children.clear()
    _local.marked.clear()
