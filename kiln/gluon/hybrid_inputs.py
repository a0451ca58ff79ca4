"""What a HybridBlock accepts as inputs: MXNet 1.x's rules for blocks written with
hybrid_forward (arrays or Symbols, not both; hybridized, the same nesting on every call), and
the hook through which kiln/mx/sym builds a Symbol when a block is called on Symbols."""
from .._core.base import where_in_user_code
from .._core.ndarray import ndarray

# Calling a block on MXNet 1.x Symbols: the handler kiln/mx/sym registers (gluon sits below)
_SYMBOL_CALL = []


def register_symbol_call(handler):
    """handler(block, args) gives the Symbol of `block` called on Symbol arguments."""
    _SYMBOL_CALL[:] = [handler]


# Running a hybridized block with an op hook (register_op_hook): kiln/mx/sym registers
# runner(block, args, callback, monitor_all), which runs the block's MXNet symbol
_OP_HOOK_RUN = []


def register_op_hook_runner(runner):
    _OP_HOOK_RUN[:] = [runner]


def _kinds_of(args):
    kinds = {}
    _input_format(tuple(args), kinds)
    return kinds


def _input_format(value, kinds):
    """The nesting of a call's inputs with None kept in place (MXNet's `_flatten` format);
    counts each kind of leaf into `kinds`."""
    if isinstance(value, (list, tuple)):
        return tuple(_input_format(v, kinds) for v in value)
    if value is None:
        return None
    from .symbol_block import symbol_types
    kind = ("symbol" if isinstance(value, symbol_types()) else
            # MXNet 1.x's sparse arrays (mx/nd/sparse) are arrays too: they carry an stype
            "array" if isinstance(value, ndarray) or hasattr(value, "stype") else "other")
    kinds[kind] = kinds.get(kind, 0) + 1
    return kind


def _check_hybrid_forward_inputs(block, args):
    """MXNet 1.x's rules for a block written with hybrid_forward: its inputs hold arrays or
    Symbols, not both, and at least one; hybridized, only arrays or None, nested in the
    same way on every call (the cached graph was made for that structure)."""
    kinds = {}
    fmt = _input_format(tuple(args), kinds)
    while fmt and fmt[-1] is None:       # f(x) and f(x, None) call hybrid_forward alike
        fmt = fmt[:-1]
    if kinds.get("array") and kinds.get("symbol"):
        raise ValueError(f"{type(block).__name__}: In HybridBlock, we do not support mixed "
                         "NDArrays and Symbols types for the input" + where_in_user_code())
    if not kinds.get("array") and not kinds.get("symbol"):
        raise ValueError(f"{type(block).__name__}: In HybridBlock, there must be one NDArray "
                         "or one Symbol in the input" + where_in_user_code())
    if not block.__dict__["_hybrid_active"] or kinds.get("symbol"):
        return
    if kinds.get("other"):
        raise ValueError(f"{type(block).__name__}: when hybridized, the inputs of a HybridBlock "
                         "must be (nested lists of) arrays or None, got "
                         f"{[type(a).__name__ for a in args]}" + where_in_user_code())
    known = block.__dict__.get("_in_format")
    if known is None:
        object.__setattr__(block, "_in_format", fmt)
    elif known != fmt:
        raise ValueError(f"{type(block).__name__}: the inputs are not arranged as on the first "
                         "call after hybridize() (which arrays are None, how they nest); "
                         "call hybridize() again to trace anew" + where_in_user_code())
