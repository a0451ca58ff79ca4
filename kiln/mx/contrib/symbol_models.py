"""An MXNet 1.x model given as (symbol, arg_params, aux_params) turned into a kiln block
and back, for the Symbol flows of `contrib.quantization` (quantize_model, quantize_graph)
and `contrib.amp` (convert_model, convert_symbol).

kiln has one low-precision mechanism, on the graphs hybridize traces (graph/passes/amp.py,
quantize.py): a Symbol flow loads the symbol as a SymbolBlock, converts that block like a
Gluon model, and exports it; the exported graph, loaded by `mx.sym.load`, is the symbol it
returns. A loss head reading a label (SoftmaxOutput, ...) is taken off first and put back
on the converted body, so the result binds in a Module with the same data and label names.
"""
import json
import os
import tempfile

import numpy as _np

from ..._core import autograd
from ..._core.base import KilnError
from ..._core.ndarray import ndarray
from ...gluon.symbol_block import SymbolBlock

LOSS_HEADS = ("SoftmaxOutput", "LinearRegressionOutput", "LogisticRegressionOutput",
              "MAERegressionOutput", "SVMOutput")


class LossHead:
    """The loss op a symbol ends with: its op name, node name, attributes and label name."""

    def __init__(self, op, name, attrs, label):
        self.op, self.name, self.attrs, self.label = op, name, attrs, label

    def on(self, body):
        from .. import sym
        return getattr(sym, self.op)(data=body, label=sym.var(self.label), name=self.name,
                                     **self.attrs)


def split_loss_head(symbol, label_names):
    """(body, LossHead or None): `symbol` without the loss op on its one output when that op
    reads one of `label_names`."""
    graph = json.loads(symbol.tojson())
    if len(graph["heads"]) != 1:
        return symbol, None
    node = graph["nodes"][graph["heads"][0][0]]
    if node["op"] not in LOSS_HEADS or len(node["inputs"]) != 2:
        return symbol, None
    label = graph["nodes"][node["inputs"][1][0]]
    if label["op"] != "null" or label["name"] not in (label_names or ()):
        return symbol, None
    return symbol.get_children()[0], LossHead(node["op"], node["name"],
                                              dict(node.get("attrs", {})), label["name"])


def layer_weights(symbol, node_names, ops=("Convolution", "FullyConnected")):
    """The weight variables of the nodes of `ops` named in `node_names`: how kiln names a
    layer of a SymbolBlock (its graph has MXNet's parameter names, not its node names)."""
    graph = json.loads(symbol.tojson())
    wanted, out = set(node_names or ()), []
    for node in graph["nodes"]:
        if node["op"] in ops and node["name"] in wanted and len(node["inputs"]) > 1:
            out.append(graph["nodes"][node["inputs"][1][0]]["name"])
    return out


def as_block(symbol, arg_params, aux_params, data_names):
    """`symbol` as a SymbolBlock reading `data_names`, with its parameters' values."""
    from .. import sym
    block = SymbolBlock(symbol, [sym.var(n) for n in data_names])
    values = {**(arg_params or {}), **(aux_params or {})}
    missing = [n for n in block.collect_params() if n not in values]
    if missing:
        raise KilnError(f"the symbol's parameters {missing} are in neither arg_params nor "
                        "aux_params")
    for name, param in block.collect_params().items():
        value = values[name]
        param._load_init(value if isinstance(value, ndarray) else ndarray._wrap(
            _np.asarray(value)), None)
    return block


def as_symbol(block, example, head):
    """(symbol, arg_params, aux_params) of `block` as it now runs, traced on `example` (NumPy
    inputs), `head` put back on its output. Its shapes are example's: MXNet's symbol JSON,
    which the result is saved as, has no way to declare the symbolic batch size kiln's
    export writes (a flatten's reshape to (batch, -1) would be one)."""
    from .. import nd, sym
    if not getattr(block, "_hybrid_active", False):
        block.hybridize()
    with autograd.predict_mode():
        block(*[ndarray._wrap(x) for x in example])
    with tempfile.TemporaryDirectory(prefix="kiln-symbol-flow-") as tmp:
        sym_file, params_file = block.export(os.path.join(tmp, "model"))
        body, values = sym.load(sym_file), nd.load(params_file)
    # MXNet's params file has no 0-d arrays (nd.load gives them back with shape (1,)): the
    # graph's float32 scalars (a mean's divisor) go into the symbol as constants instead
    scalars = {k: v for k, v in values.items() if v.ndim == 0 and v.dtype == _np.float32}
    if scalars:
        body = body(**{k: sym.Constant(v.asnumpy(), name=k) for k, v in scalars.items()})
        values = {k: v for k, v in values.items() if k not in scalars}
    out = head.on(body) if head is not None else body
    aux = set(out.list_auxiliary_states())
    arg_params = {k: v for k, v in values.items() if k not in aux}
    aux_params = {k: v for k, v in values.items() if k in aux}
    return out, arg_params, aux_params


def data_example(calib_data, data_shapes):
    """The NumPy inputs to trace with: the first calibration batch, or zeros of data_shapes
    (shapes, DataDescs or (name, shape) pairs)."""
    if calib_data is not None:
        if hasattr(calib_data, "reset"):
            calib_data.reset()
            batch = next(iter(calib_data))
            calib_data.reset()
            return [d.asnumpy() for d in batch.data]
        first = next(iter(calib_data))
        first = first if isinstance(first, (list, tuple)) else [first]
        return [x.asnumpy() if isinstance(x, ndarray) else _np.asarray(x) for x in first[:1]]
    shapes = []
    for d in data_shapes or ():
        shape = getattr(d, "shape", None)
        if shape is None:
            shape = d[1] if isinstance(d, (list, tuple)) and len(d) == 2 and \
                isinstance(d[0], str) else d
        shapes.append(_np.zeros(tuple(shape), _np.float32))
    if not shapes:
        raise KilnError("give calib_data or data_shapes (the shapes of the data inputs)")
    return shapes


def declared_shapes(symbol, data_names):
    """The data variables' `__shape__` attributes (None where one is missing)."""
    graph = json.loads(symbol.tojson())
    shapes = {n["name"]: n.get("attrs", {}).get("__shape__") for n in graph["nodes"]
              if n["op"] == "null"}
    out = []
    for name in data_names:
        text = shapes.get(name)
        if text is None:
            return None
        out.append(tuple(int(d) for d in text.strip("()[] ").split(",") if d.strip()))
    return out
