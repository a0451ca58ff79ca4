"""MXNet 1.x's BucketingModule: one Module per bucket key (sym_gen(key) gives its symbol,
data names and label names), all sharing the default bucket's parameter arrays and one
optimizer with its states, so that sequences of different lengths train one model.
A batch's `bucket_key` (with its provide_data/provide_label) picks the module."""
import logging

from ..._core.base import KilnError, where_in_user_code
from ...io import as_desc
from .base_module import BaseModule
from .module import Module


def _shapes(descs):
    return [tuple(as_desc(d).shape) for d in descs or []]


class BucketingModule(BaseModule):
    """MXNet 1.x's BucketingModule: one Module per bucket key, built from `sym_gen(key)`, all
    sharing the default bucket's parameters and optimizer."""
    def __init__(self, sym_gen, default_bucket_key=None, logger=logging, context=None,
                 work_load_list=None, fixed_param_names=None, state_names=None,
                 group2ctxs=None, compression_params=None):
        if default_bucket_key is None:
            raise KilnError("BucketingModule: default_bucket_key is required"
                            + where_in_user_code())
        self._sym_gen, self._default_bucket_key = sym_gen, default_bucket_key
        self._fixed_param_names, self.logger = fixed_param_names, logger
        self._buckets, self._curr_module, self._curr_bucket_key = {}, None, None
        self.binded = self.params_initialized = self.optimizer_initialized = False
        self.for_training = False
        self._grad_req, self._inputs_need_grad = "write", False

    def _module_for(self, key):
        made = self._sym_gen(key)
        if not (isinstance(made, tuple) and len(made) == 3):
            raise KilnError(f"BucketingModule: sym_gen({key!r}) must return (symbol, "
                            f"data_names, label_names), got {type(made).__name__}"
                            + where_in_user_code())
        symbol, data_names, label_names = made
        return Module(symbol, data_names, label_names,
                      fixed_param_names=self._fixed_param_names)

    def _need(self, what):
        if not getattr(self, {"bind": "binded", "params": "params_initialized",
                              "optimizer": "optimizer_initialized"}[what]):
            raise KilnError(f"BucketingModule: call {what if what == 'bind' else 'init_' + what}"
                            "() first" + where_in_user_code())

    # ---- what the current bucket's module says -------------------------------------------
    @property
    def default_bucket_key(self):
        return self._default_bucket_key

    @property
    def symbol(self):
        self._need("bind")
        return self._curr_module.symbol

    data_names = property(lambda self: self._default_module().data_names)
    label_names = property(lambda self: self._default_module().label_names)
    output_names = property(lambda self: self._curr_or_default().output_names)
    data_shapes = property(lambda self: self._curr_module.data_shapes)
    label_shapes = property(lambda self: self._curr_module.label_shapes)
    output_shapes = property(lambda self: self._curr_module.output_shapes)

    def _default_module(self):
        if self._default_bucket_key not in self._buckets:
            return self._module_for(self._default_bucket_key)
        return self._buckets[self._default_bucket_key]

    def _curr_or_default(self):
        return self._curr_module or self._default_module()

    # ---- binding and parameters ----------------------------------------------------------
    def bind(self, data_shapes, label_shapes=None, for_training=True, inputs_need_grad=False,
             force_rebind=False, shared_module=None, grad_req="write"):
        if self.binded and not force_rebind:
            return
        if shared_module is not None:
            raise KilnError("BucketingModule.bind: shared_module is not supported"
                            + where_in_user_code())
        self.for_training, self._inputs_need_grad = for_training, inputs_need_grad
        self._grad_req = grad_req
        module = self._module_for(self._default_bucket_key)
        module.bind(data_shapes, label_shapes, for_training, inputs_need_grad,
                    grad_req=grad_req)
        self._buckets = {self._default_bucket_key: module}
        self._curr_module, self._curr_bucket_key = module, self._default_bucket_key
        self.binded = True

    def switch_bucket(self, bucket_key, data_shapes, label_shapes=None):
        """Make `bucket_key`'s module current, building it on first use with the default
        bucket's parameter arrays and optimizer."""
        self._need("bind")
        default = self._buckets[self._default_bucket_key]
        if bucket_key not in self._buckets:
            module = self._module_for(bucket_key)
            module.bind(data_shapes, label_shapes, self.for_training,
                        self._inputs_need_grad, grad_req=self._grad_req)
            self._share(default, module)
            self._buckets[bucket_key] = module
            if getattr(self, "_monitor", None) is not None:
                module.install_monitor(self._monitor)
        module = self._buckets[bucket_key]
        if data_shapes is not None and _shapes(data_shapes) != _shapes(module.data_shapes):
            # a rebind makes new arrays: point every bucket at the default's again after it
            module._sync_params()
            module.reshape(data_shapes, label_shapes)
            for other in self._buckets.values():
                if other is not default:
                    self._share(default, other)
        self._curr_module, self._curr_bucket_key = module, bucket_key

    @staticmethod
    def _share(default, module):
        shared_ex, ex = default._exec, module._exec
        for table, source in ((ex.arg_dict, shared_ex.arg_dict),
                              (ex.aux_dict, shared_ex.aux_dict)):
            for name in list(table):
                if name in module._param_names + module._aux_names and name in source:
                    if tuple(source[name].shape) != tuple(table[name].shape):
                        raise KilnError(f"BucketingModule: parameter {name!r} has shape "
                                        f"{tuple(table[name].shape)} in this bucket and "
                                        f"{tuple(source[name].shape)} in the default one"
                                        + where_in_user_code())
                    table[name] = source[name]
        index = default._param_index
        for name in module._param_names:
            index.setdefault(name, len(index))
        module._param_index = index
        module.params_initialized = default.params_initialized
        if default.params_initialized:
            module._sync_params()
        if default.optimizer_initialized:
            module._optimizer, module._states = default._optimizer, default._states
            module.optimizer_initialized = True

    def init_params(self, initializer=None, arg_params=None, aux_params=None,
                    allow_missing=False, force_init=False, allow_extra=False):
        if self.params_initialized and not force_init:
            return
        self._need("bind")
        default = self._buckets[self._default_bucket_key]
        default.init_params(initializer, arg_params, aux_params, allow_missing, force_init,
                            allow_extra)
        self._after_params(default)

    def set_params(self, arg_params, aux_params=None, allow_missing=False, force_init=True,
                   allow_extra=False):
        self._need("bind")
        default = self._buckets[self._default_bucket_key]
        default.set_params(arg_params, aux_params, allow_missing, force_init, allow_extra)
        self._after_params(default)

    def _after_params(self, default):
        for module in self._buckets.values():
            if module is not default:
                module.params_initialized = True
                module._sync_params()
        self.params_initialized = True

    def get_params(self):
        self._need("params")
        return self._buckets[self._default_bucket_key].get_params()

    def init_optimizer(self, kvstore="local", optimizer="sgd",
                       optimizer_params=(("learning_rate", 0.01),), force_init=False):
        if self.optimizer_initialized and not force_init:
            return
        self._need("params")
        default = self._buckets[self._default_bucket_key]
        default.init_optimizer(kvstore, optimizer, optimizer_params, force_init=True)
        for module in self._buckets.values():
            if module is not default:
                module._optimizer, module._states = default._optimizer, default._states
                module.optimizer_initialized = True
        self.optimizer_initialized = True

    # ---- running -------------------------------------------------------------------------
    def prepare(self, data_batch, sparse_row_id_fn=None):
        """Build the batch's bucket module ahead of forward (MXNet's hook)."""
        self._switch_for(data_batch)

    def _switch_for(self, data_batch):
        key = getattr(data_batch, "bucket_key", None)
        if key is None:
            key = self._default_bucket_key
        self.switch_bucket(key, data_batch.provide_data, data_batch.provide_label)

    def forward(self, data_batch, is_train=None):
        self._need("params")
        current = self._curr_bucket_key
        self._switch_for(data_batch)
        if self._curr_bucket_key != current:
            self._curr_module._sync_params()
        self._curr_module.forward(data_batch, is_train=is_train)

    def backward(self, out_grads=None):
        self._need("bind")
        self._curr_module.backward(out_grads)

    def update(self):
        self._need("optimizer")
        self._curr_module.update()

    def get_outputs(self, merge_multi_context=True):
        return self._curr_module.get_outputs(merge_multi_context)

    def get_input_grads(self, merge_multi_context=True):
        return self._curr_module.get_input_grads(merge_multi_context)

    def update_metric(self, eval_metric, labels, pre_sliced=False):
        self._curr_module.update_metric(eval_metric, labels, pre_sliced)

    def save_checkpoint(self, prefix, epoch, remove_amp_cast=False):
        """The default bucket's symbol and the shared parameters."""
        self._buckets[self._default_bucket_key].save_checkpoint(prefix, epoch)

    def install_monitor(self, mon):
        """Watch every bucket's executor, present and future."""
        self._need("bind")
        self._monitor = mon
        for module in self._buckets.values():
            module.install_monitor(mon)
