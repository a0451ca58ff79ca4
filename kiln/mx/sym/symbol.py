"""The symbol a user builds (MXNet 1.x `mx.sym`): a shape-free expression graph.

A Symbol names outputs of SymNodes. A node is a variable (MXNet's op "null") or an MXNet op
from kiln/mx/ops, or a kiln registry primitive ("kiln:matmul", what a kiln export
holds). Shapes are not needed to build one; they are inferred when it is given shapes or
values (evaluation.py), by tracing the node functions into kiln's graph IR, the same graph
a hybridized block traces to.
"""
from ..._core.base import KilnError, postorder, where_in_user_code
from ..ops import find, lookup
from ..attribute import scoped_attrs
from ..name import auto_name, scoped_name

KILN_PREFIX = "kiln:"
BLOCK_OP = KILN_PREFIX + "_gluon_block"     # a Gluon block called on Symbols (block_call.py)


class SymNode:
    __slots__ = ("op", "name", "inputs", "attrs", "var_attrs", "num_outputs", "grad_of")

    def __init__(self, op, name, inputs=(), attrs=None, var_attrs=None, num_outputs=1,
                 grad_of=None):
        self.op = op                        # None for a variable
        self.name = name
        self.inputs = list(inputs)          # (SymNode, output index)
        self.attrs = dict(attrs or {})      # typed op attributes
        self.var_attrs = dict(var_attrs or {})   # __shape__, __dtype__, __init__, ...
        self.num_outputs = num_outputs
        self.grad_of = grad_of              # (heads Symbol, wrt names) of a gradient node

    @property
    def is_var(self):
        return self.op is None

    def output_name(self, k):
        """MXNet's name of output k: <name>_output, <name>_output<k>, or the op's own
        (RNN's <name>_state_output)."""
        if self.num_outputs == 1:
            return f"{self.name}_output"
        if not self.op.startswith(KILN_PREFIX) and self.grad_of is None:
            names = lookup(self.op).output_names
            if names is not None:
                return f"{self.name}_{names(self.attrs)[k]}"
        return f"{self.name}_output{k}"

    def aux_inputs(self):
        """Indices of the inputs that are auxiliary states (BatchNorm's moving stats)."""
        if self.is_var or self.op.startswith(KILN_PREFIX) or self.grad_of is not None:
            return set()
        op = lookup(self.op)
        names, aux = op.input_names(self.attrs), op.aux_names(self.attrs)
        return {k for k, n in enumerate(names) if n in aux and k < len(self.inputs)}


def _head_node(made):
    return made[0]


def _head_index(made, k):
    """The output index of a copied node's output k (a replacement symbol's own index)."""
    return k if made[1] is None else made[1]


def nodes_of(heads):
    return postorder([n for n, _ in heads], lambda n: [i for i, _ in n.inputs])


class Symbol:
    """One or more outputs of a symbolic program (MXNet's Symbol)."""

    __array_priority__ = 200.0

    def __init__(self, heads):
        self._heads = list(heads)           # [(SymNode, output index)]

    # ---- identity ----------------------------------------------------------------------------
    @property
    def name(self):
        if len(self._heads) != 1:
            return None
        return self._heads[0][0].name

    def __repr__(self):
        if len(self._heads) == 1:
            return f"<Symbol {self.name}>"
        return f"<Symbol group [{', '.join(self.list_outputs())}]>"

    def __iter__(self):
        return (Symbol([h]) for h in self._heads)

    def __len__(self):
        return len(self._heads)

    def __getitem__(self, index):
        if isinstance(index, str):
            for k, name in enumerate(self.list_outputs()):
                if name == index:
                    return Symbol([self._heads[k]])
            raise KilnError(f"symbol has no output named {index!r}; it has "
                            f"{self.list_outputs()}")
        return Symbol([self._heads[index]])

    def attr(self, key):
        node = self._heads[0][0]
        value = node.var_attrs.get(key, node.attrs.get(key))
        return None if value is None else str(value)

    def list_attr(self):
        node = self._heads[0][0]
        return {**{k: str(v) for k, v in node.attrs.items()},
                **{k: str(v) for k, v in node.var_attrs.items()}}

    # ---- inspecting --------------------------------------------------------------------------
    def _nodes(self):
        return nodes_of(self._heads)

    def _aux_ids(self):
        aux = set()
        for n in self._nodes():
            for k in n.aux_inputs():
                aux.add(id(n.inputs[k][0]))
        return aux

    def list_arguments(self):
        aux = self._aux_ids()
        return [n.name for n in self._nodes() if n.is_var and id(n) not in aux]

    def list_auxiliary_states(self):
        aux = self._aux_ids()
        return [n.name for n in self._nodes() if n.is_var and id(n) in aux]

    def list_inputs(self):
        return [n.name for n in self._nodes() if n.is_var]

    def list_outputs(self):
        out = []
        for node, k in self._heads:
            out.append(node.name if node.is_var else node.output_name(k))
        return out

    def get_internals(self):
        heads = []
        for n in self._nodes():
            heads.extend((n, k) for k in range(n.num_outputs))
        return Symbol(heads)

    def get_children(self):
        node = self._heads[0][0]
        return Symbol(list(node.inputs)) if node.inputs else None

    # ---- arithmetic ---------------------------------------------------------------------------
    def _binary(self, other, op, scalar_op, reverse=False):
        if isinstance(other, Symbol):
            a, b = (other, self) if reverse else (self, other)
            return apply_op(op, [a, b], {})
        if isinstance(other, (int, float)):
            return apply_op(scalar_op, [self], {"scalar": float(other)})
        return NotImplemented

    def __add__(self, o):
        return self._binary(o, "elemwise_add", "_plus_scalar")

    __radd__ = __add__

    def __sub__(self, o):
        return self._binary(o, "elemwise_sub", "_minus_scalar")

    def __rsub__(self, o):
        return self._binary(o, "elemwise_sub", "_rminus_scalar", reverse=True)

    def __mul__(self, o):
        return self._binary(o, "elemwise_mul", "_mul_scalar")

    __rmul__ = __mul__

    def __truediv__(self, o):
        return self._binary(o, "elemwise_div", "_div_scalar")

    def __rtruediv__(self, o):
        return self._binary(o, "elemwise_div", "_rdiv_scalar", reverse=True)

    def __pow__(self, o):
        return self._binary(o, "_power", "_power_scalar")

    def __rpow__(self, o):
        return self._binary(o, "_power", "_rpower_scalar", reverse=True)

    def __mod__(self, o):
        return self._binary(o, "broadcast_mod", "_mod_scalar")

    def __rmod__(self, o):
        return self._binary(o, "broadcast_mod", "_rmod_scalar", reverse=True)

    def __neg__(self):
        return apply_op("negative", [self], {})

    def __abs__(self):
        return apply_op("abs", [self], {})

    # comparisons build 0/1 nodes as MXNet's do; a Symbol still hashes by identity
    __hash__ = object.__hash__

    def __eq__(self, o):
        return self._binary(o, "broadcast_equal", "_equal_scalar")

    def __ne__(self, o):
        return self._binary(o, "broadcast_not_equal", "_not_equal_scalar")

    def __gt__(self, o):
        return self._binary(o, "broadcast_greater", "_greater_scalar")

    def __ge__(self, o):
        return self._binary(o, "broadcast_greater_equal", "_greater_equal_scalar")

    def __lt__(self, o):
        return self._binary(o, "broadcast_lesser", "_lesser_scalar")

    def __le__(self, o):
        return self._binary(o, "broadcast_lesser_equal", "_lesser_equal_scalar")

    def __bool__(self):
        from ..base import NotImplementedForSymbol     # MXNet's error; a KilnError too
        raise NotImplementedForSymbol(self.__bool__, "bool")

    # ---- composing ------------------------------------------------------------------------
    def __call__(self, *args, **kwargs):
        """A copy with variables replaced: `net(data=other)` or positionally in
        list_arguments() order (MXNet's compose); `name=` renames the output node."""
        name = kwargs.pop("name", None)
        given = dict(zip(self.list_arguments(), args))
        given.update(kwargs)
        for key, value in given.items():
            if not isinstance(value, Symbol) or len(value._heads) != 1:
                raise KilnError(f"Symbol compose: {key!r} must be a Symbol of one output"
                                + where_in_user_code())
        copies = {}

        def copy(node):
            if id(node) in copies:
                return copies[id(node)]
            if node.is_var and node.name in given:
                made = given[node.name]._heads[0]
            elif node.is_var:
                made = (node, 0)
            else:
                twin = SymNode(node.op, node.name, [], node.attrs, node.var_attrs,
                               node.num_outputs, node.grad_of)
                twin.inputs = [(_head_node(copy(src)), _head_index(copy(src), k))
                               for src, k in node.inputs]
                made = (twin, None)
            copies[id(node)] = made
            return made

        heads = []
        for node, k in self._heads:
            made = copy(node)
            heads.append((made[0], k if made[1] is None else made[1]))
        if name is not None and len(heads) == 1 and not heads[0][0].is_var:
            heads[0][0].name = name
        return Symbol(heads)

    def _gen_atomic_symbol(self):
        """The output node's op alone, its inputs fresh variables (MXNet's helper)."""
        node = self._heads[0][0]
        if node.is_var:
            return Symbol([(SymNode(None, node.name, var_attrs=node.var_attrs), 0)])
        info = lookup(node.op) if not node.op.startswith(KILN_PREFIX) else None
        names = (info.input_names(node.attrs) if info is not None and not info.variadic
                 else [f"arg{k}" for k in range(len(node.inputs))])
        inputs = [(SymNode(None, names[k] if k < len(names) else f"arg{k}"), 0)
                  for k in range(len(node.inputs))]
        atom = SymNode(node.op, node.name, inputs, node.attrs, num_outputs=node.num_outputs)
        return Symbol([(atom, k) for k in range(node.num_outputs)])

    # ---- methods MXNet puts on Symbol ---------------------------------------------------------
    def reshape(self, *shape, **kw):
        shape = kw.pop("shape", shape[0] if len(shape) == 1 else shape)
        return apply_op("Reshape", [self], {"shape": tuple(shape), **kw})

    def flatten(self):
        return apply_op("Flatten", [self], {})

    def _no_value(self, what):
        raise KilnError(f"Symbol {self.name!r} has no {what} before it is bound: shapes "
                        "come from infer_shape/bind. To get a Gluon block's graph as a "
                        "Symbol, call sym.from_block(net, example_input) instead of "
                        "net(symbol)" + where_in_user_code())

    shape = property(lambda self: self._no_value("shape"))
    dtype = property(lambda self: self._no_value("dtype"))
    ndim = property(lambda self: self._no_value("ndim"))

    def __getattr__(self, name):
        # sym.relu(), sym.sum(axis=1), ... : the MXNet ops as methods
        if name.startswith("_") or find(name) is None:
            raise AttributeError(name)
        return lambda *a, **kw: call_op(name, (self,) + a, kw)

    # ---- running, saving, differentiating: see evaluation.py and serialization.py ----------
    def tojson(self):
        from .serialization import to_json
        return to_json(self)

    def save(self, fname, remove_amp_cast=True):
        from .serialization import save
        save(self, fname)

    def infer_shape(self, *args, **kwargs):
        from .evaluation import infer_shape
        return infer_shape(self, *args, **kwargs)

    def infer_shape_partial(self, *args, **kwargs):
        from .evaluation import infer_shape_partial
        return infer_shape_partial(self, *args, **kwargs)

    def infer_type(self, *args, **kwargs):
        from .evaluation import infer_type
        return infer_type(self, *args, **kwargs)

    def infer_type_partial(self, *args, **kwargs):
        from .dtypes import infer_type_partial
        return infer_type_partial(self, *args, **kwargs)

    def eval(self, ctx=None, **kwargs):
        from .evaluation import evaluate_eager
        return evaluate_eager(self, kwargs)

    def bind(self, ctx=None, args=None, args_grad=None, grad_req="write", aux_states=None,
             **_):
        from .executor import Executor
        return Executor.bind(self, args, args_grad, grad_req, aux_states)

    def simple_bind(self, ctx=None, grad_req="write", type_dict=None, **shapes):
        from .executor import Executor
        return Executor.simple_bind(self, grad_req, type_dict, shapes)

    def grad(self, wrt):
        from .evaluation import gradient_symbols
        return gradient_symbols(self, wrt)

    def compile(self, backend=None):
        from .evaluation import compile_symbols
        return compile_symbols([self], backend)


# ---- building ----------------------------------------------------------------------------

def var(name, attr=None, shape=None, lr_mult=None, wd_mult=None, dtype=None, init=None,
        stype=None, **kwargs):
    """A symbolic variable named `name`, with an optional shape, dtype, initializer and
    learning-rate and weight-decay multipliers kept as attributes; `Variable` is the same."""
    if not isinstance(name, str):
        raise KilnError(f"sym.var: the name must be a string, got {type(name).__name__}"
                        + where_in_user_code())
    va = scoped_attrs(attr)
    if shape is not None:       # an int is a shape of one dimension, as MXNet reads it
        va["__shape__"] = (int(shape),) if isinstance(shape, int) else tuple(shape)
    if dtype is not None:
        va["__dtype__"] = dtype if isinstance(dtype, str) else __import__("numpy").dtype(
            dtype).name
    if init is not None:
        va["__init__"] = init if isinstance(init, str) else init.dumps()
    if stype is not None:       # MXNet's attribute: the storage type's id, as a string
        va["__storage_type__"] = str(STORAGE_TYPE_IDS[stype])
    if lr_mult is not None:
        va["__lr_mult__"] = lr_mult
    if wd_mult is not None:
        va["__wd_mult__"] = wd_mult
    for key, value in kwargs.items():      # MXNet keeps __layout__ and the like as attributes
        if key.startswith("__") and key.endswith("__"):
            va[key] = str(value)
    return Symbol([(SymNode(None, name, var_attrs=va), 0)])


Variable = var
STORAGE_TYPE_IDS = {"default": 0, "row_sparse": 1, "csr": 2}


def Group(symbols):
    """One Symbol whose outputs are the outputs of all `symbols`, in order."""
    heads = []
    for s in symbols:
        heads.extend(s._heads)
    return Symbol(heads)


# the initializer MXNet gives an op's variable input that has none (its ops'
# FSetInputVarAttrOnCompose): (op, input name) -> __init__
_INPUT_VAR_INIT = {("LeakyReLU", "gamma"): '["constant", {"value": 0.25}]'}


def apply_op(op, inputs, attrs, name=None, user_attr=None, name_is_final=False):
    """A node of MXNet op `op` over input Symbols (named through kiln/mx/name.py's scope)."""
    info = lookup(op)
    heads = []
    names = info.input_names(attrs) if not info.variadic else []
    for k, s in enumerate(inputs):
        if len(s._heads) != 1:
            raise KilnError(f"{op}: an input is a group of {len(s._heads)} outputs; pass "
                            "one output" + where_in_user_code())
        heads.append(s._heads[0])
        node = s._heads[0][0]
        init = _INPUT_VAR_INIT.get((op, names[k] if k < len(names) else None))
        if init is not None and node.is_var and "__init__" not in node.var_attrs:
            node.var_attrs["__init__"] = init
    if not name_is_final:
        name = scoped_name(name, op.lower().lstrip("_"))
    node = SymNode(op, name, heads, attrs, var_attrs=scoped_attrs(user_attr),
                   num_outputs=info.outputs(attrs))
    return Symbol([(node, k) for k in range(node.num_outputs)])


def call_op(op_name, args, kwargs):
    """`sym.FullyConnected(data=x, num_hidden=8, name='fc1')`: named inputs become nodes,
    missing weight inputs become variables named `{name}_{input}` as MXNet makes them."""
    info = lookup(op_name)
    kwargs = dict(kwargs)
    name = kwargs.pop("name", None)
    user_attr = kwargs.pop("attr", None)
    if info.variadic:
        inputs = [a for a in args if isinstance(a, Symbol)]
        attrs = {k: v for k, v in kwargs.items()}
        return apply_op(op_name, inputs, attrs, name, user_attr)
    order = info.input_names(kwargs)
    attrs = {k: v for k, v in kwargs.items() if k not in order}
    named = {k: v for k, v in kwargs.items() if k in order}
    extra = _attribute_names(info, order)
    for k, a in enumerate(args):
        if k >= len(order) and a is None:    # Convolution(x, w, None, no_bias=True)
            continue
        if k >= len(order) and not isinstance(a, Symbol) and k - len(order) < len(extra):
            attrs.setdefault(extra[k - len(order)], a)   # depth_to_space(x, 2): block_size
            continue
        if k >= len(order):
            raise KilnError(f"{op_name}: takes inputs {order}, got {len(args)} positional "
                            "arguments" + where_in_user_code())
        named[order[k]] = a
    name = scoped_name(name, op_name.lower().lstrip("_"))
    inputs = []
    for k, in_name in enumerate(order):
        value = named.get(in_name)
        if value is None:           # MXNet makes a variable for every input not given,
            value = var(f"{name}_{in_name}", lr_mult=attrs.get("lr_mult"),  # which takes
                        wd_mult=attrs.get("wd_mult"))                     # the op's mults
        elif isinstance(value, (int, float)):
            raise KilnError(f"{op_name}: input {in_name!r} must be a Symbol, got "
                            f"{value!r}" + where_in_user_code())
        inputs.append(value)
    return apply_op(op_name, inputs, attrs, name, user_attr, name_is_final=True)


def _attribute_names(info, inputs):
    """The op function's parameters after its inputs, in order: MXNet's generated op
    functions take attributes positionally after the inputs."""
    import inspect
    try:
        params = inspect.signature(info.fn).parameters.values()
    except (TypeError, ValueError):
        return []
    return [p.name for p in params if p.kind is p.POSITIONAL_OR_KEYWORD
            and p.name not in inputs and p.name not in info.inputs]


def Constant(value, name=None):
    """Seed 001's `Constant(1)`: a scalar or array constant (kept in the symbol's attrs)."""
    import numpy as np
    arr = np.asarray(value, dtype="float32")
    node = SymNode("_kiln_constant", name or auto_name("constant"),
                   attrs={"value": arr.tolist(), "shape": arr.shape})
    return Symbol([(node, 0)])
