"""The symbol file (`PATH-symbol.json`): a graph as versioned JSON, written and validated.

Schema (format "kiln-symbol", format_version 1):

    {"format": "kiln-symbol", "format_version": 1, "kiln_version": "0.1.0",
     "name": "HybridSequential",
     "inputs":  [{"name": "data", "node": 0, "shape": [2, 8], "dtype": "float32"}],
     "outputs": [{"node": 7, "shape": [2, 3], "dtype": "float32"}],
     "nodes": [{"op": "input", "name": "data", "inputs": [], "attrs": {},
                "shape": [2, 8], "dtype": "float32"},
               {"op": "param", "name": "0.weight", ...},
               {"op": "const", "name": "__const__.3", ...},   # value in the params file
               {"op": "matmul", "inputs": [0, 2], "attrs": {...typed...}, ...}, ...]}

Nodes are in topological order and refer to earlier nodes by index, so a reader can check
for cycles and forward references with one comparison. Ops are registry primitive names
or one of input/param/const. Reading validates everything (types of every field, index
ranges, size caps, every node's shape and dtype re-derived from its op's shape rule)
before anything is allocated or run, and every problem is a KilnError.
"""
import json

from .._core.base import Shaped, KilnError
from .._core.ir import SOURCE_OPS
from ..npx.io import MAX_FILE_BYTES, MAX_RANK, MAX_TENSOR_ELEMENTS, read_capped
from ..ops.registry import REGISTRY
from . import attrs as tattrs

FORMAT = "kiln-symbol"
FORMAT_VERSION = 1
CONST_PREFIX = "__const__."   # params-file names of constants; never a parameter name

# caps so a hostile file cannot make a reader allocate without bound (with those of every
# file reader: npx/io.py)
MAX_NODES = 1_000_000
MAX_TOTAL_ELEMENTS = 1 << 30         # over all nodes of the graph


class NodeSpec(Shaped):
    __slots__ = ("op", "inputs", "attrs", "shape", "dtype", "name", "grad_req")

    def __init__(self, op, inputs, attrs, shape, dtype, name, grad_req="write"):
        self.op, self.inputs, self.attrs = op, inputs, attrs
        self.shape, self.dtype, self.name = shape, dtype, name
        self.grad_req = grad_req


class Symbol:
    """A validated symbol file: node specs plus which nodes are inputs, outputs, params."""

    def __init__(self, name, nodes, inputs, outputs, format_version, kiln_version):
        self.name = name
        self.nodes = nodes
        self.inputs = inputs            # node indices, in call order
        self.outputs = outputs          # node indices
        self.format_version = format_version
        self.kiln_version = kiln_version

    @property
    def input_names(self):
        return [self.nodes[k].name for k in self.inputs]

    @property
    def params(self):
        """(index, spec) of every parameter node, in file order."""
        return [(k, n) for k, n in enumerate(self.nodes) if n.op == "param"]

    @property
    def consts(self):
        return [(k, n) for k, n in enumerate(self.nodes) if n.op == "const"]

    def op_counts(self):
        counts = {}
        for n in self.nodes:
            if n.op not in SOURCE_OPS:
                counts[n.op] = counts.get(n.op, 0) + 1
        return counts


# ---- writing -------------------------------------------------------------------------------

def graph_to_json(graph, param_names, kiln_version, grad_reqs=None):
    """(JSON text, {reserved const name: value}) for a Graph whose params are named.

    grad_reqs ({id(param node): 'write' | 'add' | 'null'}) is kept so an importer does not
    train what the original froze (BatchNorm's running statistics)."""
    index = {}
    nodes, consts = [], {}
    for k, n in enumerate(graph.nodes):
        index[id(n)] = k
        if n.op == "param":
            name = param_names[id(n)]
            if name.startswith(CONST_PREFIX):
                raise KilnError(f"export: parameter name {name!r} uses the reserved prefix "
                                f"{CONST_PREFIX!r}")
        elif n.op == "const":
            name = f"{CONST_PREFIX}{k}"
            consts[name] = n.value
        else:
            name = n.name
        where = f"export: node {k} ({n.op})"
        nodes.append({
            "op": n.op, "name": name, "inputs": [index[id(i)] for i in n.inputs],
            "attrs": {key: tattrs.encode(v, f"{where} attribute {key!r}")
                      for key, v in n.attrs.items()},
            "shape": list(n.shape), "dtype": tattrs.dtype_name(n.dtype)})
        if n.op == "param" and grad_reqs is not None:
            nodes[-1]["grad_req"] = grad_reqs.get(id(n), "write")
    doc = {
        "format": FORMAT, "format_version": FORMAT_VERSION, "kiln_version": kiln_version,
        "name": graph.name,
        "inputs": [{"name": n.name, "node": index[id(n)], "shape": list(n.shape),
                    "dtype": tattrs.dtype_name(n.dtype)} for n in graph.inputs],
        "outputs": [{"node": index[id(n)], "shape": list(n.shape),
                     "dtype": tattrs.dtype_name(n.dtype)} for n in graph.outputs],
        "nodes": nodes,
    }
    # one node per line keeps big files readable and diffable; allow_nan=False: every
    # non-finite float is already a tagged string
    nodes_text = ",\n  ".join(json.dumps(n, allow_nan=False) for n in doc.pop("nodes"))
    head = json.dumps(doc, indent=1, allow_nan=False)
    return head[:-2] + ',\n "nodes": [\n  ' + nodes_text + "\n ]\n}\n", consts


# ---- reading -------------------------------------------------------------------------------

def read_symbol(path):
    return parse_symbol(read_capped(path, "symbol file", MAX_FILE_BYTES), str(path))


def parse_symbol(raw, source="<symbol>"):
    try:
        text = raw.decode("utf-8") if isinstance(raw, (bytes, bytearray)) else raw
        doc = json.loads(text)
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise KilnError(f"{source} is not a valid kiln symbol file (bad JSON: {exc})") from None
    except MemoryError:
        raise KilnError(f"not enough memory to parse the symbol file {source}") from None
    return _validate(doc, source)


def _field(obj, key, types, where):
    if not isinstance(obj, dict):
        raise KilnError(f"{where}: expected an object, got {type(obj).__name__}")
    if key not in obj:
        raise KilnError(f"{where}: missing field {key!r}")
    value = obj[key]
    if not isinstance(value, types) or (isinstance(value, bool) and bool not in _tuple(types)):
        raise KilnError(f"{where}: field {key!r} has the wrong type "
                        f"({type(value).__name__})")
    return value


def _tuple(types):
    return types if isinstance(types, tuple) else (types,)


def _shape(value, where):
    if not isinstance(value, list) or len(value) > MAX_RANK:
        raise KilnError(f"{where}: shape must be a list of at most {MAX_RANK} sizes")
    size = 1
    for d in value:
        if not isinstance(d, int) or isinstance(d, bool) or d < 0:
            raise KilnError(f"{where}: bad dimension {d!r} in shape {value[:8]!r}")
        size *= d
        if size > MAX_TENSOR_ELEMENTS:
            raise KilnError(f"{where}: shape {value[:8]!r} has more than "
                            f"{MAX_TENSOR_ELEMENTS} elements (the reader's cap)")
    return tuple(value), size


def _validate(doc, source):
    where = source
    fmt = _field(doc, "format", str, where)
    if fmt != FORMAT:
        raise KilnError(f"{where}: format is {fmt!r}, expected {FORMAT!r}")
    version = _field(doc, "format_version", int, where)
    if version > FORMAT_VERSION:
        raise KilnError(f"{where}: format_version {version} is newer than this kiln "
                        f"understands ({FORMAT_VERSION}); upgrade kiln to load it")
    if version < 1:
        raise KilnError(f"{where}: bad format_version {version}")
    kiln_version = _field(doc, "kiln_version", str, where)
    name = doc.get("name", "symbol")
    if not isinstance(name, str):
        raise KilnError(f"{where}: field 'name' must be a string")
    raw_nodes = _field(doc, "nodes", list, where)
    if len(raw_nodes) > MAX_NODES:
        raise KilnError(f"{where}: {len(raw_nodes)} nodes is more than the cap {MAX_NODES}")
    nodes, total = [], 0
    param_names, const_names = set(), set()
    for k, raw in enumerate(raw_nodes):
        spec = _node(raw, k, len(nodes), f"{where}: node {k}")
        total += spec.size
        if total > MAX_TOTAL_ELEMENTS:
            raise KilnError(f"{where}: the graph's values exceed {MAX_TOTAL_ELEMENTS} "
                            "elements in all (the reader's cap)")
        if spec.op == "param":
            if spec.name.startswith(CONST_PREFIX) or spec.name in param_names:
                raise KilnError(f"{where}: node {k}: parameter name {spec.name!r} is "
                                "reserved or used twice")
            param_names.add(spec.name)
        elif spec.op == "const":
            if spec.name != f"{CONST_PREFIX}{k}" or spec.name in const_names:
                raise KilnError(f"{where}: node {k}: a constant must be named "
                                f"{CONST_PREFIX}{k}, got {spec.name!r}")
            const_names.add(spec.name)
        elif spec.op != "input":
            _check_rule(spec, nodes, f"{where}: node {k} ({spec.op})")
        nodes.append(spec)
    inputs = _io_list(doc, "inputs", nodes, where, need_name=True)
    outputs = _io_list(doc, "outputs", nodes, where, need_name=False)
    if not outputs:
        raise KilnError(f"{where}: the graph has no outputs")
    declared = sorted(k for k, n in enumerate(nodes) if n.op == "input")
    if sorted(inputs) != declared:
        raise KilnError(f"{where}: 'inputs' must list every input node exactly once")
    names = [nodes[k].name for k in inputs]
    if len(set(names)) != len(names):
        raise KilnError(f"{where}: input names repeat: {names}")
    return Symbol(name, nodes, inputs, outputs, version, kiln_version)


def _node(raw, k, n_before, where):
    op = _field(raw, "op", str, where)
    if op not in SOURCE_OPS and op not in REGISTRY:
        raise KilnError(f"{where}: unknown op {op[:60]!r} (not in kiln's op registry)")
    name = raw.get("name", f"{op}{k}")
    if not isinstance(name, str) or len(name) > 1000:
        raise KilnError(f"{where}: 'name' must be a string of at most 1000 characters")
    inputs = _field(raw, "inputs", list, where)
    for i in inputs:
        if not isinstance(i, int) or isinstance(i, bool) or not 0 <= i < n_before:
            # only earlier nodes: this rules out cycles and forward references at once
            raise KilnError(f"{where}: input index {i!r} does not name an earlier node")
    attrs = tattrs.decode_attrs(_field(raw, "attrs", dict, where), where)
    shape, _ = _shape(_field(raw, "shape", list, where), where)
    dtype = tattrs.parse_dtype(_field(raw, "dtype", str, where), where)
    if op in SOURCE_OPS and (inputs or attrs):
        raise KilnError(f"{where}: a {op} node takes no inputs or attributes")
    grad_req = raw.get("grad_req", "write")
    if op != "param" and "grad_req" in raw or grad_req not in ("write", "add", "null"):
        raise KilnError(f"{where}: bad grad_req {grad_req!r}")
    return NodeSpec(op, tuple(inputs), attrs, shape, dtype, name, grad_req)


class _Aval(Shaped):
    """What a shape rule reads: shape, dtype, ndim, size."""
    __slots__ = ("shape", "dtype")

    def __init__(self, spec):
        self.shape, self.dtype = spec.shape, spec.dtype


def _check_rule(spec, nodes, where):
    prim = REGISTRY[spec.op]
    avals = [_Aval(nodes[i]) for i in spec.inputs]
    try:
        shape, dtype = prim.shape(*avals, **spec.attrs)
        shape = tuple(int(d) for d in shape)
    except KilnError as exc:
        raise KilnError(f"{where}: the op rejects its inputs/attributes: {exc}") from None
    except Exception as exc:  # a rule meeting attributes of the wrong type or arity
        raise KilnError(f"{where}: bad inputs or attributes for this op "
                        f"({type(exc).__name__}: {exc})") from None
    if shape != spec.shape or dtype != spec.dtype:
        raise KilnError(f"{where}: declared {spec.dtype}{list(spec.shape)} but the op's "
                        f"shape rule gives {dtype}{list(shape)}")


def _io_list(doc, key, nodes, where, need_name):
    items = _field(doc, key, list, where)
    out = []
    for j, item in enumerate(items):
        w = f"{where}: {key}[{j}]"
        k = _field(item, "node", int, w)
        if not 0 <= k < len(nodes):
            raise KilnError(f"{w}: node index {k} out of range")
        node = nodes[k]
        if need_name and (node.op != "input" or _field(item, "name", str, w) != node.name):
            raise KilnError(f"{w}: does not match input node {k}")
        if "shape" in item and _shape(item["shape"], w)[0] != node.shape:
            raise KilnError(f"{w}: shape {item['shape']!r} differs from node {k}'s "
                            f"{list(node.shape)}")
        if "dtype" in item and tattrs.parse_dtype(item["dtype"], w) != node.dtype:
            raise KilnError(f"{w}: dtype {item['dtype']!r} differs from node {k}'s "
                            f"{node.dtype}")
        out.append(k)
    return out
