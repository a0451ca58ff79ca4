"""The Symbol side of MXNet 1.x's sub-namespaces and of nd functions outside the op table:
`sym.linalg.gemm2(A, B)`, `sym.contrib.div_sqrt_dim(x)`, ... Given Symbols, such a call
builds a node of MXNet's op name (`_linalg_gemm2`, `_contrib_div_sqrt_dim`) whose table
entry is derived from the nd function (kiln/mx/ops/table.py `derive`); given arrays (F
while hybridize traces), it is the nd function itself."""
import types

from ..ops.table import derive
from .symbol import Symbol, call_op

# sub-namespace -> the prefix of its ops' MXNet names
PREFIXES = {"linalg": "_linalg_", "contrib": "_contrib_", "image": "_image_"}


def _has_symbol(args, kwargs):
    values = list(args) + list(kwargs.values())
    for v in values:
        if isinstance(v, Symbol) or isinstance(v, (list, tuple)) and any(
                isinstance(x, Symbol) for x in v):
            return True
    return False


def symbolic(op_name, fn):
    """`fn` over arrays, or a node of MXNet op `op_name` over Symbols."""
    def call(*args, **kwargs):
        if not _has_symbol(args, kwargs) and _has_array(args, kwargs):
            return fn(*args, **kwargs)
        derive(op_name, fn)           # Symbols, or no inputs at all: MXNet makes variables
        if len(args) == 1 and isinstance(args[0], (list, tuple)):
            args = tuple(args[0])
        return call_op(op_name, args, kwargs)
    call.__name__ = call.__qualname__ = getattr(fn, "__name__", op_name)
    call.__doc__ = fn.__doc__
    return call


def _has_array(args, kwargs):
    from ..._core.ndarray import ndarray
    import numpy as _np
    return any(isinstance(v, (ndarray, _np.ndarray)) for v in list(args) + list(kwargs.values()))


def table_op(op_name, fn):
    """`sym.X` of a table op: a node over Symbols, and over no arrays at all (MXNet makes
    variables for the inputs not given: `sym.softmin(axis=1)`); the op on arrays, and
    while hybridize traces (F is this module then, and an op without array inputs is one
    to compute, not a Symbol to build)."""
    from ..._core import trace

    def call(*args, **kwargs):
        if _has_symbol(args, kwargs) or not (_has_array(args, kwargs)
                                             or trace.current() is not None):
            if len(args) == 1 and isinstance(args[0], (list, tuple)):
                args = tuple(args[0])
            return call_op(op_name, args, kwargs)
        return fn(*args, **kwargs)
    call.__name__ = call.__qualname__ = op_name
    call.__doc__ = fn.__doc__
    return call


class SymbolSpace(types.ModuleType):
    """`sym.linalg`, `sym.contrib`, `sym.image`: nd's sub-namespace, building Symbols. A
    module object named as that namespace, so `import mxnet.symbol.contrib` resolves (to
    the nd module, as before) while `sym.contrib.X` builds Symbols."""

    def __init__(self, name, space):
        super().__init__(space.__name__)
        self._name, self._space = name, space

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        target = getattr(self._space, name)
        if not callable(target) or isinstance(target, type):
            return target
        return symbolic(PREFIXES[self._name] + name, target)

    def __repr__(self):
        return f"<kiln sym.{self._name}: {self._space.__name__}, building Symbols>"
