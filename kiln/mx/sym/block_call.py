"""A Gluon block called on Symbols (`loss(output_symbol, label_symbol)`, as MXNet 1.x code
writes a network's loss into a Module's symbol): one symbol node that runs the block on
its inputs' values whenever the symbol is evaluated, traced or differentiated (the node is
run by evaluation._call_node).

That is for blocks without parameters (losses, activations, reshapes); a block with
parameters builds MXNet's graph with its weights as variables (layer_symbols.py).
"""
from ..._core.base import KilnError, where_in_user_code
from ...gluon.hybrid_inputs import register_symbol_call
from ..name import auto_name
from .layer_symbols import build
from .symbol import BLOCK_OP, Symbol, SymNode


def block_symbol(block, args):
    """The Symbol of `block(*args)` where args are Symbols (or None in optional places)."""
    built = build(block, args, has_params=bool(len(block.collect_params())))
    if built is not None:
        return built
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
