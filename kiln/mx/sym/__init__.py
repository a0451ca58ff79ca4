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
from . import sparse  # noqa: F401  (sym.sparse)
from . import block_call  # noqa: F401  (registers Gluon blocks called on Symbols)

_Symbol = Symbol


_WRAPPED = {}     # op name -> (its function, the wrapper): `sym.dot is sym.dot`


def __getattr__(name):
    found = namespace_attr(__name__, name)
    if name in _OPS and callable(found) and not _OPS[name].variadic and _has_inputs(name):
        cached = _WRAPPED.get(name)
        if cached is None or cached[0] is not found:
            cached = _WRAPPED[name] = (found, _symbol_without_arrays(name, found))
        return cached[1]
    return found


def _has_inputs(name):
    """Whether MXNet op `name` takes array inputs (its attributes may decide: Custom's do)."""
    try:
        return bool(_OPS[name].input_names({}))
    except Exception:       # noqa: BLE001 - an op whose inputs depend on its attributes
        return True


def _symbol_without_arrays(name, function):
    """`sym.FullyConnected(num_hidden=10, name='fc')` with no input at all is a Symbol whose
    inputs are new variables (`fc_data`, ...), as in MXNet; given arrays (F while
    hybridize traces) or Symbols, the op's own function runs."""
    def call(*args, **kwargs):
        from ..._core import trace
        from ..._core.ndarray import ndarray
        from .symbol import call_op
        values = list(args) + list(kwargs.values())
        if args or any(isinstance(v, (ndarray, Symbol)) for v in values) or \
                trace.current() is not None:
            return function(*args, **kwargs)
        return call_op(name, (), kwargs)
    call.__name__ = call.__qualname__ = name
    call.__doc__ = function.__doc__
    return call
