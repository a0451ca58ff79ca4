"""Running a user-built Symbol: evaluate, infer shapes, differentiate, compile.

One walk (`evaluate`) computes a symbol's nodes with kiln's own functions. Given concrete
arrays it runs eagerly (and records under autograd); given symbolic arrays inside a trace it
builds kiln's graph IR. So `infer_shape` is a trace, `compile` is `kiln.hybridize` of the
walk (the same passes and C backend as a hybridized block), and `grad` nodes differentiate
with the same registry gradient rules as `autograd.backward`.
"""
import contextlib
import warnings

import numpy as _np

from ..._core import autograd
from ..._core.base import KilnError, SymbolicValueError, where_in_user_code
from ..._core import trace
from ..._core.ir import Node
from ..ops import lookup
from ..ops.table import SHAPE_RUN
from ..._core.ndarray import ndarray
from ...npx.io import MAX_TENSOR_ELEMENTS
from ...ops.registry import REGISTRY
from .symbol import BLOCK_OP, KILN_PREFIX, Symbol, SymNode, nodes_of


class MissingInput(KilnError):
    pass


def _call_node(node, arrays):
    where = f"symbol node {node.name!r} ({node.op}): "
    if node.grad_of is not None:
        return _gradient(node, arrays)
    if node.op == BLOCK_OP:      # a Gluon block called on Symbols (block_call.py)
        args = [None if k is None else arrays[k] for k in node.attrs["places"]]
        out = node.attrs["block"](*args)
        if isinstance(out, (list, tuple)):
            raise KilnError(f"{where}{type(node.attrs['block']).__name__} returned {len(out)} "
                            "outputs; a block called on Symbols gives one" + where_in_user_code())
        return out
    try:
        if node.op.startswith(KILN_PREFIX):
            return REGISTRY[node.op[len(KILN_PREFIX):]](*arrays, **node.attrs)
        return lookup(node.op).fn(*arrays, **node.attrs)
    except SymbolicValueError as exc:   # an eager-only op met a trace: shapes come eagerly
        raise SymbolicValueError(where + str(exc)) from None
    except KilnError as exc:
        raise KilnError(where + str(exc)) from None
    except Exception as exc:  # attributes a file or a caller got wrong, met by the op
        raise KilnError(f"{where}bad inputs or attributes ({type(exc).__name__}: "
                        f"{str(exc)[:200]})" + where_in_user_code()) from None


def _hints(node, values):
    """Shapes of the variable inputs MXNet infers from the data input (weights, stats)."""
    if node.is_var or node.op.startswith(KILN_PREFIX) or node.grad_of is not None:
        return {}
    op = lookup(node.op)
    if op.param_shapes is None or not node.inputs:
        return {}
    first = values.get(id(node.inputs[0][0]))
    if first is None:
        return {}
    try:
        shapes = op.param_shapes(node.attrs, tuple(first[node.inputs[0][1]].shape))
        shapes = {k: tuple(int(d) for d in v) for k, v in shapes.items()}
    except Exception as exc:  # attributes missing or of the wrong kind
        raise KilnError(f"symbol node {node.name!r} ({node.op}): cannot infer its weight "
                        f"shapes from attributes {node.attrs} ({type(exc).__name__}: "
                        f"{exc})" + where_in_user_code()) from None
    names = op.input_names(node.attrs)
    return {id(src): shapes[n] for (src, _), n in zip(node.inputs, names) if n in shapes}


def _same_shape(node):
    if node.is_var or node.op.startswith(KILN_PREFIX) or node.grad_of is not None or \
            node.op == BLOCK_OP:
        return False
    return lookup(node.op).same_shape


def evaluate(heads, feed, observe=None):
    """Compute `heads` (a list of (SymNode, index)); feed(var_node, hinted_shape) gives a
    variable's array. Returns the head arrays. A node whose variable has no shape yet waits
    for a later node to infer it (a weight read before the layer that shapes it), as
    MXNet's shape inference runs until nothing changes. observe(node, inputs, outputs), if
    given, sees every op node's arrays (an executor's monitor)."""
    values, learned = {}, {}
    pending = [node for node in nodes_of(heads) if not node.is_var]
    while pending:
        waiting, missing = [], None
        for node in pending:
            if any(not src.is_var and id(src) not in values for src, _ in node.inputs):
                waiting.append(node)
                continue
            try:
                _evaluate_node(node, values, learned, feed, observe)
            except MissingInput as exc:
                waiting.append(node)
                missing = missing or exc
        if len(waiting) == len(pending):
            raise missing or KilnError("symbol evaluation made no progress"
                                       + where_in_user_code())
        pending = waiting
    result = []
    for node, k in heads:
        if node.is_var and id(node) not in values:
            values[id(node)] = [feed(node, learned.get(id(node)))]
        result.append(values[id(node)][k])
    return result


def _unify_inputs(node, values, learned, feed):
    """Give the shapeless variable inputs of a same-shape op the shape of a known input."""
    known = None
    for src, k in node.inputs:
        if src.is_var and id(src) not in values:
            try:
                values[id(src)] = [feed(src, learned.get(id(src)))]
            except MissingInput:
                continue
        known = tuple(values[id(src)][k].shape)
        break
    if known is not None:
        for src, _ in node.inputs:
            if src.is_var and id(src) not in values:
                learned.setdefault(id(src), known)


def _evaluate_node(node, values, learned, feed, observe):
    if _same_shape(node):     # MXNet's ElemwiseShape: a shapeless variable takes a partner's
        _unify_inputs(node, values, learned, feed)
    if node.inputs:
        first, _ = node.inputs[0]
        if first.is_var and id(first) not in values:
            values[id(first)] = [feed(first, learned.get(id(first)))]
    learned.update(_hints(node, values))
    arrays = []
    for src, k in node.inputs:
        if src.is_var and id(src) not in values:
            values[id(src)] = [feed(src, learned.get(id(src)))]
        arrays.append(values[id(src)][k])
    out = _call_node(node, arrays)
    values[id(node)] = list(out) if isinstance(out, (tuple, list)) else [out]
    if observe is not None:
        observe(node, arrays, values[id(node)])


def _as_array(value, name):
    if isinstance(value, ndarray):
        return value
    try:
        return ndarray._wrap(_np.ascontiguousarray(value))
    except Exception:
        raise KilnError(f"the value for {name!r} is not an array ({type(value).__name__})"
                        + where_in_user_code()) from None


def evaluate_eager(symbol, values):
    for name in symbol.list_inputs():
        if name not in values:
            raise KilnError(f"Symbol.eval: no value for variable {name!r}; it needs "
                            f"{symbol.list_inputs()}" + where_in_user_code())
    arrays = {n: _as_array(v, n) for n, v in values.items()}
    check_sizes(symbol, arrays)
    return evaluate(symbol._heads, lambda node, _hint: arrays[node.name])


def check_sizes(symbol, arrays):
    """Before an eager run, a shape-only trace checks every node against kiln's size cap,
    so attributes from a hostile file (tile reps, one_hot depth, ...) cannot allocate
    without bound; once per input signature. Symbolic inputs are checked by their trace."""
    if any(a._node is not None for a in arrays.values()):
        return
    key = tuple(sorted((n, tuple(a.shape), str(a.dtype)) for n, a in arrays.items()))
    checked = symbol.__dict__.setdefault("_sizes_checked", set())
    if key in checked:
        return
    try:
        trace_symbol(symbol, {n: tuple(a.shape) for n, a in arrays.items()},
                     {n: str(a.dtype) for n, a in arrays.items()})
    except SymbolicValueError:
        pass    # an eager-only op (sort, topk): the nodes traced before it were checked
    checked.add(key)


# ---- shapes ------------------------------------------------------------------------------------

def _declared_shape(node):
    shape = node.var_attrs.get("__shape__")
    if isinstance(shape, str):
        from ..ops import parse_attr
        shape = parse_attr(shape)
    if shape is None or any(int(d) <= 0 for d in shape):   # MXNet writes 0 for unknown
        return None
    return tuple(int(d) for d in shape)


def _declared_dtype(node, dtypes):
    from ..ops import _DTYPE_FLAGS
    from ..._core.base import normalize_dtype
    dt = dtypes.get(node.name) or node.var_attrs.get("__dtype__") or "float32"
    try:   # a file's __dtype__ must be one kiln computes in (not object, not a huge void)
        return normalize_dtype(_DTYPE_FLAGS.get(str(dt), dt))
    except KilnError as exc:
        raise KilnError(f"variable {node.name!r}: {exc}") from None


def _input_shape(node, hint, shapes):
    """A variable's shape: given, declared, or inferred from its reader (hint); checked
    against the size cap. None of them is a MissingInput."""
    shape = shapes.get(node.name)
    for fallback in (_declared_shape(node), hint):
        if shape is None:
            shape = fallback
    if shape is None:
        raise MissingInput(f"cannot infer the shape of {node.name!r}; give it, e.g. "
                           f"infer_shape({node.name}=(...))" + where_in_user_code())
    _check_size(node.name, shape)
    return shape


def _shapes_eagerly(symbol, shapes, dtypes=None):
    """trace_symbol's answer for a symbol with an op that computes only eagerly (sort,
    topk, ...): the symbol run on zeros; ({name: input array}, [output arrays])."""
    dtypes = dtypes or {}
    inputs = {}

    def feed(node, hint):
        shape = _input_shape(node, hint, shapes)
        inputs[node.name] = ndarray._wrap(_np.zeros(tuple(shape),
                                                    _declared_dtype(node, dtypes)))
        return inputs[node.name]

    SHAPE_RUN.active = True
    try:
        with autograd._scope(False, False):
            outs = evaluate(symbol._heads, feed)
    finally:
        SHAPE_RUN.active = False
    return inputs, outs


def trace_symbol(symbol, shapes, dtypes=None, training=False):
    """Trace `symbol` with symbolic inputs of the given shapes: ({var name: input Node},
    [output Nodes]). A variable with no shape known or inferable is a MissingInput."""
    dtypes = dtypes or {}
    inputs = {}

    def feed(node, hint):
        shape = _input_shape(node, hint, shapes)
        n = Node("input", (), {}, tuple(shape), _declared_dtype(node, dtypes), name=node.name)
        inputs[node.name] = n
        return ndarray._from_node(n)

    ctx = trace.TraceContext("symbol")
    trace.push(ctx)
    try:
        with autograd._scope(False, training):
            outs = evaluate(symbol._heads, feed)
    finally:
        trace.pop()
        for n in ctx.nodes:       # also when an eager-only op stopped the trace
            _check_size(n.name, n.shape)
    return inputs, [o._node for o in outs]


def _check_size(name, shape):
    size = 1
    for d in shape:
        if not isinstance(d, (int, _np.integer)) or d < 0:
            raise KilnError(f"{name!r}: bad shape {tuple(shape)[:8]}" + where_in_user_code())
        size *= int(d)
    if size > MAX_TENSOR_ELEMENTS:
        raise KilnError(f"{name!r}: shape {tuple(shape)[:8]} has more than "
                        f"{MAX_TENSOR_ELEMENTS} elements (kiln's cap)" + where_in_user_code())


def _shape_kwargs(symbol, args, kwargs):
    shapes = dict(kwargs)
    if args:
        for name, s in zip(symbol.list_arguments(), args):
            if s is not None:
                shapes[name] = s
    return {k: tuple(v) for k, v in shapes.items()}


def output_avals(symbol, shapes, dtypes):
    """[(shape, dtype)] of the symbol's outputs for inputs of these shapes and dtypes."""
    try:
        _, outs = trace_symbol(symbol, shapes, dtypes)
    except SymbolicValueError:
        _, outs = _shapes_eagerly(symbol, shapes, dtypes)
    return [(tuple(o.shape), o.dtype) for o in outs]


def infer_shape(symbol, *args, **kwargs):
    """(argument shapes, output shapes, auxiliary shapes) in MXNet's order; (None, None,
    None) when the given shapes are not enough."""
    try:
        return infer_shape_strict(symbol, *args, **kwargs)
    except MissingInput:
        return None, None, None


def infer_shape_strict(symbol, *args, **kwargs):
    """infer_shape, raising MissingInput (naming the variable) when shapes are missing."""
    shapes = _shape_kwargs(symbol, args, kwargs)
    try:
        inputs, outs = trace_symbol(symbol, shapes)
    except SymbolicValueError:
        inputs, outs = _shapes_eagerly(symbol, shapes)
    return ([inputs[n].shape for n in symbol.list_arguments()],
            [o.shape for o in outs],
            [inputs[n].shape for n in symbol.list_auxiliary_states()])


def infer_type(symbol, *args, **kwargs):
    names = symbol.list_arguments()
    dtypes = dict(zip(names, args)) if args else {}
    dtypes.update(kwargs)
    by_name = {n.name: n for n in nodes_of(symbol._heads) if n.is_var}
    arg_types = [_declared_dtype(by_name[n], dtypes).type for n in names]
    aux_types = [_declared_dtype(by_name[n], dtypes).type
                 for n in symbol.list_auxiliary_states()]
    widest = _np.result_type(*arg_types) if arg_types else _np.dtype("float32")
    return arg_types, [_np.dtype(widest).type] * len(symbol._heads), aux_types


# ---- gradients ---------------------------------------------------------------------------------

def gradient_symbols(symbol, wrt):
    """Seed 001's `D.grad(wrt=[A, B])`: symbols computing d(sum of heads)/d(each of wrt)."""
    names = []
    for w in (wrt if isinstance(wrt, (list, tuple)) else [wrt]):
        names.append(w if isinstance(w, str) else w.name)
    args = symbol.list_inputs()
    for n in names:
        if n not in args:
            raise KilnError(f"Symbol.grad: {n!r} is not an input of the symbol (its inputs: "
                            f"{args})" + where_in_user_code())
    by_name = {n.name: n for n in nodes_of(symbol._heads) if n.is_var}
    node = SymNode("_grad", f"{symbol.name or 'group'}_grad",
                   [(by_name[a], 0) for a in args], num_outputs=len(names),
                   grad_of=(symbol, args, names))
    outs = [Symbol([(node, k)]) for k in range(len(names))]
    return outs


def _gradient(node, arrays):
    symbol, args, names = node.grad_of
    leaves = {}
    for name, a in zip(args, arrays):
        leaf = a._alias()
        leaf._tape = None
        if name in names:
            leaf.attach_grad()
        leaves[name] = leaf
    with autograd.record():
        heads = evaluate(symbol._heads, lambda n, _h: leaves[n.name])
    return tuple(autograd.grad(heads, [leaves[n] for n in names]))


# ---- compiling ---------------------------------------------------------------------------------

class CompiledSymbol:
    """What `sym.compile` returns: call it with named arrays; it runs kiln's optimized
    program (kiln.hybridize of the symbol's walk: same passes, same C backend)."""

    def __init__(self, symbol, backend=None):
        from ...hybrid.cached import HybridFunction
        self.symbol = symbol
        self.names = symbol.list_inputs()
        def symbol(*arrays):     # the traced graph's name
            return self._run(*arrays)
        self._fn = HybridFunction(symbol, backend=backend, strict=True)

    def _run(self, *arrays):
        for name, a in zip(self.names, arrays):
            if a._node is not None and a._node.op == "input":
                a._node.name = name      # the traced graph's inputs carry the symbol's names
        values = dict(zip(self.names, arrays))
        outs = evaluate(self.symbol._heads, lambda n, _h: values[n.name])
        return tuple(outs)

    def _arrays(self, kwargs):
        missing = [n for n in self.names if n not in kwargs]
        extra = [n for n in kwargs if n not in self.names]
        if missing or extra:
            raise KilnError(f"compiled symbol: expected arrays for {self.names}; missing "
                            f"{missing}, unexpected {extra}" + where_in_user_code())
        return [_as_array(kwargs[n], n) for n in self.names]

    def __call__(self, **kwargs):
        with _no_trace_warning():
            return list(self._fn(*self._arrays(kwargs)))

    def graph(self, **kwargs):
        """The optimized kiln Graph this program runs for these inputs."""
        with _no_trace_warning():
            return self._fn.graph(*self._arrays(kwargs))


@contextlib.contextmanager
def _no_trace_warning():
    """The symbol's walk has no user side effects to warn about (capture.py's warning)."""
    from ...graph.capture import KilnTraceWarning
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", KilnTraceWarning)
        yield


def compile_symbols(symbols, backend=None):
    """The symbols (one or a list) compiled together into one program by kiln's passes and
    `backend`, to call with arrays for their arguments."""
    if isinstance(symbols, Symbol):
        symbols = [symbols]
    from .symbol import Group
    return CompiledSymbol(Group(list(symbols)), backend)
