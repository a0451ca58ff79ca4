"""MXNet 1.x's BucketingModule: one Module per bucket key (sym_gen(key) gives its symbol,
data names and label names). Every bucket's module is bound with the default bucket's
module as `shared_module`, so all of them hold the same parameter and gradient arrays and
use one optimizer with its states: sequences of different lengths train one model.
A batch's `bucket_key` (with its provide_data/provide_label) picks the module."""
import logging
import warnings

from ..._core.base import KilnError, where_in_user_code
from .base_module import BaseModule
from .module import Module, load_checkpoint


class BucketingModule(BaseModule):
    """MXNet 1.x's BucketingModule: one Module per bucket key, built from `sym_gen(key)`, all
    sharing the default bucket's parameters and optimizer."""
    def __init__(self, sym_gen, default_bucket_key=None, logger=logging, context=None,
                 work_load_list=None, fixed_param_names=None, state_names=None,
                 group2ctxs=None, compression_params=None):
        super().__init__(logger=logger)
        if default_bucket_key is None:
            raise KilnError("BucketingModule: default_bucket_key is required"
                            + where_in_user_code())
        self._sym_gen, self._default_bucket_key = sym_gen, default_bucket_key
        self._module_args = dict(logger=logger, context=context,
                                 work_load_list=work_load_list,
                                 fixed_param_names=fixed_param_names,
                                 state_names=state_names, group2ctxs=group2ctxs,
                                 compression_params=compression_params)
        self._buckets, self._curr_module, self._curr_bucket_key = {}, None, None
        self._arg_params = self._aux_params = None
        self._params_dirty = False
        self._grad_req, self._monitor = None, None

    def _call_sym_gen(self, key):
        made = self._sym_gen(key)
        if not (isinstance(made, tuple) and len(made) == 3):
            raise KilnError(f"BucketingModule: sym_gen({key!r}) must return (symbol, "
                            f"data_names, label_names), got {type(made).__name__}"
                            + where_in_user_code())
        return made

    def _new_module(self, key):
        symbol, data_names, label_names = self._call_sym_gen(key)
        return Module(symbol, data_names, label_names, **self._module_args)

    def _reset_bind(self):
        self.binded = False
        self._buckets, self._curr_module, self._curr_bucket_key = {}, None, None

    # ---- what the current bucket's module says -------------------------------------------
    @property
    def default_bucket_key(self):
        return self._default_bucket_key

    @property
    def data_names(self):
        if self.binded:
            return self._curr_module.data_names
        return list(self._call_sym_gen(self._default_bucket_key)[1])

    @property
    def output_names(self):
        if self.binded:
            return self._curr_module.output_names
        return self._call_sym_gen(self._default_bucket_key)[0].list_outputs()

    @property
    def symbol(self):
        self._need("bind")
        return self._curr_module.symbol

    data_shapes = property(lambda self: self._curr_module.data_shapes)
    label_shapes = property(lambda self: self._curr_module.label_shapes)
    output_shapes = property(lambda self: self._curr_module.output_shapes)

    def _need(self, what):
        if not getattr(self, {"bind": "binded", "params": "params_initialized",
                              "optimizer": "optimizer_initialized"}[what]):
            raise KilnError(f"BucketingModule: call {what if what == 'bind' else 'init_' + what}"
                            "() first" + where_in_user_code())

    # ---- binding and parameters ----------------------------------------------------------
    def bind(self, data_shapes, label_shapes=None, for_training=True, inputs_need_grad=False,
             force_rebind=False, shared_module=None, grad_req="write"):
        if self.params_initialized:
            self._arg_params, self._aux_params = self.get_params()
        if force_rebind:
            self._reset_bind()
        if self.binded:
            self.logger.warning("Already bound, ignoring bind()")
            return
        if shared_module is not None:
            raise KilnError("BucketingModule.bind: shared_module is not supported"
                            + where_in_user_code())
        self.for_training, self.inputs_need_grad = for_training, inputs_need_grad
        self._grad_req = grad_req
        module = self._new_module(self._default_bucket_key)
        module.bind(data_shapes, label_shapes, for_training, inputs_need_grad,
                    grad_req=grad_req)
        self._buckets = {self._default_bucket_key: module}
        self._curr_module, self._curr_bucket_key = module, self._default_bucket_key
        self.binded = True
        if self.params_initialized:          # a loaded checkpoint, or a rebind
            self.set_params(self._arg_params, self._aux_params)

    def switch_bucket(self, bucket_key, data_shapes, label_shapes=None):
        """Make `bucket_key`'s module current, binding it on first use to the default
        bucket's parameter arrays and optimizer."""
        self._need("bind")
        if bucket_key not in self._buckets:
            module = self._new_module(bucket_key)
            module.bind(data_shapes, label_shapes, self._curr_module.for_training,
                        self._curr_module.inputs_need_grad,
                        shared_module=self._buckets[self._default_bucket_key],
                        grad_req=self._grad_req)
            if self._monitor is not None:
                module.install_monitor(self._monitor)
            self._buckets[bucket_key] = module
        self._curr_module, self._curr_bucket_key = self._buckets[bucket_key], bucket_key

    def init_params(self, initializer=None, arg_params=None, aux_params=None,
                    allow_missing=False, force_init=False, allow_extra=False):
        if self.params_initialized and not force_init:
            return
        self._need("bind")
        self._curr_module.init_params(initializer, arg_params, aux_params, allow_missing,
                                      force_init, allow_extra)
        self._params_dirty, self.params_initialized = False, True

    def set_params(self, arg_params, aux_params=None, allow_missing=False, force_init=True,
                   allow_extra=False):
        if not allow_missing:
            self.init_params(None, arg_params, aux_params, allow_missing, force_init,
                             allow_extra)
            return
        if self.params_initialized and not force_init:
            warnings.warn("Parameters already initialized and force_init=False. "
                          "set_params call ignored.", stacklevel=2)
            return
        self._curr_module.set_params(arg_params, aux_params, allow_missing, force_init,
                                     allow_extra)
        self._params_dirty, self.params_initialized = True, True

    def get_params(self):
        self._need("params")
        if not self.binded:          # loaded from a checkpoint, not bound yet
            return self._arg_params, self._aux_params
        return self._curr_module.get_params()

    @staticmethod
    def load(prefix, epoch, sym_gen=None, default_bucket_key=None, **kwargs):
        """A BucketingModule whose parameters come from a checkpoint (given at bind)."""
        _, args, auxs = load_checkpoint(prefix, epoch)
        mod = BucketingModule(sym_gen=sym_gen, default_bucket_key=default_bucket_key, **kwargs)
        mod._arg_params, mod._aux_params = args, auxs
        mod.params_initialized = True
        return mod

    def save_checkpoint(self, prefix, epoch, remove_amp_cast=False):
        """The default bucket's symbol and the shared parameters."""
        self._buckets[self._default_bucket_key].save_checkpoint(prefix, epoch)

    def init_optimizer(self, kvstore="local", optimizer="sgd",
                       optimizer_params=(("learning_rate", 0.01),), force_init=False):
        if self.optimizer_initialized and not force_init:
            return
        self._need("params")
        self._curr_module.init_optimizer(kvstore, optimizer, optimizer_params,
                                         force_init=force_init)
        for module in self._buckets.values():
            if module is not self._curr_module:
                module.borrow_optimizer(self._curr_module)
        self.optimizer_initialized = True

    # ---- running -------------------------------------------------------------------------
    def prepare(self, data_batch, sparse_row_id_fn=None):
        """Bind the batch's bucket module ahead of forward (MXNet's hook)."""
        self._need("bind")
        current_key, current = self._curr_bucket_key, self._curr_module
        self._switch_for(data_batch)
        self._curr_module, self._curr_bucket_key = current, current_key

    def _switch_for(self, data_batch):
        key = getattr(data_batch, "bucket_key", None)
        if key is None:
            key = self._default_bucket_key
        self.switch_bucket(key, getattr(data_batch, "provide_data", None),
                           getattr(data_batch, "provide_label", None))

    def forward(self, data_batch, is_train=None):
        self._need("params")
        self._switch_for(data_batch)
        self._curr_module.forward(data_batch, is_train=is_train)

    def backward(self, out_grads=None):
        self._need("bind")
        self._curr_module.backward(out_grads)

    def update(self):
        self._need("optimizer")
        self._params_dirty = True
        self._curr_module.update()

    def get_outputs(self, merge_multi_context=True):
        return self._curr_module.get_outputs(merge_multi_context)

    def get_input_grads(self, merge_multi_context=True):
        return self._curr_module.get_input_grads(merge_multi_context)

    def get_states(self, merge_multi_context=True):
        return self._curr_module.get_states(merge_multi_context)

    def set_states(self, states=None, value=None):
        self._curr_module.set_states(states, value)

    def update_metric(self, eval_metric, labels, pre_sliced=False):
        self._curr_module.update_metric(eval_metric, labels, pre_sliced)

    def install_monitor(self, mon):
        """Watch every bucket's executors, present and future."""
        self._need("bind")
        self._monitor = mon
        for module in self._buckets.values():
            module.install_monitor(mon)
