"""MXNet 1.x's `mx.operator`: operators written in Python (CustomOp, CustomOpProp).

    class Sigmoid(mx.operator.CustomOp):
        def forward(self, is_train, req, in_data, out_data, aux):
            self.assign(out_data[0], req[0], 1 / (1 + mx.nd.exp(-in_data[0])))
        def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
            y = out_data[0]
            self.assign(in_grad[0], req[0], out_grad[0] * y * (1 - y))

    @mx.operator.register("sigmoid")
    class SigmoidProp(mx.operator.CustomOpProp):
        def create_operator(self, ctx, shapes, dtypes):
            return Sigmoid()

    y = mx.nd.Custom(x, op_type="sigmoid")          # records a gradient under autograd

Importing this module adds `Custom` to the MXNet ops (kiln/mx/ops), so `nd.Custom`,
`F.Custom` in an eager hybrid_forward and `sym.Custom` (building a symbol) resolve. The
operator runs on concrete arrays, as MXNet runs it on the CPU: a hybridized block that
calls one runs eagerly (kiln warns), and a Symbol/Module cannot execute one (clear error).
Prop keyword arguments arrive as strings, as in MXNet.
"""
import warnings

from .._core import autograd
from .._core.base import KilnError, SymbolicValueError, where_in_user_code
from .ops import OPS, MXOp

_REGISTRY = {}


class CustomOp:
    """The computation: forward fills out_data, backward fills in_grad (use assign)."""

    def forward(self, is_train, req, in_data, out_data, aux):
        raise NotImplementedError

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        raise NotImplementedError

    def assign(self, dst, req, src):
        """Write src into dst as `req` says: 'write'/'inplace', 'add', or 'null' (skip)."""
        if req == "null":
            return
        if req in ("write", "inplace"):
            dst[:] = src
        elif req == "add":
            dst[:] += src
        else:
            raise KilnError(f"CustomOp.assign: req must be 'write', 'inplace', 'add' or "
                            f"'null', got {req!r}")


class CustomOpProp:
    """The description: inputs, outputs, shapes and types, and the operator to create."""

    def __init__(self, need_top_grad=True):
        self.need_top_grad_ = need_top_grad

    def list_arguments(self):
        return ["data"]

    def list_outputs(self):
        return ["output"]

    def list_auxiliary_states(self):
        return []

    def infer_shape(self, in_shape):
        n_out, n_aux = len(self.list_outputs()), len(self.list_auxiliary_states())
        return in_shape, [in_shape[0]] * n_out, [in_shape[0]] * n_aux

    def infer_type(self, in_type):
        n_out, n_aux = len(self.list_outputs()), len(self.list_auxiliary_states())
        return in_type, [in_type[0]] * n_out, [in_type[0]] * n_aux

    def infer_storage_type(self, in_stype):
        return in_stype, ["default"] * len(self.list_outputs()), \
            ["default"] * len(self.list_auxiliary_states())

    def declare_backward_dependency(self, out_grad, in_data, out_data):
        return (out_grad if self.need_top_grad_ else []) + in_data + out_data

    def create_operator(self, ctx, in_shapes, in_dtypes):
        raise NotImplementedError


class PythonOp:
    """MXNet's deprecated base of operators written in Python (use CustomOp): forward
    (in_data, out_data) and backward (out_grad, in_data, out_data, in_grad) fill lists of
    arrays in place; the defaults are the identity and a gradient of ones."""

    def __init__(self, need_top_grad=True):
        self.need_top_grad_ = need_top_grad
        warnings.warn("PythonOp has been deprecated. Please use CustomOp")

    def __call__(self, *args, **kwargs):
        return self.get_symbol(*args, **kwargs)

    def get_symbol(self, *args, **kwargs):
        raise NotImplementedError("Must override this")

    def forward(self, in_data, out_data):
        out_data[0][:] = in_data[0]

    def backward(self, out_grad, in_data, out_data, in_grad):
        in_grad[0][:] = 1.0

    def infer_shape(self, in_shape):
        return in_shape, [in_shape[0]]

    def list_outputs(self):
        return ["output"]

    def list_arguments(self):
        return ["data"]

    def need_top_grad(self):
        return self.need_top_grad_


class NumpyOp(PythonOp):
    """A PythonOp computing on NumPy arrays: get_symbol(*symbols, name=...) makes its node
    (a Custom op of a registration private to this instance)."""

    def __init__(self, need_top_grad=True):
        super().__init__(need_top_grad)
        warnings.warn("NumpyOp has been deprecated. Please use CustomOp")

    def get_symbol(self, *args, **kwargs):
        from .sym import Custom
        op_type = f"_numpy_op_{id(self)}"
        if op_type not in _REGISTRY:
            _REGISTRY[op_type] = type("NumpyOpProp", (_NumpyOpProp,), {"numpy_op": self})
        return Custom(*args, op_type=op_type, **kwargs)


class _NumpyOpProp(CustomOpProp):
    numpy_op = None

    def __init__(self):
        super().__init__(self.numpy_op.need_top_grad())

    def list_arguments(self):
        return self.numpy_op.list_arguments()

    def list_outputs(self):
        return self.numpy_op.list_outputs()

    def infer_shape(self, in_shape):
        ins, outs = self.numpy_op.infer_shape(in_shape)
        return ins, outs, []

    def create_operator(self, ctx, in_shapes, in_dtypes):
        return _NumpyRun(self.numpy_op)


class _NumpyRun(CustomOp):
    """Runs a NumpyOp on NumPy copies of the arrays and writes its results back."""

    def __init__(self, numpy_op):
        self.numpy_op = numpy_op

    def _write(self, targets, reqs, values):
        for target, req, value in zip(targets, reqs, values):
            self.assign(target, req, _zeros(value.shape, target.dtype) + value)

    def forward(self, is_train, req, in_data, out_data, aux):
        outs = [o.asnumpy().copy() for o in out_data]
        self.numpy_op.forward(in_data=[x.asnumpy() for x in in_data], out_data=outs)
        self._write(out_data, req, outs)

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        grads = [g.asnumpy().copy() for g in in_grad]
        self.numpy_op.backward(out_grad=[g.asnumpy() for g in out_grad],
                               in_data=[x.asnumpy() for x in in_data],
                               out_data=[o.asnumpy() for o in out_data], in_grad=grads)
        self._write(in_grad, req, grads)


def register(reg_name):
    """Class decorator: make a CustomOpProp usable as Custom(..., op_type=reg_name)."""
    def wrap(prop_cls):
        if not (isinstance(prop_cls, type) and issubclass(prop_cls, CustomOpProp)):
            raise KilnError(f"operator.register({reg_name!r}): expected a CustomOpProp "
                            f"subclass, got {prop_cls!r}")
        _REGISTRY[reg_name] = prop_cls
        return prop_cls
    return wrap


def get_all_registered_operators():
    """The operator names, sorted: MXNet's (every name of kiln's MXNet op table, as MXNet
    lists its backend's) and the custom operators registered with `mx.operator.register`."""
    return sorted(set(OPS) | set(_REGISTRY))


def _is_input(value):
    import numpy as _np
    from .._core.ndarray import ndarray
    from .sym.symbol import Symbol
    return isinstance(value, (ndarray, _np.ndarray, Symbol))


def _prop(attrs):
    """The registered prop of attrs['op_type'], made with the other attributes (as text)."""
    attrs = {k: v for k, v in attrs.items() if not _is_input(v)}
    op_type = attrs.get("op_type")
    if op_type not in _REGISTRY:
        raise KilnError(f"Custom: op_type {op_type!r} is not registered (registered: "
                        f"{sorted(_REGISTRY)}); decorate its CustomOpProp with "
                        f"mx.operator.register" + where_in_user_code())
    kwargs = {k: str(v) for k, v in attrs.items() if k != "op_type"}
    return _REGISTRY[op_type](**kwargs)


def _zeros(shape, dtype):
    from .. import np as knp
    return knp.zeros(tuple(shape), dtype=dtype)


class _Run(autograd.Function):
    """One call of a custom operator, differentiable through its backward()."""

    def __init__(self, op, prop, n_args, out_shapes, out_types):
        super().__init__()
        self.op, self.prop, self.n_args = op, prop, n_args
        self.out_shapes, self.out_types = out_shapes, out_types

    def forward(self, *arrays):
        in_data, aux = list(arrays[:self.n_args]), list(arrays[self.n_args:])
        out_data = [_zeros(s, t) for s, t in zip(self.out_shapes, self.out_types)]
        try:
            self.op.forward(is_train=autograd.is_training(), req=["write"] * len(out_data),
                            in_data=in_data, out_data=out_data, aux=aux)
        except KilnError:
            raise
        except Exception as exc:    # MXNet reports an error in the user's forward as its own
            raise KilnError(f"Custom op forward failed: {type(exc).__name__}: {exc}"
                            + where_in_user_code()) from exc
        self.save_for_backward(in_data, out_data, aux)
        return out_data[0] if len(out_data) == 1 else tuple(out_data)

    def backward(self, *out_grad):
        in_data, out_data, aux = self.saved_tensors
        in_grad = [_zeros(x.shape, x.dtype) for x in in_data]
        self.op.backward(req=["write"] * len(in_grad), out_grad=list(out_grad),
                         in_data=in_data, out_data=out_data, in_grad=in_grad, aux=aux)
        return in_grad + [_zeros(a.shape, a.dtype) for a in aux]


def custom(*args, **kwargs):
    """MXNet's Custom op: run the registered operator `op_type` on the inputs."""
    from .._core.ndarray import as_array
    attrs = {k: v for k, v in kwargs.items() if not _is_input(v)}
    prop = _prop(attrs)
    names = list(prop.list_arguments()) + list(prop.list_auxiliary_states())
    inputs = list(args) + [kwargs[n] for n in names[len(args):] if n in kwargs]
    if len(inputs) != len(names):
        raise KilnError(f"Custom({attrs.get('op_type')!r}): takes inputs {names}, got "
                        f"{len(inputs)}" + where_in_user_code())
    inputs = [as_array(x) for x in inputs]
    if any(x._node is not None for x in inputs):
        raise SymbolicValueError(
            f"Custom op {attrs.get('op_type')!r} needs a concrete value: it runs Python on "
            "arrays, so it cannot be part of a compiled graph (a hybridized block calling "
            "it runs eagerly; a Symbol or Module cannot execute it)" + where_in_user_code())
    n_args = len(prop.list_arguments())
    # a prop's infer_shape / infer_type may leave out the auxiliary part (MXNet allows it)
    in_shapes, out_shapes = prop.infer_shape([list(x.shape) for x in inputs[:n_args]])[:2]
    out_types = prop.infer_type([x.dtype for x in inputs[:n_args]])[1]
    from .._core.context import cpu
    op = prop.create_operator(cpu(), in_shapes, [x.dtype for x in inputs[:n_args]])
    return _Run(op, prop, n_args, out_shapes, out_types)(*inputs)


class _CustomOp(MXOp):
    """The `Custom` entry of the MXNet op table: its inputs come from the prop."""

    def input_names(self, attrs):
        prop = _prop(attrs)
        return list(prop.list_arguments()) + list(prop.list_auxiliary_states())

    def aux_names(self, attrs):
        return list(_prop(attrs).list_auxiliary_states())


def _custom_shapes(attrs, data):
    """The shapes a one-input Custom op's prop infers for its auxiliary states."""
    prop = _prop(attrs)
    if len(prop.list_arguments()) != 1:
        return {}
    shapes = prop.infer_shape([list(data)])
    aux = shapes[2] if len(shapes) > 2 else []
    return dict(zip(prop.list_auxiliary_states(), (tuple(s) for s in aux)))


OPS["Custom"] = _CustomOp("Custom", custom, param_shapes=_custom_shapes)
