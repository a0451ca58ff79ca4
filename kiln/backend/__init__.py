"""Backends that run optimized graphs. `select` picks one by name or KILN_BACKEND."""
import os

from .._core.base import KilnError
from .._core.symdim import graph_is_symbolic
# On import the backends register what the floors below them call: the primitives' eager
# kernels (dnnl/eager.py, c/eager_gemm.py) and the subgraph runner (numpy_exec.py).
from . import numpy_exec as _numpy_exec  # noqa: F401
from .c import eager_gemm as _eager_gemm  # noqa: F401
from .dnnl import eager as _dnnl_eager  # noqa: F401


class _NumpyBackend:
    name = "numpy"
    symbolic = True       # runs graphs with symbolic dimensions (symbolic_exec.py)

    @staticmethod
    def compile(graph):
        if graph_is_symbolic(graph):
            from .symbolic_exec import SymbolicNumpyProgram
            return SymbolicNumpyProgram(graph)
        from .numpy_exec import NumpyProgram
        return NumpyProgram(graph)


class _CBackend:
    """Generated C; graphs it cannot lower, or a missing compiler, fall back to NumPy."""
    name = "c"
    # generated C has fixed sizes so far: a graph with symbolic dimensions runs on NumPy
    symbolic = False

    @staticmethod
    def compile(graph):
        if graph_is_symbolic(graph):
            return _NumpyBackend.compile(graph)
        from .c.program import compile_graph
        program = compile_graph(graph)
        return program if program is not None else _NumpyBackend.compile(graph)


BACKENDS = {"numpy": _NumpyBackend, "c": _CBackend}


def default_backend():
    from .c import build
    return "c" if build.available() else "numpy"


def select(name=None):
    name = name or os.environ.get("KILN_BACKEND") or default_backend()
    try:
        return BACKENDS[name]
    except KeyError:
        raise KilnError(f"unknown backend {name!r}; expected one of {sorted(BACKENDS)}") from None


def fast_dispatcher():
    """A C dispatcher serving a hybridized function's compiled calls whole (see
    c/fastcall.py), or None when the C extension is not available here."""
    from .c import build
    if not build.available():
        return None
    from .c.fastcall import dispatcher
    return dispatcher()
