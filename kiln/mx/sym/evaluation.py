"""Running a user-built Symbol: evaluate, infer shapes, differentiate, compile.

One walk (`evaluate`) computes a symbol's nodes with kiln's own functions. Given concrete
arrays it runs eagerly (and records under autograd); given symbolic arrays inside a trace it
builds kiln's graph IR. Shapes are inferred node by node (partial_shapes.py, MXNet's
InferShape with kiln's shape rules), `compile` is `kiln.hybridize` of the
walk (the same passes and C backend as a hybridized block), and `grad` nodes differentiate
with the same registry gradient rules as `autograd.backward`.
"""
import contextlib
import warnings

import numpy as _np

from ..._core import autograd
from ..._core.base import KilnError, SymbolicValueError, where_in_user_code
from ..ops import lookup
from ..ops.partial_shapes import known, unknown_as_minus_one
from ..._core.ndarray import ndarray
from ...ops.registry import REGISTRY
from .partial_shapes import ShapeInference, check_size, has_unknown_attrs
from .symbol import BLOCK_OP, KILN_PREFIX, Symbol, SymNode, nodes_of


class MissingInput(KilnError):
    pass


def _call_node(node, arrays, attrs=None):
    where = f"symbol node {node.name!r} ({node.op}): "
    attrs = node.attrs if attrs is None else attrs
    if node.grad_of is not None:
        return _gradient(node, arrays)
    if node.op == BLOCK_OP:      # a Gluon block called on Symbols (block_call.py)
        args = [None if k is None else arrays[k] for k in attrs["places"]]
        out = attrs["block"](*args)
        if isinstance(out, (list, tuple)):
            raise KilnError(f"{where}{type(attrs['block']).__name__} returned {len(out)} "
                            "outputs; a block called on Symbols gives one" + where_in_user_code())
        return out
    try:
        if node.op.startswith(KILN_PREFIX):
            return REGISTRY[node.op[len(KILN_PREFIX):]](*arrays, **attrs)
        return lookup(node.op).fn(*arrays, **attrs)
    except SymbolicValueError as exc:   # an eager-only op met a trace: shapes come eagerly
        raise SymbolicValueError(where + str(exc)) from None
    except KilnError as exc:
        raise KilnError(where + str(exc)) from None
    except Exception as exc:  # attributes a file or a caller got wrong, met by the op
        raise KilnError(f"{where}bad inputs or attributes ({type(exc).__name__}: "
                        f"{str(exc)[:200]})" + where_in_user_code()) from None


def evaluate(heads, feed, observe=None):
    """Compute `heads` (a list of (SymNode, index)); feed(var_node) gives a variable's
    array. Returns the head arrays. A creation node whose shape has sizes left for inference
    (sym.ones(shape=(-1, 3))) is given the shape its readers imply (partial_shapes.py).
    observe(node, inputs, outputs), if given, sees every op node's arrays (an executor's
    monitor)."""
    nodes = nodes_of(heads)
    values = {id(n): [feed(n)] for n in nodes if n.is_var}
    attrs_of = (lambda n: n.attrs)
    if has_unknown_attrs(nodes):
        shapes = {n.name: tuple(values[id(n)][0].shape) for n in nodes if n.is_var}
        dtypes = {n.name: values[id(n)][0].dtype for n in nodes if n.is_var}
        attrs_of = shape_inference(heads, shapes, dtypes).attrs_of
    for node in nodes:
        if node.is_var:
            continue
        arrays = [values[id(src)][k] for src, k in node.inputs]
        out = _call_node(node, arrays, attrs_of(node))
        values[id(node)] = list(out) if isinstance(out, (tuple, list)) else [out]
        if observe is not None:
            observe(node, arrays, values[id(node)])
    return [values[id(node)][k] for node, k in heads]


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
    return evaluate(symbol._heads, lambda node: arrays[node.name])


def check_sizes(symbol, arrays):
    """Before an eager run, shape inference checks every node against kiln's size cap, so
    attributes from a hostile file (tile reps, one_hot depth, ...) cannot allocate without
    bound; once per input signature. Symbolic inputs are checked by their trace."""
    if any(a._node is not None for a in arrays.values()):
        return
    key = tuple(sorted((n, tuple(a.shape), str(a.dtype)) for n, a in arrays.items()))
    checked = symbol.__dict__.setdefault("_sizes_checked", set())
    if key in checked:
        return
    shape_inference(symbol._heads, {n: tuple(a.shape) for n, a in arrays.items()},
               {n: str(a.dtype) for n, a in arrays.items()})
    checked.add(key)


# ---- shapes ------------------------------------------------------------------------------------

def _declared_shape(node):
    """A variable's declared __shape__, unknowns as -1 (None: no rank known). A 0 is
    unknown in both shape modes here: Gluon writes its deferred sizes as 0."""
    shape = node.var_attrs.get("__shape__")
    if isinstance(shape, str):
        from ..ops import parse_attr
        shape = parse_attr(shape)
    if shape is None:
        return None
    shape = unknown_as_minus_one(shape)
    return None if shape is None else tuple(d if d > 0 else -1 for d in shape)


def _declared_dtype(node, dtypes):
    from ..ops import _DTYPE_FLAGS
    from ..._core.base import normalize_dtype
    dt = dtypes.get(node.name) or node.var_attrs.get("__dtype__") or "float32"
    try:   # a file's __dtype__ must be one kiln computes in (not object, not a huge void)
        return normalize_dtype(_DTYPE_FLAGS.get(str(dt), dt))
    except KilnError as exc:
        raise KilnError(f"variable {node.name!r}: {exc}") from None


def shape_inference(heads, shapes, dtypes=None):
    """The symbol's shapes and dtypes inferred from variable shapes (MXNet's unknowns as
    -1) and dtypes; partial_shapes.ShapeInference after its sweeps."""
    dtypes = dtypes or {}
    inference = ShapeInference(heads, shapes, _call_node,
                               lambda node: _declared_dtype(node, dtypes), _declared_shape)
    for node in inference.nodes:
        if node.is_var and known(inference.shape(node)):
            check_size(node.name, inference.shape(node))
    return inference.run()


def _shape_kwargs(symbol, args, kwargs):
    shapes = dict(kwargs)
    if args:
        for name, s in zip(symbol.list_arguments(), args):
            if s is not None:
                shapes[name] = s
    return {k: unknown_as_minus_one(v) for k, v in shapes.items()}


def _var_shapes(symbol, inference):
    by_name = {n.name: n for n in inference.nodes if n.is_var}
    return ([inference.shape(by_name[n]) for n in symbol.list_arguments()],
            [inference.shape(node, k) for node, k in symbol._heads],
            [inference.shape(by_name[n]) for n in symbol.list_auxiliary_states()])


def output_avals(symbol, shapes, dtypes):
    """[(shape, dtype)] of the symbol's outputs for inputs of these shapes and dtypes."""
    inference = shape_inference(symbol._heads, shapes, dtypes)
    return [(inference.shape(node, k), inference.dtype(node, k)) for node, k in symbol._heads]


def infer_shape(symbol, *args, **kwargs):
    """(argument shapes, output shapes, auxiliary shapes) in MXNet's order; (None, None,
    None) when the given shapes are not enough."""
    try:
        return infer_shape_strict(symbol, *args, **kwargs)
    except MissingInput:
        return None, None, None


def infer_shape_strict(symbol, *args, **kwargs):
    """infer_shape, raising MissingInput (naming the variable) when shapes are missing."""
    inference = shape_inference(symbol._heads, _shape_kwargs(symbol, args, kwargs))
    args_, outs, aux = _var_shapes(symbol, inference)
    names = symbol.list_arguments() + symbol.list_auxiliary_states()
    for name, shape in zip(names, args_ + aux):
        if not known(shape):
            raise MissingInput(f"cannot infer the shape of {name!r}; give it, e.g. "
                               f"infer_shape({name}=(...))" + where_in_user_code())
    if not all(known(s) for s in outs):
        raise MissingInput("cannot infer the shapes of the outputs from the given shapes"
                           + where_in_user_code())
    return args_, outs, aux


def infer_shape_partial(symbol, *args, **kwargs):
    """What the given shapes say of every argument, output and auxiliary state, unknowns as
    MXNet writes them: 0 and () in legacy shape mode, -1 and None in NumPy shape mode."""
    from ..util import is_np_shape
    inference = shape_inference(symbol._heads, _shape_kwargs(symbol, args, kwargs))

    def written(shape):
        if is_np_shape():
            return shape
        return () if shape is None else tuple(max(d, 0) for d in shape)
    return tuple([written(s) for s in group] for group in _var_shapes(symbol, inference))


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
        heads = evaluate(symbol._heads, lambda n: leaves[n.name])
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
        outs = evaluate(self.symbol._heads, lambda n: values[n.name])
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
