"""MXNet's `mx.name`: automatic names of symbols built with `kiln.sym` (mx.sym).

Outside any `with` block, kiln.sym names nodes from its global counters (`fullyconnected0`,
...). Inside `with NameManager():` the manager's own counters name them, and inside
`with Prefix('net_'):` every op name, given or automatic, gets the prefix, so the weights
that op creates are `net_fc1_weight` as in MXNet.
"""
import itertools
import threading
from collections import defaultdict

_local = threading.local()
_counters = defaultdict(itertools.count)      # kiln.sym's global counters, one per hint


def auto_name(hint):
    """`hint` plus the next number of its global counter: `fullyconnected0`, ..."""
    return f"{hint}{next(_counters[hint])}"


class _CurrentManager:
    """`NameManager.current`: the innermost active manager, else the global default."""

    def __get__(self, obj, cls):
        return current() or _DEFAULT


class NameManager:
    """Names symbols: a given name is kept, else `hint` plus a per-hint counter."""

    current = _CurrentManager()

    def __init__(self):
        self._counter = {}
        self._old_manager = None

    def get(self, name, hint):
        if name:
            return name
        n = self._counter.get(hint, 0)
        self._counter[hint] = n + 1
        return f"{hint}{n}"

    def __enter__(self):
        self._old_manager = getattr(_local, "manager", None)
        _local.manager = self
        return self

    def __exit__(self, *exc):
        _local.manager = self._old_manager


class Prefix(NameManager):
    """A NameManager that puts `prefix` in front of every name."""

    def __init__(self, prefix):
        super().__init__()
        self._prefix = prefix

    def get(self, name, hint):
        return self._prefix + super().get(name, hint)


class _KilnCounters(NameManager):
    """The manager outside every `with` block: kiln.sym's global counters."""

    def get(self, name, hint):
        if name:
            return name
        return auto_name(hint)


_DEFAULT = _KilnCounters()


def current():
    """The innermost active NameManager, or None outside every `with` block."""
    return getattr(_local, "manager", None)


def scoped_name(name, hint):
    """The name of a new symbol node: through the active manager, else kiln's counters."""
    return (current() or _DEFAULT).get(name, hint)
