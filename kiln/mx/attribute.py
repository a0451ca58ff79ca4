"""MXNet's `mx.AttrScope`: attributes given to every symbol created inside the scope.

    with mx.AttrScope(ctx_group='dev1', lr_mult='0.1'):
        w = mx.sym.var('w')          # w.attr('ctx_group') == 'dev1'

Variables keep them with their other attributes (saved in the symbol JSON); op nodes
report them through attr()/list_attr(). kiln runs on one device, so a `ctx_group` is kept
for round trips and has no effect on placement.
"""
import threading

from .._core.base import KilnError

_local = threading.local()


class _CurrentScope:
    """`AttrScope.current`: the innermost active scope, else an empty one."""

    def __get__(self, obj, cls):
        return getattr(_local, "scope", None) or AttrScope()


class AttrScope:
    """A scope whose string attributes are given to every symbol created inside it (`with
    mx.AttrScope(ctx_group='dev1'):`)."""
    current = _CurrentScope()

    def __init__(self, **kwargs):
        for key, value in kwargs.items():
            if not isinstance(value, str):
                raise KilnError(f"AttrScope: attributes must be strings, got {key}="
                                f"{value!r} ({type(value).__name__})")
        self._attr = kwargs
        self._old_scope = None

    def get(self, attr):
        """The scope's attributes updated with `attr` (the ones given at creation win)."""
        merged = dict(self._attr)
        merged.update(attr or {})
        return merged

    def __enter__(self):
        self._old_scope = getattr(_local, "scope", None)
        if self._old_scope is not None:
            self._attr = {**self._old_scope._attr, **self._attr}
        _local.scope = self
        return self

    def __exit__(self, *exc):
        _local.scope = self._old_scope


def scoped_attrs(attr):
    """`attr` (a dict or None) merged over the active AttrScope's attributes."""
    scope = getattr(_local, "scope", None)
    if scope is None:
        return dict(attr or {})
    return scope.get(attr)
