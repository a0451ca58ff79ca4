"""`mxnet.symbol.numpy` (`mx.sym.np`): kiln.np's functions, which build graph nodes while
hybridize traces, and `_Symbol`, the class MXNet code tests for symbolic values. kiln traces
with its own arrays, so `isinstance(x, _Symbol)` holds only for 1.x Symbols."""
import kiln.np as _knp

from .symbol import Symbol as _Symbol  # noqa: F401


def __getattr__(name):
    if name.startswith("__"):   # __path__ and the like stay this module's own: not a package
        raise AttributeError(name)
    return getattr(_knp, name)
