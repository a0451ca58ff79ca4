"""`kiln.sym` / `kiln.symbol`: MXNet 1.x's symbolic API, and the `F` of hybrid_forward.

User code builds Symbols here (var, arithmetic, the MXNet ops, Group), inspects, saves,
loads, evaluates, binds, differentiates and compiles them (symbol.py, evaluation.py,
executor.py, serialization.py). While hybridize traces, `F` is this module and receives
kiln arrays: every op name resolves (kiln/mx/f_namespace.py) to a function that computes on
arrays, or builds a symbol node when given Symbols.
"""
from ..f_namespace import namespace_attr
from ..ops import OPS as _OPS
from .symbol import Symbol, var, Variable, Group, Constant  # noqa: F401
from .serialization import load, fromjson, load_json, from_graph, from_block  # noqa: F401
from .evaluation import compile_symbols as compile  # noqa: F401
from .creation import zeros, ones, full, arange, eye  # noqa: F401
from .spaces import PREFIXES, SymbolSpace, table_op
from . import sparse  # noqa: F401  (sym.sparse)
from . import block_call  # noqa: F401  (registers Gluon blocks called on Symbols)
from . import op_hook  # noqa: F401  (registers HybridBlock.register_op_hook's runner)
from . import recorded  # noqa: F401  (registers autograd.get_symbol's builder)
from ...gluon import parameter as _parameter

# gluon's Parameter.var() (a floor below): MXNet 1.x's variable of the parameter
_parameter.SYMBOL_VARIABLE[0] = lambda p: var(
    p.name, shape=p.shape, dtype=p.dtype, lr_mult=p.lr_mult, wd_mult=p.wd_mult, init=p.init,
    stype=p._stype)

_Symbol = Symbol


_WRAPPED = {}     # name -> (what it wraps, the wrapper): `sym.dot is sym.dot`


def __getattr__(name):
    found = namespace_attr(__name__, name)
    if name in PREFIXES:                       # sym.linalg, sym.contrib, sym.image
        make = SymbolSpace
    elif name in _OPS and callable(found):
        make = table_op
    else:
        return found
    cached = _WRAPPED.get(name)
    if cached is None or cached[0] is not found:
        cached = _WRAPPED[name] = (found, make(name, found))
    return cached[1]
