"""MXNet's `mx.viz` / `mx.visualization`: a layer table of a Symbol, and a graph drawing.

print_summary prints MXNet's table (layer and op, output shape without the batch axis,
parameter count, previous layers). A layer's parameter count is the total size of its
weight inputs: the variables feeding it that are not given in `shape` and are not
auxiliary states (so BatchNorm counts gamma and beta, as MXNet does). plot_network needs
the `graphviz` Python package (kiln's `viz` extra); it returns a graphviz.Digraph.
"""
from .._core.base import KilnError

_WEIGHT_SUFFIXES = ("_weight", "_bias", "_beta", "_gamma", "_moving_var", "_moving_mean",
                    "_running_var", "_running_mean")
_COLORS = {"null": "#8dd3c7", "Convolution": "#fb8072", "FullyConnected": "#fb8072",
           "BatchNorm": "#bebada", "Activation": "#ffffb3", "LeakyReLU": "#ffffb3",
           "Pooling": "#80b1d3", "Concat": "#fdb462", "Flatten": "#fdb462",
           "Reshape": "#fdb462", "Softmax": "#b3de69"}


def _check_symbol(symbol, what):
    from .sym.symbol import Symbol
    if not isinstance(symbol, Symbol):
        raise KilnError(f"viz.{what}: expected a Symbol, got {type(symbol).__name__}")


def _shapes(symbol, shape):
    """{(id(node), output index): shape} of every internal output, or {} without shapes."""
    if shape is None:
        return {}
    internals = symbol.get_internals()
    _, out_shapes, _ = internals.infer_shape(**shape)
    if out_shapes is None:
        raise KilnError(f"viz: input shapes are incomplete; given {sorted(shape)}, the "
                        f"symbol's inputs are {symbol.list_arguments()}")
    return {(id(n), k): tuple(s) for (n, k), s in zip(internals._heads, out_shapes)}


# the inputs of an op that hold learned values (not data, labels or running statistics)
_WEIGHT_SLOTS = ("weight", "bias", "gamma", "beta", "alpha", "parameters", "h2h_weight",
                 "i2h_weight", "h2h_bias", "i2h_bias")


def _input_names(node):
    """Each input's slot name ('data', 'weight', ...); '' for variadic ops and kiln ops."""
    from .ops import lookup
    try:
        info = lookup(node.op)
    except KilnError:
        info = None
    if info is None or info.variadic:
        return [""] * len(node.inputs)
    return list(info.input_names(node.attrs)) + [""] * len(node.inputs)


def _size(shape):
    total = 1
    for d in shape:
        total *= int(d)
    return total


def print_summary(symbol, shape=None, line_length=120, positions=(.44, .64, .74, 1.)):
    """Print each layer with its output shape (given `shape`, input name -> shape), its
    parameter count and the layers it takes input from; then the total."""
    _check_symbol(symbol, "print_summary")
    shapes = _shapes(symbol, shape)
    if positions[-1] <= 1:
        positions = [int(line_length * p) for p in positions]
    aux = set(symbol.list_auxiliary_states())
    given = set(shape or {})
    nodes = symbol._nodes()
    heads = {id(n) for n, _ in symbol._heads}

    def row(fields):
        line = ""
        for field, end in zip(fields, positions):
            line = (line + str(field))[:end]
            line += " " * (end - len(line))
        print(line)

    print("_" * line_length)
    row(["Layer (type)", "Output Shape", "Param #", "Previous Layer"])
    print("=" * line_length)
    total = 0
    shown = [n for i, n in enumerate(nodes) if not n.is_var or i == 0 or id(n) in heads]
    for k, node in enumerate(shown):
        out = shapes.get((id(node), 0), ())[1:]
        params = 0
        previous = []
        for slot, (src, _) in zip(_input_names(node), node.inputs):
            if src.is_var and slot in _WEIGHT_SLOTS and src.name not in given | aux:
                params += _size(shapes.get((id(src), 0), ()) or (0,))
            # MXNet also lists the symbol's first node (its data) as a previous layer
            elif not src.is_var or src is nodes[0]:
                previous.append(src.name)
        total += params
        row([f"{node.name}({node.op or 'null'})", "x".join(str(d) for d in out), params,
             previous[0] if previous else ""])
        for name in previous[1:]:
            row(["", "", "", name])
        print(("=" if k == len(shown) - 1 else "_") * line_length)
    print(f"Total params: {total}")
    print("_" * line_length)
    return total


def _label(node):
    a = node.attrs

    def dims(v):
        return "x".join(str(d) for d in (v if isinstance(v, (tuple, list)) else (v,)))
    if node.op == "Convolution":
        return f"Convolution\n{dims(a.get('kernel'))}/{dims(a.get('stride', 1))}, " \
               f"{a.get('num_filter')}"
    if node.op == "FullyConnected":
        return f"FullyConnected\n{a.get('num_hidden')}"
    if node.op in ("Activation", "LeakyReLU"):
        return f"{node.op}\n{a.get('act_type', 'leaky')}"
    if node.op == "Pooling":
        return f"Pooling\n{a.get('pool_type', 'max')}, {dims(a.get('kernel', '[]'))}/" \
               f"{dims(a.get('stride', 1))}"
    return node.name if node.is_var else node.op


def plot_network(symbol, title="plot", save_format="pdf", shape=None, dtype=None,
                 node_attrs=None, hide_weights=True):
    """A graphviz.Digraph of the symbol (render it with .render() or .view())."""
    try:
        from graphviz import Digraph
    except ImportError:
        raise KilnError("viz.plot_network needs the graphviz package: pip install "
                        "'kiln[viz]' (or pip install graphviz; rendering also needs the "
                        "Graphviz 'dot' program)") from None
    _check_symbol(symbol, "plot_network")
    if dtype is not None:
        raise KilnError("viz.plot_network: dtype labels are not supported; pass shape only")
    shapes = _shapes(symbol, shape)
    style = {"shape": "box", "fixedsize": "true", "width": "1.3", "height": "0.8034",
             "style": "filled", **(node_attrs or {})}
    dot = Digraph(name=title, format=save_format)
    hidden = set()
    nodes = symbol._nodes()
    for node in nodes:
        if node.is_var and node.name.endswith(_WEIGHT_SUFFIXES):
            if hide_weights:
                hidden.add(id(node))
                continue
        attr = dict(style, fillcolor=_COLORS.get(node.op or "null", "#fccde5"))
        if node.is_var:
            attr["shape"] = "oval"
        dot.node(name=node.name, label=_label(node), **attr)
    for node in nodes:
        for src, k in node.inputs:
            if id(src) in hidden:
                continue
            label = "x".join(str(d) for d in shapes.get((id(src), k), ())[1:])
            dot.edge(tail_name=node.name, head_name=src.name, label=label, dir="back",
                     arrowtail="open")
    return dot
