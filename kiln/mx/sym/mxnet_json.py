"""MXNet's symbol JSON (what `mx.sym.save` and `HybridBlock.export` write), both ways.

Layout (1.x and 2.x alike):

    {"nodes": [{"op": "null", "name": "data", "inputs": []},
               {"op": "FullyConnected", "name": "fc1", "attrs": {"num_hidden": "8"},
                "inputs": [[0, 0, 0], [1, 0, 0], [2, 0, 0]]}, ...],
     "arg_nodes": [0, 1, 2], "node_row_ptr": [0, 1, ...], "heads": [[3, 0, 0]],
     "attrs": {"mxnet_version": ["int", 10901]}}

Node attributes sit under "attrs" (1.x since 0.12, and 2.x), "attr" or "param" (older
files); every value is a string parsed by kiln/mx/ops's parse_attr. Nodes refer only to
earlier nodes, which the reader checks (no cycles, no forward references). Ops are looked
up in kiln's MXNet table; a name it does not know is an error that names the op and node.
Nodes of kiln's own registry ("kiln:matmul") carry typed attribute values.
"""
import json

from ..._core.base import KilnError
from ...ops.registry import REGISTRY
from ...export import attrs as tattrs
from ...export.symbol import MAX_NODES
from ...npx.io import MAX_FILE_BYTES, read_capped
from ..ops import OPS, find, parse_attr
from ..util import is_np_shape
from .symbol import KILN_PREFIX, Symbol, SymNode, nodes_of

MXNET_VERSION = 10901          # the version these files are written as (MXNet 1.9.1)
_ATTR_KEYS = ("attrs", "attr", "param")


# ---- writing -----------------------------------------------------------------------------------

def _attr_text(value):
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, (tuple, list)):
        return "(" + ", ".join(_attr_text(v) for v in value) + ("," if len(value) == 1
                                                                 else "") + ")"
    return str(value)


def to_dict(symbol):
    nodes = nodes_of(symbol._heads)
    index = {id(n): k for k, n in enumerate(nodes)}
    out = []
    for n in nodes:
        if n.grad_of is not None:
            raise KilnError("Symbol.save: a gradient symbol (from Symbol.grad) is not saved; "
                            "save the forward symbol and call grad() after loading it")
        item = {"op": "null" if n.is_var else n.op, "name": n.name}
        if n.is_var:
            if n.var_attrs:
                item["attrs"] = {k: _attr_text(v) for k, v in n.var_attrs.items()}
        elif n.op.startswith(KILN_PREFIX):
            item["attrs"] = {k: tattrs.encode(v, f"node {n.name}") for k, v in n.attrs.items()}
        elif n.attrs:
            item["attrs"] = {k: _attr_text(v) for k, v in n.attrs.items()}
        item["inputs"] = [[index[id(src)], k, 0] for src, k in n.inputs]
        out.append(item)
    rows = [0]
    for n in nodes:
        rows.append(rows[-1] + n.num_outputs)
    return {"nodes": out,
            "arg_nodes": [k for k, n in enumerate(nodes) if n.is_var],
            "node_row_ptr": rows,
            "heads": [[index[id(n)], k, 0] for n, k in symbol._heads],
            "attrs": _graph_attrs()}


def _graph_attrs():
    """MXNet's graph attributes: its version, and is_np_shape when NumPy shape semantics
    are on (a 0 in the file's shapes is then a size, not an unknown)."""
    attrs = {"is_np_shape": ["int", 1]} if is_np_shape() else {}
    attrs["mxnet_version"] = ["int", MXNET_VERSION]
    return attrs


def to_json(symbol):
    return json.dumps(to_dict(symbol), indent=2)


# ---- reading -----------------------------------------------------------------------------------

def is_mxnet_doc(doc):
    return isinstance(doc, dict) and "nodes" in doc and "heads" in doc and "format" not in doc


def is_mxnet_text(text):
    """Whether a symbol file's text is MXNet's JSON (not kiln's own format)."""
    try:
        return is_mxnet_doc(json.loads(text))
    except (ValueError, RecursionError):
        return False


def _int(value, where, lo, hi):
    if not isinstance(value, int) or isinstance(value, bool) or not lo <= value < hi:
        raise KilnError(f"{where}: expected an integer in [{lo}, {hi}), got {value!r:.60}")
    return value


def _entry(item, n_before, outputs_of, where):
    if not isinstance(item, list) or len(item) not in (2, 3):
        raise KilnError(f"{where}: an input must be [node, output, version], got "
                        f"{item!r:.60}")
    src = _int(item[0], where + " (input node)", 0, n_before)
    k = _int(item[1], where + " (output index)", 0, outputs_of[src])
    return src, k


def _attrs(raw, op, where):
    found = [key for key in _ATTR_KEYS if key in raw]
    if len(found) > 1:
        raise KilnError(f"{where}: has both {found[0]!r} and {found[1]!r}")
    attrs = raw.get(found[0], {}) if found else {}
    if not isinstance(attrs, dict):
        raise KilnError(f"{where}: {found[0]!r} must be an object")
    if op.startswith(KILN_PREFIX):
        return tattrs.decode_attrs(attrs, where)
    out = {}
    for key, value in attrs.items():
        if not isinstance(value, str) or len(value) > 10000:
            raise KilnError(f"{where}: attribute {key[:60]!r} must be a string")
        out[key] = parse_attr(value)
    return out


def from_dict(doc, source="<symbol>"):
    if not is_mxnet_doc(doc):
        raise KilnError(f"{source}: not an MXNet symbol file (needs 'nodes' and 'heads')")
    version = doc.get("attrs", {}).get("mxnet_version") if isinstance(doc.get("attrs"),
                                                                       dict) else None
    if version is not None and not (isinstance(version, list) and len(version) == 2
                                    and isinstance(version[1], int)):
        raise KilnError(f"{source}: bad mxnet_version {version!r:.60}")
    raw_nodes = doc["nodes"]
    if not isinstance(raw_nodes, list) or len(raw_nodes) > MAX_NODES:
        raise KilnError(f"{source}: 'nodes' must be a list of at most {MAX_NODES} nodes")
    nodes, outputs_of, names = [], [], set()
    for k, raw in enumerate(raw_nodes):
        where = f"{source}: node {k}"
        if not isinstance(raw, dict):
            raise KilnError(f"{where}: expected an object")
        op, name = raw.get("op"), raw.get("name")
        if not isinstance(op, str) or not isinstance(name, str) or len(name) > 1000:
            raise KilnError(f"{where}: 'op' and 'name' must be strings")
        where = f"{where} ({op} {name[:60]!r})"
        inputs = raw.get("inputs", [])
        if not isinstance(inputs, list):
            raise KilnError(f"{where}: 'inputs' must be a list")
        attrs = _attrs(raw, op, where)
        ins = [_entry(i, k, outputs_of, where) for i in inputs]
        if op == "null":
            if ins:
                raise KilnError(f"{where}: a variable takes no inputs")
            if name in names:
                raise KilnError(f"{where}: variable name {name!r} is used twice")
            names.add(name)
            node = SymNode(None, name, var_attrs=attrs)
        elif op.startswith(KILN_PREFIX):
            if op[len(KILN_PREFIX):] not in REGISTRY:
                raise KilnError(f"{where}: unknown kiln op {op[:60]!r}")
            node = SymNode(op, name, [(nodes[s], i) for s, i in ins], attrs)
        else:
            info = find(op)
            if info is None:
                raise KilnError(f"{where}: MXNet op {op[:60]!r} has no kiln mapping (kiln "
                                f"maps {len(OPS)} MXNet ops; see kiln/mx/ops)")
            expected = None if info.variadic else len(info.input_names(attrs))
            if expected is not None and len(ins) != expected:
                raise KilnError(f"{where}: takes {expected} inputs "
                                f"{info.input_names(attrs)}, the file gives {len(ins)}")
            node = SymNode(op, name, [(nodes[s], i) for s, i in ins], attrs,
                           num_outputs=info.outputs(attrs))
        nodes.append(node)
        outputs_of.append(node.num_outputs)
    heads = doc["heads"]
    if not isinstance(heads, list) or not heads:
        raise KilnError(f"{source}: 'heads' must be a non-empty list")
    return Symbol([(nodes[s], i) for s, i in
                   (_entry(h, len(nodes), outputs_of, f"{source}: heads") for h in heads)])


def read_text(path):
    raw = read_capped(path, "symbol file", MAX_FILE_BYTES)
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise KilnError(f"{path} is not a text symbol file ({exc})") from None
