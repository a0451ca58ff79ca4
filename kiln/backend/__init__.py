"""Backends that run optimized graphs. `select` picks one by name or KILN_BACKEND."""
import os

from .._core.base import KilnError
from .._core.symdim import graph_is_symbolic
# On import the backends register what the floors below them call: the primitives' eager
# kernels (dnnl/eager.py, c/eager_gemm.py) and the subgraph runner (numpy_exec.py).
from . import numpy_exec as _numpy_exec  # noqa: F401
from .c import eager_gemm as _eager_gemm  # noqa: F401
from .dnnl import eager as _dnnl_eager  # noqa: F401
from .c import build


class _NumpyBackend:
    """The NumPy executor; `reason` says why it runs (kiln.explain shows it)."""
    name = "numpy"
    symbolic = True       # runs graphs with symbolic dimensions (symbolic_exec.py)

    def __init__(self, reason):
        self.reason = reason

    def compile(self, graph):
        if graph_is_symbolic(graph):
            from .symbolic_exec import SymbolicNumpyProgram
            program = SymbolicNumpyProgram(graph)
            program.reason = self.reason
            return program
        from .numpy_exec import NumpyProgram
        program = NumpyProgram(graph)
        program.reason = self.reason
        return program


class _CBackend:
    """Generated C; graphs it cannot lower, or a missing compiler, fall back to NumPy. A
    graph with symbolic sizes becomes a program reading them at run time
    (c/sized_program.py); where its C would need a size's value, compile raises
    NotSizeGeneric and hybridize specializes instead (hybrid/dynamic.py)."""
    name = "c"
    symbolic = True

    @staticmethod
    def compile(graph):
        from .c.program import CannotCompile, compile_graph, compile_sized
        if graph_is_symbolic(graph):
            try:
                return compile_sized(graph)
            except CannotCompile as exc:
                return _NumpyBackend(str(exc)).compile(graph)
        try:
            return compile_graph(graph)
        except CannotCompile as exc:
            return _NumpyBackend(str(exc)).compile(graph)


BACKENDS = ("numpy", "c")


def select(name=None):
    """The backend named by hybridize(backend=...), else KILN_BACKEND, else C when a
    compiler works here (without one: the NumPy executor, with a warning once)."""
    origin = f"hybridize(backend={name!r})"
    if not name and os.environ.get("KILN_BACKEND"):
        name = os.environ["KILN_BACKEND"]
        origin = f"KILN_BACKEND={name}"
    if not name:
        try:
            build.compiler()
            return _CBackend
        except build.CompilerUnavailable as exc:
            build.record_unavailable(str(exc))
            return _NumpyBackend(f"the C backend is unavailable: {exc}")
    if name == "c":
        return _CBackend
    if name == "numpy":
        return _NumpyBackend(f"chosen with {origin}")
    raise KilnError(f"unknown backend {name!r}; expected one of {sorted(BACKENDS)}")


def fast_dispatcher():
    """A C dispatcher serving a hybridized function's compiled calls whole (see
    c/fastcall.py), or None when the C extension is not available here."""
    if not build.available():
        return None
    from .c.fastcall import dispatcher
    return dispatcher()
