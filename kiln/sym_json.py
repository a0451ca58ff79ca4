"""Saving and loading user symbols: MXNet's symbol JSON, and kiln's own export format.

`sym.load` reads either: a file written by MXNet (or by Symbol.save), or a kiln export
(`block.export`), whose graph becomes a symbol of registry ops ("kiln:<op>"); its
parameters and constants become variables named as in the params file.
"""
import json

from .base import KilnError
from .export import mxnet_json
from .sym_graph import KILN_PREFIX, Symbol, SymNode


def to_json(symbol):
    return mxnet_json.to_json(symbol)


def save(symbol, fname):
    from .export.mxnet_params import write_bytes_atomic
    write_bytes_atomic(str(fname), to_json(symbol).encode("utf-8"))


def from_kiln_symbol(spec):
    """A validated kiln symbol file (export/symbol.py) as a user Symbol."""
    nodes = []
    for k, n in enumerate(spec.nodes):
        if n.op in ("input", "param", "const"):
            attrs = {"__shape__": tuple(n.shape), "__dtype__": n.dtype.name}
            nodes.append(SymNode(None, n.name, var_attrs=attrs))
        else:
            nodes.append(SymNode(KILN_PREFIX + n.op, f"{n.op}{k}",
                                 [(nodes[i], 0) for i in n.inputs], n.attrs))
    return Symbol([(nodes[k], 0) for k in spec.outputs])


def fromjson(text, source="<symbol>"):
    try:
        doc = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise KilnError(f"{source} is not valid JSON: {exc}") from None
    if isinstance(doc, dict) and doc.get("format") == "kiln-symbol":
        from .export.symbol import parse_symbol
        return from_kiln_symbol(parse_symbol(text, source))
    return mxnet_json.from_dict(doc, source)


def load(fname):
    return fromjson(mxnet_json.read_text(fname), str(fname))


load_json = fromjson
