"""Backends that run optimized graphs. `select` picks one by name or KILN_BACKEND."""
import os

from ..base import KilnError


class _NumpyBackend:
    name = "numpy"

    @staticmethod
    def compile(graph):
        from .numpy_exec import NumpyProgram
        return NumpyProgram(graph)


BACKENDS = {"numpy": _NumpyBackend}


def select(name=None):
    name = name or os.environ.get("KILN_BACKEND") or "numpy"
    try:
        return BACKENDS[name]
    except KeyError:
        raise KilnError(f"unknown backend {name!r}; expected one of {sorted(BACKENDS)}") from None
