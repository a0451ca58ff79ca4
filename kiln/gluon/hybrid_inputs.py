"""What a HybridBlock accepts as inputs: MXNet 1.x's rules for blocks written with
hybrid_forward (arrays or Symbols, not both; hybridized, the same nesting on every call), the
hook through which kiln/mx/sym builds a Symbol when a block is called on Symbols, and
MXNet 1.x's `net.forward(x)` on a hybridized block (DirectForward)."""
import copy
import inspect
import weakref

from .._core import trace
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


class DirectForward:
    """What a hybridized block's `forward` attribute becomes: MXNet 1.x's `net.forward(x)` on
    a hybridized block runs its cached graph, like net(x) (hooks aside), so export then knows
    the input shapes. Calls from hybridize's own trace, from a parent's trace and on Symbols
    reach the user's forward unchanged. It holds the block weakly (no cycle keeps a dropped
    block alive) and the forward as a function (`own`: one set on the instance)."""

    def __init__(self, block, own):
        self.block, self.own = weakref.ref(block), own

    @property
    def _kiln_forward_of(self):
        return self.own or type(self.block()).forward.__get__(self.block())

    @property
    def __signature__(self):
        return inspect.signature(self._kiln_forward_of)

    def __deepcopy__(self, memo):
        return DirectForward(copy.deepcopy(self.block(), memo), copy.deepcopy(self.own, memo))

    def __call__(self, *args, **kwargs):
        block = self.block()
        if kwargs or not args or trace.current() is not None or trace.in_body_of(block) \
                or not block.__dict__.get("_hybrid_active") or "symbol" in _kinds_of(args):
            return self._kiln_forward_of(*args, **kwargs)
        return block(*args)
