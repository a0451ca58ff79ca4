"""MXNet 1.x's Module: a symbol bound to data shapes over one or more contexts.

`bind` makes a DataParallelExecutorGroup (executor_group.py: one Executor per context, each
on its slice of the batch); forward(is_train=False) runs the symbol compiled by kiln,
training records on kiln's autograd tape. `update` follows MXNet: with several contexts the
gradients are summed in a KVStore that applies the optimizer (`_kvstore._updater`), with one
context an Updater applies it directly (`_updater`). Optimizer states save in kiln's safe
format (kiln/optimizer/updater.py), never pickled.
"""
import logging
import os
import warnings

import numpy as _np

from ... import init as kinit, optimizer as kopt
from ..._core.base import KilnError, where_in_user_code
from ..._core.context import cpu
from ..._core.ndarray import ndarray
from ...io import DataDesc
from ...npx.io import MAX_PARAMS_FILE_BYTES, read_capped
from ...optimizer.updater import get_updater
from .. import kvstore as kvs
from .base_module import BaseModule
from .executor_group import DataParallelExecutorGroup
from .params import load_param_file, save_param_file


class ModuleNameError(KilnError, ValueError):
    """A data, state or fixed parameter name the symbol does not have (ValueError in MXNet)."""


class MissingParameterError(KilnError, RuntimeError):
    """A parameter absent from the given params (RuntimeError in MXNet)."""


def _check_names(symbol, names, kind, throw):
    args = symbol.list_arguments()
    for name in names:
        if name not in args:
            message = (f"Module: {kind} name {name!r} is not an argument of the symbol "
                       f"({args}); Module(..., {kind}_names={list(names)})")
            if throw:
                raise ModuleNameError(message + where_in_user_code())
            warnings.warn(message)


def _parse_descs(names, shapes, kind):
    """DataDescs of the given (name, shape) pairs, checked against the module's names."""
    descs = []
    for item in shapes or []:
        desc = item if isinstance(item, DataDesc) else DataDesc(*item)
        if not isinstance(item[1] if not isinstance(item, DataDesc) else desc.shape,
                          (tuple, list)) or not all(isinstance(d, (int, _np.integer))
                                                    for d in desc.shape):
            raise TypeError(f"Module.bind: the shape of {kind} {desc.name!r} must be a tuple "
                            f"of ints, got {item[1]!r:.80}")
        descs.append(desc)
    given = [d.name for d in descs]
    if kind == "data" and sorted(given) != sorted(names):
        raise ValueError(f"Module.bind: data_shapes name {given}, the module's data names "
                         f"are {list(names)}")
    return descs


def _create_kvstore(kvstore, num_device, arg_params):
    """(kvstore or None, update_on_kvstore) as MXNet's model._create_kvstore decides."""
    update_on_kvstore = bool(int(os.getenv("MXNET_UPDATE_ON_KVSTORE", "1")))
    if kvstore is None:
        kv = None
    elif isinstance(kvstore, kvs.KVStore):
        kv = kvstore
    elif isinstance(kvstore, str):
        if num_device == 1 and "dist" not in kvstore:
            kv = None       # one device on one machine needs no store
        else:
            kv = kvs.create(kvstore)
            if kvstore == "local" and arg_params and max(
                    int(_np.prod(p.shape)) for p in arg_params.values()) > 1024 * 1024 * 16:
                update_on_kvstore = False
    else:
        raise TypeError("kvstore must be KVStore, str or None")
    return kv, (update_on_kvstore if kv is not None else False)


def _multipliers(symbol, key):
    """name -> float of the variables whose attribute `key` (__lr_mult__, __wd_mult__) is
    set, as MXNet's optimizer reads them from the symbol it is created with."""
    return {n.name: float(n.var_attrs[key]) for n in symbol._nodes()
            if n.is_var and key in n.var_attrs}


def _param_array(like, storage_type):
    """A zero parameter array of `like`'s shape and dtype, in the storage its variable
    declares (sym.var(stype=...): '1' row_sparse, '2' csr), as MXNet's Module holds it."""
    zeros = ndarray._wrap(_np.zeros(like.shape, like.dtype))
    stype = {"1": "row_sparse", "2": "csr"}.get(str(storage_type))
    return zeros if stype is None else zeros.tostype(stype)


class Module(BaseModule):
    """MXNet 1.x's Module: a symbol bound to data shapes (`bind`), with parameters (`init_params`),
    an optimizer (`init_optimizer`), `forward`, `backward`, `update`, and `fit`, `predict` and
    `score` over data iterators."""
    def __init__(self, symbol, data_names=("data",), label_names=("softmax_label",),
                 logger=logging, context=None, work_load_list=None, fixed_param_names=None,
                 state_names=None, group2ctxs=None, compression_params=None):
        super().__init__(logger=logger)
        context = cpu() if context is None else context
        self._context = list(context) if isinstance(context, (list, tuple)) else [context]
        self._work_load_list = list(work_load_list or [1] * len(self._context))
        if len(self._work_load_list) != len(self._context):
            raise ValueError("Module: work_load_list needs one entry per context")
        self._group2ctxs = group2ctxs
        self._symbol = symbol
        self._data_names = list(data_names or [])
        self._label_names = list(label_names or [])
        self._state_names = list(state_names or [])
        self._fixed_param_names = list(fixed_param_names or [])
        _check_names(symbol, self._data_names, "data", True)
        _check_names(symbol, self._label_names, "label", False)
        _check_names(symbol, self._state_names, "state", True)
        _check_names(symbol, self._fixed_param_names, "fixed_param", True)
        # a kiln export marks its constants and running statistics __grad_req__=null
        self._fixed_param_names += [n.name for n in symbol._nodes() if n.is_var and
                                    n.var_attrs.get("__grad_req__") == "null"]
        inputs = set(self._data_names + self._label_names + self._state_names)
        self._param_names = [n for n in symbol.list_arguments() if n not in inputs]
        self._aux_names = symbol.list_auxiliary_states()
        self._output_names = symbol.list_outputs()
        self._arg_params = self._aux_params = None
        self._params_dirty = False
        self._compression_params = compression_params
        self._optimizer = self._kvstore = self._updater = None
        self._update_on_kvstore = None
        self._preload_opt_states = None
        self._grad_req = None
        self._exec_group = None
        self._data_shapes = self._label_shapes = None

    @staticmethod
    def load(prefix, epoch, load_optimizer_states=False, **kwargs):
        """A Module of a checkpoint (prefix-symbol.json, prefix-%04d.params)."""
        symbol, args, auxs = load_checkpoint(prefix, epoch)
        mod = Module(symbol=symbol, **kwargs)
        mod._arg_params, mod._aux_params = args, auxs
        mod.params_initialized = True
        if load_optimizer_states:
            mod._preload_opt_states = f"{prefix}-{int(epoch):04d}.states"
        return mod

    def save_checkpoint(self, prefix, epoch, save_optimizer_states=False,
                        remove_amp_cast=True):
        self._symbol.save(f"{prefix}-symbol.json")
        self.save_params(f"{prefix}-{int(epoch):04d}.params")
        if save_optimizer_states:
            self.save_optimizer_states(f"{prefix}-{int(epoch):04d}.states")

    @property
    def _exec(self):
        """The first context's executor."""
        return self._exec_group.execs[0]

    # ---- names and shapes --------------------------------------------------------------------
    data_names = property(lambda self: list(self._data_names))
    label_names = property(lambda self: list(self._label_names))
    output_names = property(lambda self: list(self._output_names))

    @property
    def data_shapes(self):
        self._need("bind")
        return list(self._data_shapes)

    @property
    def label_shapes(self):
        self._need("bind")
        return list(self._label_shapes) or None

    @property
    def output_shapes(self):
        self._need("bind")
        shapes = {d.name: d.shape for d in self._data_shapes + self._label_shapes}
        _, out, _ = self._symbol.infer_shape(**shapes)
        return list(zip(self._output_names, out))

    def _need(self, what):
        ok = {"bind": self.binded, "params": self.params_initialized,
              "optimizer": self.optimizer_initialized}[what]
        if not ok:
            step = {"bind": "bind()", "params": "init_params() or load_params()",
                    "optimizer": "init_optimizer()"}[what]
            raise KilnError(f"Module: call {step} first" + where_in_user_code())

    # ---- parameters --------------------------------------------------------------------------
    def get_params(self):
        self._need("bind")
        self._need("params")
        self._sync_params_from_devices()     # the executors hold the current values
        return self._arg_params, self._aux_params

    def init_params(self, initializer=None, arg_params=None, aux_params=None,
                    allow_missing=False, force_init=False, allow_extra=False):
        if self.params_initialized and not force_init:
            warnings.warn("Parameters already initialized and force_init=False. "
                          "init_params call ignored.", stacklevel=2)
            return
        self._need("bind")
        if initializer is None and arg_params is None and aux_params is None:
            initializer = kinit.Uniform(0.01)
        init = kinit.create(initializer) if initializer is not None else None
        attrs = {n.name: n.var_attrs for n in self._symbol._nodes() if n.is_var}

        def fill(name, arr, given):
            if given is not None and name in given:
                if given[name] is not arr:
                    arr[...] = _as_value(given[name], arr, name)
                return
            if given is not None and not allow_missing:
                raise MissingParameterError(f"{name} is not presented (Module: the given "
                                            "params lack it; pass allow_missing=True to "
                                            "initialize it instead)" + where_in_user_code())
            if init is not None:
                init(kinit.InitDesc(name, {k: v for k, v in attrs.get(name, {}).items()
                                           if k == "__init__"}), arr)

        for name, arr in sorted(self._arg_params.items()):
            fill(name, arr, arg_params)
        for name, arr in sorted(self._aux_params.items()):
            fill(name, arr, aux_params)
        self.params_initialized, self._params_dirty = True, False
        self._exec_group.set_params(self._arg_params, self._aux_params, allow_extra=allow_extra)

    def set_params(self, arg_params, aux_params=None, allow_missing=False, force_init=True,
                   allow_extra=False):
        if not allow_missing:
            self.init_params(initializer=None, arg_params=arg_params, aux_params=aux_params,
                             allow_missing=allow_missing, force_init=force_init,
                             allow_extra=allow_extra)
            return
        if self.params_initialized and not force_init:
            warnings.warn("Parameters already initialized and force_init=False. "
                          "set_params call ignored.", stacklevel=2)
            return
        self._exec_group.set_params(arg_params, aux_params or {}, allow_extra=allow_extra)
        self._params_dirty, self.params_initialized = True, True

    def load_params(self, fname):
        arg_params, aux_params = load_param_file(fname, set(self._aux_names))
        self.set_params(arg_params, aux_params)

    def save_params(self, fname):
        arg_params, aux_params = self.get_params()
        save_param_file(fname, arg_params, aux_params)

    def _sync_params_from_devices(self):
        self._exec_group.get_params(self._arg_params, self._aux_params)
        self._params_dirty = False

    # ---- binding -----------------------------------------------------------------------------
    def _reset_bind(self):
        self.binded = False
        self._exec_group = None
        self._data_shapes = self._label_shapes = None

    def bind(self, data_shapes, label_shapes=None, for_training=True, inputs_need_grad=False,
             force_rebind=False, shared_module=None, grad_req="write"):
        if force_rebind:
            self._reset_bind()
        if self.binded:
            self.logger.warning("Already bound, ignoring bind()")
            return
        self.for_training, self.inputs_need_grad = for_training, inputs_need_grad
        self._grad_req = grad_req
        if not for_training and inputs_need_grad:
            raise ValueError("inputs_need_grad needs for_training=True")
        self._data_shapes = _parse_descs(self._data_names, data_shapes, "data")
        self._label_shapes = _parse_descs(self._label_names, label_shapes, "label")
        shared_group = None
        if shared_module is not None:
            if not (shared_module.binded and shared_module.params_initialized):
                raise KilnError("Module.bind: shared_module must be bound with its parameters "
                                "initialized" + where_in_user_code())
            shared_group = shared_module._exec_group
        self._exec_group = DataParallelExecutorGroup(
            self._symbol, self._context, self._work_load_list, self._data_shapes,
            self._label_shapes, self._param_names, for_training, inputs_need_grad,
            shared_group, logger=self.logger, fixed_param_names=self._fixed_param_names,
            grad_req=grad_req, group2ctxs=self._group2ctxs, state_names=self._state_names)
        self._total_exec_bytes = sum(
            a.size * a.dtype.itemsize for e in self._exec_group.execs
            for a in list(e.arg_dict.values()) + list(e.aux_dict.values())
            + [g for g in e.grad_dict.values() if g is not None])
        if shared_module is not None:
            self.params_initialized = True
            self._arg_params, self._aux_params = shared_module._arg_params, \
                shared_module._aux_params
        elif self.params_initialized:
            self._exec_group.set_params(self._arg_params, self._aux_params)
        else:
            stypes = {n.name: n.var_attrs.get("__storage_type__")
                      for n in self._symbol._nodes() if n.is_var}
            self._arg_params = {n: _param_array(a[0], stypes.get(n))
                                for n, a in zip(self._param_names,
                                                self._exec_group.param_arrays)}
            self._aux_params = {n: ndarray._wrap(_np.zeros(a[0].shape, a[0].dtype))
                                for n, a in zip(self._aux_names, self._exec_group.aux_arrays)}
        if shared_module is not None and shared_module.optimizer_initialized:
            self.borrow_optimizer(shared_module)
        self.binded = True

    def reshape(self, data_shapes, label_shapes=None):
        self._need("bind")
        self._data_shapes = _parse_descs(self._data_names, data_shapes, "data")
        self._label_shapes = _parse_descs(self._label_names, label_shapes, "label")
        self._exec_group.reshape(self._data_shapes, self._label_shapes)

    # ---- optimizer ---------------------------------------------------------------------------
    def init_optimizer(self, kvstore="local", optimizer="sgd",
                       optimizer_params=(("learning_rate", 0.01),), force_init=False):
        self._need("bind")
        self._need("params")
        if self.optimizer_initialized and not force_init:
            self.logger.warning("optimizer already initialized, ignoring...")
            return
        if self._params_dirty:
            self._sync_params_from_devices()
        kvstore, update_on_kvstore = _create_kvstore(kvstore, len(self._context),
                                                     self._arg_params)
        batch_size = self._exec_group.batch_size
        if kvstore is not None and "dist" in kvstore.type and "_sync" in kvstore.type:
            batch_size *= kvstore.num_workers
        rescale_grad = 1.0 / batch_size
        names = self._exec_group.param_names
        if update_on_kvstore:
            idx2name = dict(enumerate(names))
        else:
            n_ctx = len(self._context)
            idx2name = {i * n_ctx + k: n for k in range(n_ctx) for i, n in enumerate(names)}
        if isinstance(optimizer, str):
            params = dict(optimizer_params)
            params.setdefault("rescale_grad", rescale_grad)
            optimizer = kopt.create(optimizer, param_idx2name=idx2name, **params)
            optimizer.set_lr_mult(_multipliers(self._symbol, "__lr_mult__"))
            optimizer.set_wd_mult({**{n: 0.0 for n in idx2name.values()   # MXNet: biases
                                      if not n.endswith(("_weight", "_gamma"))},  # not decayed
                                   **_multipliers(self._symbol, "__wd_mult__")})
        else:
            if optimizer.rescale_grad != rescale_grad:
                warnings.warn(f"Optimizer created manually outside Module but rescale_grad is "
                              f"not normalized to 1.0/batch_size/num_workers "
                              f"({optimizer.rescale_grad} vs. {rescale_grad}). Is this "
                              "intended?", stacklevel=2)
            if not optimizer.idx2name:
                optimizer.idx2name = dict(idx2name)
        self._optimizer, self._kvstore = optimizer, kvstore
        self._update_on_kvstore, self._updater = update_on_kvstore, None
        if kvstore is not None:
            if update_on_kvstore:
                kvstore.set_optimizer(optimizer)
            for name, on_devices in zip(names, self._exec_group.param_arrays):
                kvstore.init(name, self._arg_params[name])
                if update_on_kvstore:
                    kvstore.pull(name, out=on_devices)
        if not update_on_kvstore:
            self._updater = get_updater(optimizer)
        self.optimizer_initialized = True
        if self._preload_opt_states is not None:
            self.load_optimizer_states(self._preload_opt_states)
            self._preload_opt_states = None

    def borrow_optimizer(self, shared_module):
        """Use shared_module's optimizer, kvstore and updater (BucketingModule's buckets)."""
        self._optimizer, self._kvstore = shared_module._optimizer, shared_module._kvstore
        self._update_on_kvstore = shared_module._update_on_kvstore
        self._updater = shared_module._updater
        self.optimizer_initialized = True

    def save_optimizer_states(self, fname):
        self._need("optimizer")
        if self._update_on_kvstore:
            self._kvstore.save_optimizer_states(fname)
        else:
            with open(fname, "wb") as f:
                f.write(self._updater.get_states())

    def load_optimizer_states(self, fname):
        self._need("optimizer")
        if self._update_on_kvstore:
            self._kvstore.load_optimizer_states(fname)
        else:
            self._updater.set_states(read_capped(fname, "optimizer states file",
                                                 MAX_PARAMS_FILE_BYTES))

    # ---- running -----------------------------------------------------------------------------
    def forward(self, data_batch, is_train=None):
        self._need("bind")
        self._need("params")
        current = [tuple(d.shape) for d in self._data_shapes]
        given = [tuple(d.shape) for d in data_batch.data]
        if current != given:
            provided = getattr(data_batch, "provide_data", None)
            if provided and sorted(DataDesc(*d).name if not isinstance(d, DataDesc) else d.name
                                   for d in provided) == sorted(self._data_names):
                new_data = provided
            else:
                new_data = [DataDesc(d.name, shape, d.dtype, d.layout)
                            for d, shape in zip(self._data_shapes, given)]
            label = getattr(data_batch, "label", None)
            provided_label = getattr(data_batch, "provide_label", None)
            if provided_label and self._label_shapes and sorted(
                    DataDesc(*d).name if not isinstance(d, DataDesc) else d.name
                    for d in provided_label) == sorted(d.name for d in self._label_shapes):
                new_label = provided_label
            elif label and self._label_shapes:
                new_label = [DataDesc(d.name, tuple(lab.shape), d.dtype, d.layout)
                             for d, lab in zip(self._label_shapes, label)]
            else:
                new_label = None
            self.reshape(new_data, new_label)
        self._exec_group.forward(data_batch, is_train)

    def backward(self, out_grads=None):
        self._need("bind")
        self._need("params")
        self._exec_group.backward(out_grads=out_grads)

    def update(self):
        self._need("bind")
        self._need("params")
        self._need("optimizer")
        self._params_dirty = True
        group = self._exec_group
        for index, (name, weights, grads) in enumerate(zip(group.param_names,
                                                           group.param_arrays,
                                                           group.grad_arrays)):
            if grads[0] is None:
                continue
            if self._update_on_kvstore:
                self._kvstore.pushpull(name, grads, out=weights, priority=-index)
                continue
            if self._kvstore is not None:
                self._kvstore.pushpull(name, grads, priority=-index)
            n_ctx = len(self._context)
            for k, (w, g) in enumerate(zip(weights, grads)):
                self._updater(index * n_ctx + k, g, w)

    def get_outputs(self, merge_multi_context=True):
        self._need("bind")
        self._need("params")
        return self._exec_group.get_outputs(merge_multi_context=merge_multi_context)

    def get_input_grads(self, merge_multi_context=True):
        self._need("bind")
        self._need("params")
        return self._exec_group.get_input_grads(merge_multi_context=merge_multi_context)

    def get_states(self, merge_multi_context=True):
        self._need("bind")
        self._need("params")
        return self._exec_group.get_states(merge_multi_context=merge_multi_context)

    def set_states(self, states=None, value=None):
        self._need("bind")
        self._need("params")
        self._exec_group.set_states(states, value)

    def update_metric(self, eval_metric, labels, pre_sliced=False):
        self._exec_group.update_metric(eval_metric, labels, pre_sliced)

    def install_monitor(self, mon):
        """Let an mx.monitor.Monitor watch this module's executors (bind first)."""
        self._need("bind")
        self._exec_group.install_monitor(mon)

    def prepare(self, data_batch, sparse_row_id_fn=None):
        """MXNet's hook before forward (row-sparse pulls); kiln's arrays are dense."""


def load_checkpoint(prefix, epoch):
    """(symbol, arg_params, aux_params) of a checkpoint, as mx.model.load_checkpoint."""
    from ..sym.serialization import load
    symbol = load(f"{prefix}-symbol.json")
    args, aux = load_param_file(f"{prefix}-{int(epoch):04d}.params",
                                set(symbol.list_auxiliary_states()))
    return symbol, args, aux


def _as_value(value, target, name):
    """A given parameter value as an array of the bound array's shape."""
    value = value if isinstance(value, ndarray) else ndarray._wrap(_np.asarray(value))
    if tuple(value.shape) != tuple(target.shape):
        raise KilnError(f"Module: {name!r} has shape {tuple(value.shape)}, the bound symbol "
                        f"needs {tuple(target.shape)}" + where_in_user_code())
    return value


__all__ = ["Module", "load_checkpoint"]
