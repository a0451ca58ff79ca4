"""A Gluon block called on Symbols (`loss(output_symbol, label_symbol)`, as MXNet 1.x code
writes a network's loss into a Module's symbol): one symbol node that runs the block on
its inputs' values whenever the symbol is evaluated, traced or differentiated (the node is
run by evaluation._call_node).

Blocks without parameters only (losses, activations, reshapes): a block with parameters
would need its weights as the symbol's arguments; `sym.from_block(net, example)` gives
that graph instead. The exception are block classes whose symbolic forward is registered
(register_symbolic_forward): they build MXNet's own nodes over their parameters as
variables, as MXNet 1.x's hybrid_forward with F = symbol does (the recurrent cells:
kiln/mx/rnn/gluon_symbolic.py).
"""
from ..._core.base import KilnError, where_in_user_code
from ...gluon.hybrid_inputs import register_symbol_call
from ..name import auto_name
from .symbol import BLOCK_OP, Symbol, SymNode


# block class -> fn(block, *args): the Symbols of a block with parameters called on
# Symbols, built as MXNet 1.x's hybrid_forward with F = symbol builds them (kiln/mx/rnn)
_SYMBOLIC_FORWARDS = {}


def register_symbolic_forward(block_class, fn):
    """Blocks of `block_class` (and its subclasses) called on Symbols give fn(block, *args)."""
    _SYMBOLIC_FORWARDS[block_class] = fn


def block_symbol(block, args):
    """The Symbol of `block(*args)` where args are Symbols (or None in optional places)."""
    for cls in type(block).__mro__:
        if cls in _SYMBOLIC_FORWARDS:
            return _SYMBOLIC_FORWARDS[cls](block, *args)
    if len(block.collect_params()):
        raise KilnError(f"{type(block).__name__} called on Symbols: kiln builds a Symbol from "
                        "a block without parameters (a loss, an activation); for a block "
                        "with parameters call sym.from_block(net, example_input)"
                        + where_in_user_code())
    heads, places = [], []
    for arg in args:
        if arg is None:
            places.append(None)
            continue
        if not isinstance(arg, Symbol) or len(arg._heads) != 1:
            raise KilnError(f"{type(block).__name__} called on Symbols: every argument must "
                            f"be a Symbol of one output or None, got {type(arg).__name__}"
                            + where_in_user_code())
        places.append(len(heads))
        heads.append(arg._heads[0])
    node = SymNode(BLOCK_OP, auto_name(type(block).__name__.lower()), heads,
                   {"block": block, "places": tuple(places)})
    return Symbol([(node, 0)])


register_symbol_call(block_symbol)
