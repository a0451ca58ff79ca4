"""Reading an exported model back: a validated symbol plus its checked parameter values,
and (for the ONNX and C exporters) a kiln Graph rebuilt from them."""
import numpy as _np

from .._core.base import KilnError
from .._core.ir import Graph, Node
from .._core.symdim import concrete_value
from ..npx.io import read_npz
from .params import match_params
from .symbol import read_symbol


class LoadedModel:
    def __init__(self, symbol, params, consts):
        self.symbol = symbol
        self.params = params      # structural name -> NumPy array
        self.consts = consts      # node index -> NumPy array


def load_model(symbol_file, param_file):
    """The model of an exported symbol file and its npz parameter file, as a LoadedModel: its
    symbol, its parameters by structural name and its constants."""
    symbol = read_symbol(symbol_file)
    params, consts = match_params(symbol, read_npz(param_file, "load"), str(param_file))
    return LoadedModel(symbol, params, consts)


def to_graph(model):
    """A kiln Graph of the loaded model; const nodes carry their values."""
    sym = model.symbol
    built, inputs, params = [], {}, []
    for k, spec in enumerate(sym.nodes):
        value = None
        if spec.op == "const":
            value = model.consts.get(k)
            if value is None:
                raise KilnError(f"constant {spec.name} has no value")
            value = _np.ascontiguousarray(value)
        node = Node(spec.op, [built[i] for i in spec.inputs], spec.attrs, spec.shape,
                    spec.dtype, name=spec.name, value=value)
        if spec.op == "param":
            params.append(node)
        built.append(node)
    inputs = [built[k] for k in sym.inputs]
    graph = Graph(inputs, params, [built[k] for k in sym.outputs], sym.name)
    graph.shape_env = sym.shape_env      # symbols and guards of a symbolic model
    return graph


def specialize(graph, sizes):
    """A copy of a graph with symbolic sizes (to_graph of a version-2 file) with every
    symbol fixed to `sizes` ({symbol: int}), for consumers that need fixed sizes (build-c);
    the model's guards must hold for them."""
    env = graph.shape_env
    if env is None:
        raise KilnError(f"the model has fixed sizes; no --size applies (got {sizes})")
    if set(sizes) != set(env.symbols):
        raise KilnError(f"the model's symbolic sizes are {sorted(env.symbols)}: give each "
                        f"exactly once (got {sorted(sizes)})")
    bad = [k for k, v in sizes.items() if not isinstance(v, int) or v < 0]
    if bad:
        raise KilnError(f"sizes must be integers >= 0: {bad}")
    for guard in env.guards:
        if not guard.holds(sizes):
            raise KilnError(f"the model does not serve the sizes {sizes}: its guard "
                            f"{guard!r} does not hold")
    mapping = {}

    def fixed(n):
        hit = mapping.get(id(n))
        if hit is None:
            hit = mapping[id(n)] = Node(n.op, [fixed(i) for i in n.inputs],
                                        concrete_value(n.attrs, sizes),
                                        tuple(concrete_value(n.shape, sizes)), n.dtype,
                                        name=n.name, value=n.value)
        return hit
    out = Graph([fixed(n) for n in graph.inputs], [fixed(n) for n in graph.params],
                [fixed(n) for n in graph.outputs], graph.name)
    out.shape_env = None
    return out
