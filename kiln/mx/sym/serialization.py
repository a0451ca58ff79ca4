"""Saving and loading user symbols: MXNet's symbol JSON, and kiln's own export format.

`sym.load` reads either: a file written by MXNet (or by Symbol.save), or a kiln export
(`block.export`), whose graph becomes a symbol of registry ops ("kiln:<op>"); its
parameters and constants become variables named as in the params file.
"""
import json

from ..._core.base import KilnError, where_in_user_code
from . import mxnet_json
from .symbol import BLOCK_OP, KILN_PREFIX, Symbol, SymNode


def to_json(symbol):
    held = [n.name for n in symbol._nodes() if n.op == BLOCK_OP]
    if held:
        raise KilnError(f"tojson: node(s) {held[:3]} run a Gluon block called on Symbols, "
                        "which a symbol file cannot hold; export the block instead "
                        "(HybridBlock.export)" + where_in_user_code())
    return mxnet_json.to_json(symbol)


def save(symbol, fname):
    from ...npx.io import write_bytes_atomic
    write_bytes_atomic(str(fname), to_json(symbol).encode("utf-8"))


def from_kiln_symbol(spec):
    """A validated kiln symbol file (export/symbol.py) as a user Symbol."""
    nodes = []
    for k, n in enumerate(spec.nodes):
        if n.op in ("input", "param", "const"):
            attrs = {"__shape__": tuple(n.shape), "__dtype__": n.dtype.name}
            if n.op == "const" or n.grad_req == "null":
                attrs["__grad_req__"] = "null"    # constants and running statistics
            nodes.append(SymNode(None, n.name, var_attrs=attrs))
        else:
            nodes.append(SymNode(KILN_PREFIX + n.op, f"{n.op}{k}",
                                 [(nodes[i], 0) for i in n.inputs], n.attrs))
    return Symbol([(nodes[k], 0) for k in spec.outputs])


def from_graph(graph, param_names=None):
    """A kiln Graph (what hybridize traces) as a user Symbol: inputs and parameters become
    variables (parameters named by `param_names`, {id(node): name}), constants keep their
    values, and every node is the same registry op."""
    param_names = param_names or {}
    built = {}
    for n in graph.nodes:
        if n.op in ("input", "param"):
            attrs = {"__shape__": tuple(n.shape), "__dtype__": n.dtype.name}
            node = SymNode(None, param_names.get(id(n), n.name), var_attrs=attrs)
        elif n.op == "const":
            node = SymNode("_kiln_constant", n.name,
                           attrs={"value": n.value.tolist(), "shape": tuple(n.shape),
                                  "dtype": n.dtype.name})
        else:
            node = SymNode(KILN_PREFIX + n.op, n.name, [(built[id(i)], 0) for i in n.inputs],
                           n.attrs)
        built[id(n)] = node
    return Symbol([(built[id(o)], 0) for o in graph.outputs])


def from_block(block, *example_inputs):
    """The predict-mode graph a hybridized block traces for these inputs, as a Symbol
    whose variables are the input ('data') and the block's structural parameter names."""
    from ...export.block_export import inference_graph
    graph, param_names, _ = inference_graph(block, example_inputs)
    return from_graph(graph, param_names)


def fromjson(text, source="<symbol>"):
    """A Symbol from JSON text: MXNet's symbol JSON or kiln's own (`format: kiln-symbol`);
    `load_json` is the same."""
    try:
        doc = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise KilnError(f"{source} is not valid JSON: {exc}") from None
    except MemoryError:
        raise KilnError(f"not enough memory to parse the symbol file {source}") from None
    if isinstance(doc, dict) and doc.get("format") == "kiln-symbol":
        from ...export.symbol import parse_symbol
        return from_kiln_symbol(parse_symbol(text, source))
    return mxnet_json.from_dict(doc, source)


def load(fname):
    """A Symbol read from a JSON file (MXNet's `-symbol.json` or kiln's)."""
    return fromjson(mxnet_json.read_text(fname), str(fname))


load_json = fromjson
