"""MXNet 1.x's Executor: a symbol bound to argument, gradient and auxiliary arrays.

forward(is_train=True) records the symbol's walk (evaluation.evaluate) on kiln's autograd
tape; backward() takes the gradients with the registry's rules and writes them into
grad_dict as each argument's grad_req says ('write', 'add' or 'null').
forward(is_train=False) runs the symbol compiled (sym.compile: kiln's passes and backend)
from its second call on; the first call walks the symbol as training does, without the tape.
Compiling costs more than many walks of a small graph, and code that binds a symbol to run
it once (a check, a test over many shapes) should not pay it.
"""
import os
from collections import OrderedDict

import numpy as _np

from ..._core import autograd
from ..._core.base import KilnError, where_in_user_code
from ..._core.context import current_context
from ..._core.ndarray import ndarray, full_like
from ...hybrid.fallback import HybridizeError
from ..ops import lookup
from .common_expr import eliminate_common_expr
from .storage import gradient_storage, present_outputs
from .symbol import Symbol
from .debug_str import debug_str
from .evaluation import (evaluate, infer_shape_strict, infer_type, compile_symbols,
                         output_avals, shape_inference, _as_array)


_EAGER = "eager"      # Executor._compiled of a symbol that cannot be compiled
_WALKED = "walked"    # Executor._compiled after one inference forward, before compiling


# MXNet ops whose inputs a monitor names by position (no input names registered)
_POSITIONAL_INPUTS = {"Activation", "SoftmaxActivation"}


def _monitor_input_name(node, k):
    if node.op in _POSITIONAL_INPUTS:
        return f"input{k}"
    op = lookup(node.op)
    if op.variadic:
        return f"arg{k}"
    names = op.input_names(node.attrs)
    return names[k] if k < len(names) else f"input{k}"


# MXNet ops registered without a gradient (no FGradient): binding a symbol whose gradient
# must pass through one fails in MXNet, before any forward
NO_GRADIENT = frozenset(("batch_take",))


def _check_differentiable(symbol, reqs):
    """MXNet's bind-time refusal of a gradient asked through an op it cannot differentiate."""
    wanted = {n for n, r in reqs.items() if r != "null"}
    seen, stack = set(), [node for node, _ in symbol._heads]
    while stack:
        node = stack.pop()
        if id(node) in seen or node.is_var:
            continue
        seen.add(id(node))
        if node.op in ("BlockGrad", "stop_gradient"):
            continue
        if node.op in NO_GRADIENT and _reaches_any(node, wanted):
            raise KilnError(f"Operator {node.op} is non-differentiable (MXNet registers no "
                            f"gradient for it), but node {node.name!r} passes the gradient of "
                            f"{sorted(_reaches_any(node, wanted))}; give those grad_req "
                            "'null' or wrap the node in BlockGrad" + where_in_user_code())
        stack.extend(src for src, _ in node.inputs)


def _reaches_any(node, names):
    found, seen, stack = set(), set(), [node]
    while stack:
        n = stack.pop()
        if id(n) in seen:
            continue
        seen.add(id(n))
        if n.is_var:
            found |= {n.name} & names
        elif n.op not in ("BlockGrad", "stop_gradient"):
            stack.extend(src for src, _ in n.inputs)
    return found


def _gradient_path(symbol):
    """The nodes a gradient from the outputs passes (BlockGrad stops it)."""
    seen, path, stack = set(), [], [node for node, _ in symbol._heads]
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        path.append(node)
        if not node.is_var and node.op not in ("BlockGrad", "stop_gradient"):
            stack.extend(src for src, _ in node.inputs)
    return path


def _gradient_reaches(symbol):
    """Names of the variables a gradient from the outputs reaches."""
    return {node.name for node in _gradient_path(symbol) if node.is_var}


class ExtraParameterError(KilnError, ValueError):
    """A given parameter the bound symbol does not have."""


def _named(names, values, what):
    if values is None:
        return {}
    if isinstance(values, dict):       # None: no array for that name (MXNet skips it)
        return {k: v for k, v in values.items() if v is not None}
    values = list(values)
    if len(values) != len(names):
        raise KilnError(f"bind: {what} has {len(values)} arrays for {len(names)} names "
                        f"{names}" + where_in_user_code())
    return dict(zip(names, values))


class Executor:
    def __init__(self, symbol, arg_dict, grad_dict, grad_req, aux_dict):
        self._symbol = symbol
        self.arg_dict = OrderedDict((n, arg_dict[n]) for n in symbol.list_arguments())
        self.grad_dict = OrderedDict((n, grad_dict.get(n)) for n in symbol.list_arguments())
        self.aux_dict = OrderedDict((n, aux_dict[n]) for n in symbol.list_auxiliary_states())
        self._grad_req = grad_req
        self._outputs = None
        self._presented = None
        self._arg_sparse = {}       # sparse arrays bound as arguments (their storage shows)
        self.last_out_grads = None
        self._leaves = None
        self._leaves_train = True
        self._compiled = None
        self._monitor = None          # (callback, monitor_all) of set_monitor_callback
        self._ctx = current_context()  # MXNet's attribute; code passes it to nd.array
        # read at bind, as MXNet's graph executor does (common_expr.py)
        self._eliminate_common_expr = os.environ.get("MXNET_ELIMINATE_COMMON_EXPR",
                                                     "1") != "0"

    # ---- construction ------------------------------------------------------------------------
    @staticmethod
    def _reqs(symbol, grad_req):
        names = symbol.list_arguments()
        if isinstance(grad_req, str):
            reqs = {n: grad_req for n in names}
        else:
            reqs = _named(names, grad_req, "grad_req")
            reqs = {n: reqs.get(n, "null") for n in names}
        for n, r in reqs.items():
            if r not in ("write", "add", "null"):
                raise KilnError(f"bind: grad_req for {n!r} must be 'write', 'add' or "
                                f"'null', got {r!r}" + where_in_user_code())
        return reqs

    @classmethod
    def simple_bind(cls, symbol, grad_req="write", type_dict=None, shapes=None):
        # MXNet reads only the tuple-valued keywords as shapes and ignores the rest
        shapes = {k: v for k, v in (shapes or {}).items() if isinstance(v, (tuple, list))}
        arg_shapes, _, aux_shapes = infer_shape_strict(symbol, **(shapes or {}))
        arg_types, _, aux_types = infer_type(symbol, **(type_dict or {}))
        names, aux = symbol.list_arguments(), symbol.list_auxiliary_states()
        args = {n: ndarray._wrap(_np.zeros(s, t)) for n, s, t in zip(names, arg_shapes,
                                                                        arg_types)}
        reqs = cls._reqs(symbol, grad_req)    # an integer argument binds a gradient array
        # too, as in MXNet; backward leaves it zero (kiln differentiates floats only)
        _check_differentiable(symbol, reqs)
        grads = {n: ndarray._wrap(_np.zeros(s, t)) for n, s, t in
                 zip(names, arg_shapes, arg_types) if reqs[n] != "null"}
        for n, stype in gradient_storage(symbol).items():    # Embedding(sparse_grad=True)
            if n in grads:
                grads[n] = grads[n].tostype(stype)
        auxs = {n: ndarray._wrap(_np.zeros(s, t)) for n, s, t in zip(aux, aux_shapes,
                                                                        aux_types)}
        return cls(symbol, args, grads, reqs, auxs)

    @classmethod
    def bind(cls, symbol, args, args_grad=None, grad_req="write", aux_states=None):
        names, aux = symbol.list_arguments(), symbol.list_auxiliary_states()
        arg_dict = {n: _as_array(v, n) for n, v in _named(names, args, "args").items()}
        missing = [n for n in names if n not in arg_dict]
        if missing:
            raise KilnError(f"bind: no array for argument(s) {missing}" + where_in_user_code())
        # a sparse gradient array (nd.sparse) is kept, and takes its gradient in its storage
        grads = {n: v if getattr(v, "stype", "default") != "default" else _as_array(v, n)
                 for n, v in _named(names, args_grad, "args_grad").items()}
        reqs = cls._reqs(symbol, grad_req if args_grad is not None else "null")
        _check_differentiable(symbol, reqs)
        aux_dict = {n: _as_array(v, n) for n, v in _named(aux, aux_states, "aux").items()}
        if len(aux_dict) != len(aux):
            raise KilnError(f"bind: the symbol needs auxiliary states {aux}"
                            + where_in_user_code())
        exe = cls(symbol, arg_dict, grads, reqs, aux_dict)
        exe._arg_sparse = {n: v for n, v in _named(names, args, "args").items()
                           if getattr(v, "stype", "default") != "default"}
        return exe

    @property
    def outputs(self):
        """The outputs of the last forward; before the first, zeros of the inferred shapes
        (MXNet allocates them at bind). With sparse arguments, an output MXNet keeps sparse
        is given in that storage (storage.py)."""
        if self._outputs is None:
            bound = {**self.arg_dict, **self.aux_dict}
            avals = output_avals(self._symbol, {n: a.shape for n, a in bound.items()},
                                 {n: str(a.dtype) for n, a in bound.items()})
            self._outputs = [ndarray._wrap(_np.zeros(s, t)) for s, t in avals]
        if not self._arg_sparse:
            return self._outputs
        if self._presented is None:
            self._presented = present_outputs(self._symbol._heads, self._outputs,
                                              self._arg_sparse)
        return self._presented

    @outputs.setter
    def outputs(self, values):
        self._outputs, self._presented = values, None

    # ---- running -----------------------------------------------------------------------------
    def _set_inputs(self, kwargs):
        for name, value in kwargs.items():
            if name not in self.arg_dict:
                raise KilnError(f"forward: {name!r} is not an argument "
                                f"({list(self.arg_dict)})" + where_in_user_code())
            target = self.arg_dict[name]
            if getattr(value, "stype", "default") != "default":
                self._arg_sparse[name] = value
            else:
                self._arg_sparse.pop(name, None)
            value = _as_array(value, name)
            if value.shape != target.shape:
                raise KilnError(f"forward: {name!r} must have shape {target.shape}, got "
                                f"{value.shape}" + where_in_user_code())
            target[...] = value

    def get_optimized_symbol(self):
        """The symbol as the executor's graph passes leave it: with common subexpressions
        merged unless MXNET_ELIMINATE_COMMON_EXPR was 0 at bind."""
        if self._eliminate_common_expr:
            return eliminate_common_expr(self._symbol)
        return Symbol(list(self._symbol._heads))

    def set_monitor_callback(self, callback, monitor_all=False):
        """Call callback(name, array) for every op output during forward (MXNet's names:
        `{node}_output`); with monitor_all also for its inputs first (`{node}_{input}`,
        each variable by its own name before)."""
        self._monitor = (callback, bool(monitor_all))

    def _observe(self, node, inputs, outputs):
        callback, monitor_all = self._monitor
        # names come as bytes, as MXNet's C callback gives them (code decodes with py_str);
        # the array itself stands where MXNet gives a C handle
        if monitor_all:
            for k, ((src, _), array) in enumerate(zip(node.inputs, inputs)):
                if src.is_var:
                    callback(src.name.encode(), array)
                callback(f"{node.name}_{_monitor_input_name(node, k)}".encode(), array)
        for k, array in enumerate(outputs):
            callback(node.output_name(k).encode(), array)

    def forward(self, is_train=False, **kwargs):
        self._set_inputs(kwargs)
        self.last_out_grads = None          # what the last backward() started from
        if not is_train and self._monitor is not None:
            self._leaves = None
            values = {**self.arg_dict, **self.aux_dict}
            with autograd.predict_mode():
                self.outputs = evaluate(self._symbol._heads, lambda n: values[n.name],
                                        self._observe)
            return self.outputs
        if not is_train:
            self._leaves = None
            if self._compiled is _WALKED:
                self._compiled = compile_symbols(self._symbol)
            values = {**self.arg_dict, **self.aux_dict}
            if self._compiled is None:
                self._compiled = _WALKED
            elif self._compiled is not _EAGER:
                try:
                    self.outputs = self._compiled(**{n: values[n]
                                                     for n in self._compiled.names})
                    return self.outputs
                except HybridizeError:      # an op that computes only eagerly (sort, topk)
                    self._compiled = _EAGER
            with autograd.predict_mode():
                self.outputs = evaluate(self._symbol._heads, lambda n: values[n.name])
            return self.outputs
        self._record(train_mode=True)
        return self.outputs

    def _record(self, train_mode):
        """Run forward under autograd (dropout and batch statistics as `train_mode` says),
        keeping the leaves backward differentiates to."""
        leaves = {}
        for name, array in self.arg_dict.items():
            leaf = array._alias()
            leaf._tape = None
            if self._grad_req[name] != "null":
                leaf.attach_grad()
            leaves[name] = leaf
        feed = {**leaves, **self.aux_dict}
        with autograd.record(train_mode=train_mode):
            self.outputs = evaluate(self._symbol._heads, lambda n: feed[n.name],
                                    None if self._monitor is None else self._observe)
        self._leaves = leaves
        self._leaves_train = train_mode

    def backward(self, out_grads=None, is_train=True):
        # MXNet runs backward on the bound arrays as they are; is_train=False differentiates
        # the inference forward (dropout as the identity)
        if self._leaves is None or self._leaves_train != bool(is_train):
            self.last_out_grads = None
            self._record(train_mode=bool(is_train))
        if isinstance(out_grads, dict):     # by output name, as MXNet accepts them
            out_grads = [out_grads[n] for n in self._symbol.list_outputs()]
        if out_grads is not None and not isinstance(out_grads, (list, tuple)):
            out_grads = [out_grads]
        if out_grads is not None:
            out_grads = [_as_array(g, "out_grads") for g in out_grads]
        self.last_out_grads = out_grads or [full_like(o, 1) for o in self._outputs]
        reached = _gradient_reaches(self._symbol)
        for n, r in self._grad_req.items():
            # BlockGrad stops the gradient, and integer inputs (lengths, indices) have none:
            # MXNet's backward writes zeros there
            if r == "write" and self.grad_dict.get(n) is not None and (
                    n not in reached or
                    not _np.issubdtype(self.arg_dict[n].dtype, _np.inexact)):
                self.grad_dict[n][...] = 0
        names = [n for n, r in self._grad_req.items() if r != "null" and n in reached and
                 _np.issubdtype(self.arg_dict[n].dtype, _np.inexact)]   # integers: none
        if not names:           # nothing asks for a gradient: MXNet's backward does nothing
            return
        # outputs that depend on no argument (shape_array, a constant) pass no gradient
        heads = [(o, g) for o, g in zip(self._outputs, out_grads or [None] * len(self._outputs))
                 if o._tape is not None]
        if heads:
            grads = autograd.grad([o for o, _ in heads], [self._leaves[n] for n in names],
                                  head_grads=None if out_grads is None else
                                  [g for _, g in heads], retain_graph=True)
        else:
            grads = [ndarray._wrap(_np.zeros(self._leaves[n].shape, self._leaves[n].dtype))
                     for n in names]
        for name, g in zip(names, grads):
            target = self.grad_dict.get(name)
            if target is None:
                continue
            if not isinstance(target, ndarray):     # sparse: written in its own storage
                (target + g if self._grad_req[name] == "add" else g).copyto(target)
            elif self._grad_req[name] == "add":
                target[...] = target + g
            else:
                target[...] = g

    # ---- MXNet's conveniences ----------------------------------------------------------------
    def debug_str(self):
        """MXNet's description of the bound graph, ending with the memory its arrays take
        (debug_str.py)."""
        bound = {**self.arg_dict, **self.aux_dict}
        inference = shape_inference(self._symbol._heads, {n: a.shape for n, a in bound.items()},
                                    {n: str(a.dtype) for n, a in bound.items()})
        wanted = {n for n, r in self._grad_req.items() if r != "null"} & \
            _gradient_reaches(self._symbol)
        return debug_str(self._symbol, inference, inference.nodes,
                         {id(n) for n in _gradient_path(self._symbol)
                          if not n.is_var and _reaches_any(n, wanted)})

    @property
    def arg_arrays(self):
        return list(self.arg_dict.values())

    @property
    def grad_arrays(self):
        return list(self.grad_dict.values())

    @property
    def aux_arrays(self):
        return list(self.aux_dict.values())

    @property
    def output_dict(self):
        return OrderedDict(zip(self._symbol.list_outputs(), self.outputs))

    def copy_params_from(self, arg_params, aux_params=None, allow_extra_params=False):
        aux_params = aux_params or {}
        extra = [n for n in arg_params if n not in self.arg_dict] + [
            n for n in aux_params if n not in self.aux_dict]
        if extra and not allow_extra_params:
            # MXNet raises ValueError here ("Find name ... that is not in the arguments")
            raise ExtraParameterError(f"copy_params_from: {extra[:5]} are not parameters of "
                                      f"the symbol; pass allow_extra=True to ignore them"
                                      + where_in_user_code())
        for table, params in ((self.arg_dict, arg_params), (self.aux_dict, aux_params)):
            for name, value in params.items():
                if name in table:
                    table[name][...] = _as_array(value, name)
