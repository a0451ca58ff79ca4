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

Format version 2 adds symbolic sizes (a model exported with a dynamic batch or length):
a size in a shape may be a string, an expression over the file's symbols (symexpr.py),
and so may a size-valued attribute (`{"sym": "(batch * 784)"}`). Two fields declare them:

     "symbols": {"batch": {"hint": 2}, "seq": {"hint": 5}},    # the traced sizes
     "guards": [{"lhs": "seq", "op": ">=", "rhs": 2, "holds": true, "where": "..."}]

Every symbol is an input's size (an input's dimension is an int or a bare symbol);
parameters and constants have fixed sizes. A guard is a condition the trace relied on:
the model serves the sizes where every guard holds (`lhs op rhs` is `holds`). A reader
re-derives every shape with the symbols (the same expressions, node for node) and adds
any guard a shape rule needs. Files without symbols are still written as version 1.
"""
import json

from .._core.base import Shaped, KilnError
from .._core.ir import SOURCE_OPS
from .._core.symdim import Guard, ShapeEnv, SymInt, building, has_symbolic
from ..npx.io import MAX_FILE_BYTES, MAX_RANK, MAX_TENSOR_ELEMENTS, read_capped
from ..ops.registry import REGISTRY
from . import attrs as tattrs
from . import symexpr

FORMAT = "kiln-symbol"
FORMAT_VERSION = 2            # the newest this kiln reads and writes
SYMBOLIC_VERSION = 2          # the first with symbolic sizes
CONST_PREFIX = "__const__."   # params-file names of constants; never a parameter name

# caps so a hostile file cannot make a reader allocate without bound (with those of every
# file reader: npx/io.py)
MAX_NODES = 1_000_000
MAX_TOTAL_ELEMENTS = 1 << 30         # over all nodes of the graph (symbolic: at the hints)
MAX_SYMBOLS = 64
MAX_GUARDS = 10_000
GUARD_OPS = ("==", "!=", "<", "<=", ">", ">=")


class NodeSpec(Shaped):
    __slots__ = ("op", "inputs", "attrs", "shape", "dtype", "name", "grad_req")

    def __init__(self, op, inputs, attrs, shape, dtype, name, grad_req="write"):
        self.op, self.inputs, self.attrs = op, inputs, attrs
        self.shape, self.dtype, self.name = shape, dtype, name
        self.grad_req = grad_req


class Symbol:
    """A validated symbol file: node specs plus which nodes are inputs, outputs, params."""

    def __init__(self, name, nodes, inputs, outputs, format_version, kiln_version,
                 shape_env=None):
        self.name = name
        # symdim.ShapeEnv of a symbolic model (its symbols' example sizes and its guards)
        self.shape_env = shape_env
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
            "shape": _sizes(n.shape), "dtype": tattrs.dtype_name(n.dtype)})
        if n.op == "param" and grad_reqs is not None:
            nodes[-1]["grad_req"] = grad_reqs.get(id(n), "write")
    symbolic = _symbols_section(graph)
    doc = {
        "format": FORMAT, "format_version": SYMBOLIC_VERSION if symbolic else 1,
        "kiln_version": kiln_version, "name": graph.name,
        "inputs": [{"name": n.name, "node": index[id(n)], "shape": _sizes(n.shape),
                    "dtype": tattrs.dtype_name(n.dtype)} for n in graph.inputs],
        "outputs": [{"node": index[id(n)], "shape": _sizes(n.shape),
                     "dtype": tattrs.dtype_name(n.dtype)} for n in graph.outputs],
    }
    if symbolic:
        doc.update(symbolic)
    doc["nodes"] = nodes
    # one node per line keeps big files readable and diffable; allow_nan=False: every
    # non-finite float is already a tagged string
    nodes_text = ",\n  ".join(json.dumps(n, allow_nan=False) for n in doc.pop("nodes"))
    head = json.dumps(doc, indent=1, allow_nan=False)
    return head[:-2] + ',\n "nodes": [\n  ' + nodes_text + "\n ]\n}\n", consts


def _sizes(shape):
    return [symexpr.size_text(d) for d in shape]


def _symbols_section(graph):
    """{"symbols": ..., "guards": ...} of a graph with symbolic sizes, else None. The
    symbols are the inputs' symbolic dimensions; the guards those of graph.shape_env (the
    build that traced it), if it has one."""
    if not any(has_symbolic(n.shape) for n in graph.nodes):
        return None
    symbols = {}
    for n in graph.inputs:
        for d in n.shape:
            if isinstance(d, SymInt):
                if d.expr[0] != "sym":
                    raise KilnError(f"export: input {n.name} has the size {d}, an expression; "
                                    "an input's symbolic sizes must be plain symbols")
                symbols[symexpr.to_text(d.expr)] = {"hint": d.hint}
    used = set()
    for n in graph.nodes:
        for d in n.shape:
            if isinstance(d, SymInt):
                used |= d.symbols()
    missing = used - set(symbols)
    if missing:
        raise KilnError(f"export: the sizes {sorted(missing)} are not sizes of the inputs")
    env = getattr(graph, "shape_env", None)
    guards = []
    for g in (env.guards if env is not None else ()):
        guards.append({"lhs": _guard_side(g.lhs), "op": g.op, "rhs": _guard_side(g.rhs),
                       "holds": bool(g.outcome), "where": str(g.where)[:1000]})
    return {"symbols": symbols, "guards": guards}


def _guard_side(expr):
    return expr[1] if expr[0] == "const" else symexpr.to_text(expr)


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


def _shape(value, where, symbols=None):
    """(shape, element count at the symbols' hints); a string size is an expression over
    `symbols` (None: the file has none)."""
    if not isinstance(value, list) or len(value) > MAX_RANK:
        raise KilnError(f"{where}: shape must be a list of at most {MAX_RANK} sizes")
    size, dims = 1, []
    for d in value:
        if isinstance(d, str) and symbols is not None:
            d = symexpr.read_size(d, symbols, where)
            hint = d.hint
        elif not isinstance(d, int) or isinstance(d, bool):
            hint = -1
        else:
            hint = d
        if hint < 0:
            raise KilnError(f"{where}: bad dimension {d!r} in shape {value[:8]!r}")
        dims.append(d)
        size *= hint
        if size > MAX_TENSOR_ELEMENTS:
            raise KilnError(f"{where}: shape {value[:8]!r} has more than "
                            f"{MAX_TENSOR_ELEMENTS} elements (the reader's cap)")
    return tuple(dims), size


def _symbols(doc, version, where):
    """The ShapeEnv a version-2 file declares (its symbols and guards), or None."""
    if version < SYMBOLIC_VERSION:
        if "symbols" in doc or "guards" in doc:
            raise KilnError(f"{where}: symbolic sizes need format_version "
                            f"{SYMBOLIC_VERSION}, the file says {version}")
        return None
    raw = _field(doc, "symbols", dict, where)
    if len(raw) > MAX_SYMBOLS:
        raise KilnError(f"{where}: more than {MAX_SYMBOLS} symbols")
    env = ShapeEnv()
    for name, spec in raw.items():
        w = f"{where}: symbol {name[:80]!r}"
        if not symexpr.valid_name(name):
            raise KilnError(f"{w}: a symbol name is a letter or '_' followed by letters, "
                            f"digits or '_' (at most {symexpr.MAX_NAME} characters)")
        hint = _field(spec, "hint", int, w)
        if not 0 <= hint <= MAX_TENSOR_ELEMENTS:
            raise KilnError(f"{w}: hint {hint} is not a size")
        env.symbols[name] = hint
    raw_guards = _field(doc, "guards", list, where)
    if len(raw_guards) > MAX_GUARDS:
        raise KilnError(f"{where}: more than {MAX_GUARDS} guards")
    for j, raw_guard in enumerate(raw_guards):
        w = f"{where}: guards[{j}]"
        lhs, rhs = (_guard_expr(_field(raw_guard, side, (int, str), w), env.symbols, w)
                    for side in ("lhs", "rhs"))
        op = _field(raw_guard, "op", str, w)
        if op not in GUARD_OPS:
            raise KilnError(f"{w}: unknown comparison {op[:20]!r} (expected one of "
                            f"{GUARD_OPS})")
        text = _field(raw_guard, "where", str, w)[:1000]
        guard = Guard(lhs, op, rhs, _field(raw_guard, "holds", bool, w), text)
        if not guard.holds(env.symbols):
            raise KilnError(f"{w}: the guard {guard!r} does not hold for the symbols' hints "
                            f"{env.symbols}")
        env.guards.append(guard)
    return env


def _guard_expr(value, symbols, where):
    if isinstance(value, bool):
        raise KilnError(f"{where}: a guard's side is an integer or an expression")
    if isinstance(value, int):
        if abs(value) >= 1 << 62:
            raise KilnError(f"{where}: integer {value} out of range")
        return ("const", value)
    return symexpr.parse(value, symbols, where)


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
    env = _symbols(doc, version, where)
    symbols = env.symbols if env is not None else None
    file_guards = list(env.guards) if env is not None else []
    nodes, total = [], 0
    param_names, const_names = set(), set()
    for k, raw in enumerate(raw_nodes):
        spec, size = _node(raw, k, len(nodes), f"{where}: node {k}", symbols)
        total += size
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
            _check_rule(spec, nodes, f"{where}: node {k} ({spec.op})", env)
        nodes.append(spec)
    inputs = _io_list(doc, "inputs", nodes, where, need_name=True, symbols=symbols)
    outputs = _io_list(doc, "outputs", nodes, where, need_name=False, symbols=symbols)
    if not outputs:
        raise KilnError(f"{where}: the graph has no outputs")
    declared = sorted(k for k, n in enumerate(nodes) if n.op == "input")
    if sorted(inputs) != declared:
        raise KilnError(f"{where}: 'inputs' must list every input node exactly once")
    names = [nodes[k].name for k in inputs]
    if len(set(names)) != len(names):
        raise KilnError(f"{where}: input names repeat: {names}")
    if env is not None:
        _check_symbols(env, nodes, inputs, where)
        # the file's guards first, then those the shape rules needed, once each
        known = {(g.lhs, g.op, g.rhs) for g in file_guards}
        env.guards = file_guards + [g for g in env.guards[len(file_guards):]
                                    if (g.lhs, g.op, g.rhs) not in known]
    return Symbol(name, nodes, inputs, outputs, version, kiln_version, env)


def _check_symbols(env, nodes, inputs, where):
    """Every symbol is a size of an input, so a call's input shapes give them all."""
    bound = set()
    for k in inputs:
        for d in nodes[k].shape:
            if isinstance(d, SymInt):
                bound.add(d.expr[1])
    unbound = set(env.symbols) - bound
    if unbound:
        raise KilnError(f"{where}: the symbols {sorted(unbound)} are not sizes of any input, "
                        "so a call cannot give them")


def _node(raw, k, n_before, where, symbols=None):
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
    attrs = tattrs.decode_attrs(_field(raw, "attrs", dict, where), where, symbols)
    shape, size = _shape(_field(raw, "shape", list, where), where, symbols)
    dtype = tattrs.parse_dtype(_field(raw, "dtype", str, where), where)
    if op in SOURCE_OPS and (inputs or attrs):
        raise KilnError(f"{where}: a {op} node takes no inputs or attributes")
    for d in shape:
        if isinstance(d, SymInt) and (op in ("param", "const") or
                                      op == "input" and d.expr[0] != "sym"):
            raise KilnError(f"{where}: a {op} node's size must be "
                            f"{'a bare symbol or ' if op == 'input' else ''}an integer, "
                            f"got {d}")
    grad_req = raw.get("grad_req", "write")
    if op != "param" and "grad_req" in raw or grad_req not in ("write", "add", "null"):
        raise KilnError(f"{where}: bad grad_req {grad_req!r}")
    return NodeSpec(op, tuple(inputs), attrs, shape, dtype, name, grad_req), size


class _Aval(Shaped):
    """What a shape rule reads: shape, dtype, ndim, size."""
    __slots__ = ("shape", "dtype")

    def __init__(self, spec):
        self.shape, self.dtype = spec.shape, spec.dtype


def _check_rule(spec, nodes, where, env=None):
    prim = REGISTRY[spec.op]
    avals = [_Aval(nodes[i]) for i in spec.inputs]
    try:
        if env is None:
            shape, dtype = prim.shape(*avals, **spec.attrs)
            shape = tuple(int(d) for d in shape)
        else:
            with building(env):     # guards a rule needs join the model's
                shape, dtype = prim.shape(*avals, **spec.attrs)
            shape = tuple(shape)
    except KilnError as exc:
        raise KilnError(f"{where}: the op rejects its inputs/attributes: {exc}") from None
    except Exception as exc:  # a rule meeting attributes of the wrong type or arity
        raise KilnError(f"{where}: bad inputs or attributes for this op "
                        f"({type(exc).__name__}: {exc})") from None
    if not symexpr.same_sizes(shape, spec.shape) or dtype != spec.dtype:
        raise KilnError(f"{where}: declared {spec.dtype}{list(spec.shape)} but the op's "
                        f"shape rule gives {dtype}{list(shape)}")


def _io_list(doc, key, nodes, where, need_name, symbols=None):
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
        if "shape" in item and not symexpr.same_sizes(_shape(item["shape"], w, symbols)[0],
                                                      node.shape):
            raise KilnError(f"{w}: shape {item['shape']!r} differs from node {k}'s "
                            f"{list(node.shape)}")
        if "dtype" in item and tattrs.parse_dtype(item["dtype"], w) != node.dtype:
            raise KilnError(f"{w}: dtype {item['dtype']!r} differs from node {k}'s "
                            f"{node.dtype}")
        out.append(k)
    return out
