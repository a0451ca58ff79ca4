"""MXNet 1.x's Module: a symbol bound for inference and simple training.

It keeps one Executor (kiln/mx/sym/executor.py) for the bound shapes: forward(is_train=False)
runs the symbol compiled by kiln (the passes and backend of hybridize); training records
on kiln's autograd tape and updates with kiln's optimizers.
"""
from collections import OrderedDict

import numpy as _np

from ... import init as kinit, optimizer as kopt
from ..._core.base import KilnError, where_in_user_code
from ...io import DataDesc, as_desc
from ..._core.ndarray import ndarray
from .params import load_param_file, save_param_file
from .base_module import BaseModule


class Module(BaseModule):
    """MXNet 1.x's Module: a symbol bound to data shapes (`bind`), with parameters (`init_params`),
    an optimizer (`init_optimizer`), `forward`, `backward`, `update`, and `fit`, `predict` and
    `score` over data iterators."""
    def __init__(self, symbol, data_names=("data",), label_names=("softmax_label",),
                 context=None, work_load_list=None, fixed_param_names=None, **_):
        self._symbol = symbol
        args = symbol.list_arguments()
        data_names = list(data_names or [])
        for n in data_names:
            if n not in args:
                raise KilnError(f"Module: data name {n!r} is not an argument of the symbol "
                                f"({args})" + where_in_user_code())
        self._data_names = data_names
        self._label_names = [n for n in (label_names or []) if n in args]
        inputs = set(self._data_names) | set(self._label_names)
        self._param_names = [n for n in args if n not in inputs]
        self._aux_names = symbol.list_auxiliary_states()
        self._fixed = set(fixed_param_names or []) | {
            n.name for n in symbol._nodes()
            if n.is_var and n.var_attrs.get("__grad_req__") == "null"}
        self._exec = None
        self._arg_params, self._aux_params = None, None
        self._optimizer, self._states = None, {}
        # the optimizer's index of each parameter (shared by a BucketingModule's buckets)
        self._param_index = {n: k for k, n in enumerate(self._param_names)}
        self.binded = self.params_initialized = self.optimizer_initialized = False
        self.for_training = False

    # ---- names and shapes --------------------------------------------------------------------
    symbol = property(lambda self: self._symbol)
    data_names = property(lambda self: list(self._data_names))
    label_names = property(lambda self: list(self._label_names))
    output_names = property(lambda self: self._symbol.list_outputs())

    @property
    def data_shapes(self):
        return list(self._data_shapes)

    @property
    def label_shapes(self):
        return list(self._label_shapes) or None

    @property
    def output_shapes(self):
        self._need("bind")
        shapes = dict(self._data_shapes_dict())
        _, out, _ = self._symbol.infer_shape(**shapes)
        return list(zip(self.output_names, out))

    def _data_shapes_dict(self):
        return {d.name: d.shape for d in list(self._data_shapes) + list(self._label_shapes)}

    def _need(self, what):
        ok = {"bind": self.binded, "params": self.params_initialized,
              "optimizer": self.optimizer_initialized}[what]
        if not ok:
            step = {"bind": "bind()", "params": "init_params() or load_params()",
                    "optimizer": "init_optimizer()"}[what]
            raise KilnError(f"Module: call {step} first" + where_in_user_code())

    # ---- binding -----------------------------------------------------------------------------
    def bind(self, data_shapes, label_shapes=None, for_training=True, inputs_need_grad=False,
             force_rebind=False, shared_module=None, grad_req="write"):
        if self.binded and not force_rebind:
            return
        self._data_shapes = [as_desc(d) for d in data_shapes]
        self._label_shapes = [as_desc(d) for d in (label_shapes or [])]
        given = [d.name for d in self._data_shapes]
        if sorted(given) != sorted(self._data_names):
            raise KilnError(f"Module.bind: data_shapes name {given}, the module's data "
                            f"names are {self._data_names}" + where_in_user_code())
        self.for_training = for_training
        reqs = {n: ("null" if not for_training or n in self._fixed else grad_req)
                for n in self._param_names}
        for n in self._data_names:
            reqs[n] = "write" if inputs_need_grad else "null"
        for n in self._label_names:
            reqs[n] = "null"
        self._exec = self._symbol.simple_bind(grad_req=reqs, **self._data_shapes_dict())
        self.binded = True
        if self._arg_params is not None:
            self._exec.copy_params_from(self._arg_params, self._aux_params)

    def reshape(self, data_shapes, label_shapes=None):
        self.bind(data_shapes, label_shapes, self.for_training, force_rebind=True)

    # ---- parameters --------------------------------------------------------------------------
    def init_params(self, initializer=None, arg_params=None, aux_params=None,
                    allow_missing=False, force_init=False, allow_extra=False):
        self._need("bind")
        if self.params_initialized and not force_init:
            return
        init = kinit.create(initializer) if initializer is not None else kinit.Uniform(0.01)
        attrs = {n.name: n.var_attrs for n in self._symbol._nodes() if n.is_var}
        for table, given in ((self._exec.arg_dict, arg_params), (self._exec.aux_dict,
                                                                  aux_params)):
            for name, arr in table.items():
                if name in self._data_names or name in self._label_names:
                    continue
                if given and name in given:
                    _assign(arr, given[name], name, "Module.init_params")
                elif given is not None and not allow_missing and given:
                    raise KilnError(f"Module.init_params: {name!r} is missing from the "
                                    "given params" + where_in_user_code())
                else:
                    init(kinit.InitDesc(name, {k: v for k, v in attrs[name].items()
                                               if k == "__init__"}), arr)
        self.params_initialized = True
        self._sync_params()

    def _sync_params(self):
        self._arg_params = {n: self._exec.arg_dict[n].copy() for n in self._param_names}
        self._aux_params = {n: a.copy() for n, a in self._exec.aux_dict.items()}

    def set_params(self, arg_params, aux_params=None, allow_missing=False, force_init=True,
                   allow_extra=False):
        self._need("bind")
        known = set(self._param_names) | set(self._aux_names)
        extra = [n for n in list(arg_params) + list(aux_params or {}) if n not in known]
        if extra and not allow_extra:
            raise KilnError(f"Module.set_params: {extra[:5]} are not parameters of the "
                            f"symbol (it has {sorted(known)[:8]}); pass allow_extra=True"
                            + where_in_user_code())
        missing = [n for n in known if n not in arg_params and n not in (aux_params or {})]
        if missing and not allow_missing:
            raise KilnError(f"Module.set_params: missing {missing[:5]}" + where_in_user_code())
        for table, given in ((self._exec.arg_dict, arg_params),
                             (self._exec.aux_dict, aux_params or {})):
            for name, value in given.items():
                if name not in table:
                    continue
                _assign(table[name], value, name, "Module.set_params")
        self.params_initialized = True
        self._sync_params()

    def get_params(self):
        self._need("params")
        self._sync_params()
        return dict(self._arg_params), dict(self._aux_params)

    def load_params(self, fname):
        arg_params, aux_params = load_param_file(fname, set(self._aux_names))
        self.set_params(arg_params, aux_params)

    def save_params(self, fname):
        arg_params, aux_params = self.get_params()
        save_param_file(fname, arg_params, aux_params)

    def save_checkpoint(self, prefix, epoch):
        self._symbol.save(f"{prefix}-symbol.json")
        self.save_params(f"{prefix}-{int(epoch):04d}.params")

    @staticmethod
    def load(prefix, epoch, load_optimizer_states=False, **kwargs):
        from ..sym.serialization import load
        mod = Module(load(f"{prefix}-symbol.json"), **kwargs)
        mod._preload = f"{prefix}-{int(epoch):04d}.params"
        return mod

    # ---- running -----------------------------------------------------------------------------
    def forward(self, data_batch, is_train=None):
        self._need("bind")
        if getattr(self, "_preload", None):
            self.load_params(self._preload)
            self._preload = None
        self._need("params")
        if is_train is None:
            is_train = self.for_training
        values = dict(zip(self._data_names, data_batch.data))
        label = getattr(data_batch, "label", None)
        if label and self._label_names:
            values.update(zip(self._label_names, label))
        shapes = {n: tuple(v.shape) for n, v in values.items()}
        if any(shapes[n] != tuple(self._exec.arg_dict[n].shape) for n in shapes):
            self._sync_params()
            self.reshape([DataDesc(n, shapes[n]) for n in self._data_names],
                         [DataDesc(n, shapes[n]) for n in self._label_names if n in shapes])
        self._exec.forward(is_train=is_train, **values)

    def backward(self, out_grads=None):
        self._need("bind")
        self._exec.backward(out_grads)

    def get_outputs(self, merge_multi_context=True):
        self._need("bind")
        return list(self._exec.outputs)

    def install_monitor(self, mon):
        """Let an mx.monitor.Monitor watch this module's executor (bind first)."""
        self._need("bind")
        mon.install(self._exec)

    def get_input_grads(self, merge_multi_context=True):
        return [self._exec.grad_dict[n] for n in self._data_names]

    def init_optimizer(self, kvstore="local", optimizer="sgd",
                       optimizer_params=(("learning_rate", 0.01),), force_init=False):
        self._need("params")
        if self.optimizer_initialized and not force_init:
            return
        if isinstance(optimizer, str):
            params = dict(optimizer_params)
            batch = self._data_shapes[0].shape[0] if self._data_shapes else 1
            params.setdefault("rescale_grad", 1.0 / batch)
            optimizer = kopt.create(optimizer, **params)
        self._optimizer = optimizer
        self._states = {}
        self.optimizer_initialized = True

    def update(self):
        self._need("optimizer")
        ex = self._exec
        for name in self._param_names:
            grad = ex.grad_dict.get(name)
            if grad is None or name in self._fixed:
                continue
            k = self._param_index[name]
            if k not in self._states:
                self._states[k] = self._optimizer.create_state(k, ex.arg_dict[name]._data)
            self._optimizer.update(k, ex.arg_dict[name], grad, self._states[k])


def load_checkpoint(prefix, epoch):
    """(symbol, arg_params, aux_params) of a checkpoint, as mx.model.load_checkpoint."""
    from ..sym.serialization import load
    symbol = load(f"{prefix}-symbol.json")
    args, aux = load_param_file(f"{prefix}-{int(epoch):04d}.params",
                                set(symbol.list_auxiliary_states()))
    return symbol, args, aux


__all__ = ["Module", "load_checkpoint", "OrderedDict"]


def _assign(target, value, name, what):
    """Write a given parameter value into the bound array; shapes must match exactly."""
    value = value if isinstance(value, ndarray) else ndarray._wrap(_np.asarray(value))
    if value.shape != target.shape:
        raise KilnError(f"{what}: {name!r} has shape {value.shape}, the bound symbol needs "
                        f"{target.shape}" + where_in_user_code())
    target[...] = value
