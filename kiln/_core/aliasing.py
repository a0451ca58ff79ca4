"""Views and in-place writes for arrays that are graph nodes or on the autograd tape.

Eager kiln follows NumPy: a slice, `reshape`, `.T`, `expand_dims`, `squeeze` or `split`
shares memory with its source, so a write through either is seen by both. An eager array
gets that from NumPy itself. A symbolic array (while hybridize traces) or a recorded one
(inside autograd.record()) is a value, not memory, and an in-place op on it rebinds the
array object to a new value. This module keeps the NumPy semantics for them:

- a view op applied to such an array links the result to its source (`ViewLink`), when
  NumPy would return a view there (decided by running the op's own eager kernel on a
  stand-in array of the same layout, so the rule is NumPy's: a reshape of a transposed
  array is a copy);
- a write into a linked view becomes a write into its source (a `slice_assign`, or the
  inverse reshape/transpose), and every live view of a written array is recomputed from
  the new value, recursively, so all of them see the write.

The whole chain is made of ordinary primitives, so it is traced, compiled and
differentiated like any other code. `broadcast_to` gives a read-only view (and so does
any view of it): it sees writes into its source, and a write into it detaches it (eager
copies it first).
"""
import weakref

import numpy as _np

from . import alias_paths, layouts
from .primitive import REGISTRY
from .symdim import SymInt, hinted

VIEW_OPS = frozenset(("reshape", "transpose", "slice", "broadcast_to"))


class ViewLink:
    """What an array is a view of (None for a root), its own live views, and the size
    guards its view decisions wait on (`pending`: recorded when a write reaches it)."""
    __slots__ = ("base", "prim", "attrs", "shadow", "views", "detached", "pending")

    def __init__(self, base, prim, attrs, shadow, detached=False):
        self.base, self.prim, self.attrs, self.shadow = base, prim, attrs, shadow
        self.views = []      # weak references to arrays linked to this one
        self.detached = detached    # x.detach(): the same memory, no gradient
        self.pending = []


def _link_of(array):
    link = array._view
    if link is None:
        link = array._view = ViewLink(None, None, None, None)
    if link.shadow is None and array._node is not None:
        # a stand-in with the array's layout (layouts.py; np.empty commits no memory)
        link.shadow = layouts.of(array)
    return link


def note_view(prim, source, attrs, out):
    """`out = prim(source)` was just made while tracing or recording: link it when NumPy
    would have returned a view (an eager array here: when the kernel's result shares
    memory with its input)."""
    if out.size == 0:
        return
    base = _link_of(source)
    if out._node is None:
        shadow = None
        shares = source._node is None and _np.may_share_memory(out._data, source._data)
    else:
        shadow = prim.impl(base.shadow, **hinted(attrs))
        shares = _np.may_share_memory(shadow, base.shadow)
        pending = _view_decision_guards(prim, base.shadow, source.shape, out.shape)
        if prim.name == "reshape":
            paths = layouts.candidates(source)
            if paths is not None:
                shares = _reshape_on_paths(prim, source, attrs, out, paths, shares)
        if pending:
            # the decision is seen only through a write into source's or out's memory
            base.pending = [g for g in base.pending if g.current()] + pending
            if not shares:
                _link_of(out).pending.extend(pending)
    if not shares:
        return
    out._view = ViewLink(source, prim, attrs, shadow)
    if len(base.views) >= 16:      # a long-lived array viewed on every training step
        base.views = [r for r in base.views if r() is not None]
    base.views.append(weakref.ref(out))


def _view_decision_guards(prim, shadow, *shapes):
    """The guards under which the view decision made on a stand-in (traced sizes) holds:
    each size stays 0, 1 or >= 2 (NumPy treats those apart), and a reshape of a stand-in
    that is not C-contiguous, whose outcome depends on the sizes' values, keeps the traced
    ones. They are kept pending (symdim.Pending): whether a result shares memory shows only
    through an in-place write, so a program without one stays general in these sizes."""
    pin = prim.name == "reshape" and not shadow.flags.c_contiguous
    pending = []
    for shape in shapes:
        for d in shape:
            if isinstance(d, SymInt):
                if pin or d.hint < 2:
                    guard = d.condition("==", d.hint)
                else:
                    guard = d.condition(">=", 2)
                if guard is not None:
                    pending.append(guard)
    return pending


def _commit_view_guards(array):
    """A write into `array` reaches every array sharing its memory: from its root down,
    the view decisions made there now matter, so their pending guards are recorded."""
    while array._view is not None and array._view.base is not None:
        array = array._view.base
    stack = [array]
    while stack:
        link = stack.pop()._view
        if link is None:
            continue
        for guard in link.pending:
            guard.commit()
        link.pending = []
        stack.extend(v for v in (ref() for ref in link.views) if v is not None)
def _reshape_on_paths(prim, source, attrs, out, paths, shares):
    """Whether `out = reshape(source)` is a view, when source's layout depends on the path
    taken through an earlier if/while (layouts.py): True or False when it is the same on
    every path; else out becomes a new array, linked to source as a reshape of its memory
    on the paths where NumPy makes a view (alias_paths), and this returns False."""
    found = []
    for condition, stand_in in paths:
        if stand_in is None:
            found.append((condition, None, None))
            continue
        result = prim.impl(stand_in, **hinted(attrs))
        found.append((condition, _np.may_share_memory(result, stand_in), result))
    views = {is_view for _, is_view, _ in found}
    if views == {True} or views == {False}:
        return views.pop()
    if None in views or any(condition is None for condition, _, _ in found):
        alias_paths.mark([(out, source)], "reshape: the array reshaped has a memory layout "
                         "that depends on the path taken through an earlier if/while, so the "
                         "reshape is a view on some paths and a copy on others; an in-place "
                         "write into either cannot be compiled")
        return shares
    view_on = [condition for condition, is_view, _ in found if is_view]
    same = view_on[0]
    for condition in view_on[1:]:
        same = REGISTRY["logical_or"](same, condition)
    alias_paths.link(source, out, same, view=True)
    copy = _np.empty(hinted(out.shape), out.dtype)      # a reshape copy is C-ordered
    layouts.set_paths(out, [(condition, result if is_view else copy)
                            for condition, is_view, result in found])
    return False


def note_detach(source, out):
    """`out = source.detach()` shares source's memory (as in MXNet and PyTorch): while
    tracing or recording, link it as an identity view that never carries a gradient."""
    base = _link_of(source)
    out._view = ViewLink(source, REGISTRY["reshape"], {"shape": tuple(source.shape)},
                         base.shadow, detached=True)
    base.views.append(weakref.ref(out))


def write(target, new):
    """`target` now holds `new` (same shape and dtype): through its source when it is a
    writable view, then into every live view of what was written."""
    _commit_view_guards(target)
    link = target._view
    if link is not None and link.base is not None:
        if _read_only(target):
            _detach(target)
        else:
            write(link.base, _scatter_back(link, new))
            return
    _set(target, new)
    _refresh_views(target)


def _read_only(array):
    """A broadcast view, or any view of one, is read-only in NumPy."""
    link = array._view
    while link is not None and link.base is not None:
        if link.prim.name == "broadcast_to":
            return True
        link = link.base._view
    return False


def _set(target, new):
    target._data, target._node = new._data, new._node
    target._tape, target._tidx = new._tape, new._tidx


def _detach(array):
    """`array`, a read-only view, is written: it becomes an array of its own (eager rebinds
    it to a copy). Views made of it before stay views of what it viewed, as eager's still
    view that memory: a stand-in with its old value takes its place in the chain."""
    link = array._view
    base_link = link.base._view
    kept = [r for r in link.views if r() is not None and r()._view is not None
            and r()._view.base is array]
    if base_link is not None:
        base_link.views = [r for r in base_link.views if r() is not None and r() is not array]
    if kept:
        stand_in = type(array)._alias_of(array, None, 0)
        stand_in._view = ViewLink(link.base, link.prim, link.attrs, link.shadow,
                                  link.detached)
        stand_in._view.views = kept
        for ref in kept:
            ref()._view.base = stand_in
        if base_link is not None:
            base_link.views.append(weakref.ref(stand_in))
    array._view = None


def _refresh_views(array):
    link = array._view
    if link is None or not link.views:
        return
    live = []
    for ref in list(link.views):   # recomputing a view links a temporary: not kept
        view = ref()
        if view is None or view._view is None or view._view.base is not array:
            continue
        live.append(ref)
        saved = view._view
        _set(view, saved.prim(array, **saved.attrs))
        view._view = saved
        if saved.detached:
            view._tape = None
        if view._node is not None and saved.shadow is None:
            saved.shadow = _np.empty(hinted(view.shape), view.dtype)
        _refresh_views(view)
    link.views = live


def _scatter_back(link, value):
    """The view's source with the view's elements replaced by `value`."""
    base = link.base
    name = link.prim.name
    if name == "reshape":
        return REGISTRY["reshape"](value, shape=tuple(base.shape))
    if name == "transpose":
        inverse = tuple(int(i) for i in _np.argsort(link.attrs["axes"]))
        return REGISTRY["transpose"](value, axes=inverse)
    if name == "slice":
        return REGISTRY["slice_assign"](base, value, **link.attrs)
    raise AssertionError(f"no write-back rule for view op {name}")
