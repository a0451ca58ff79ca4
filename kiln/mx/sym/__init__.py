"""`kiln.sym` / `kiln.symbol`: MXNet 1.x's symbolic API, and the `F` of hybrid_forward.

User code builds Symbols here (var, arithmetic, the MXNet ops, Group), inspects, saves,
loads, evaluates, binds, differentiates and compiles them (symbol.py, evaluation.py,
executor.py, serialization.py). While hybridize traces, `F` is this module and receives
kiln arrays: every op name resolves (kiln/mx/f_namespace.py) to a function that computes on
arrays, or builds a symbol node when given Symbols.
"""
from ..f_namespace import namespace_attr
from .symbol import Symbol, var, Variable, Group, Constant  # noqa: F401
from .serialization import load, fromjson, load_json, from_graph, from_block  # noqa: F401
from .evaluation import compile_symbols as compile  # noqa: F401
from .creation import zeros, ones, full, arange, eye  # noqa: F401
from .spaces import PREFIXES, SymbolSpace, table_op
from ..ops import OPS

_Symbol = Symbol


def __getattr__(name):
    found = namespace_attr(__name__, name)
    if name in PREFIXES:                       # sym.linalg, sym.contrib, sym.image
        return SymbolSpace(name, found)
    if name in OPS and callable(found):
        return table_op(name, found)
    return found
