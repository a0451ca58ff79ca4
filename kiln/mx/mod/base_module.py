"""MXNet 1.x BaseModule's training and evaluation loops (fit, score, predict), on top of
a module's bind / init_params / forward / backward / update (module.py).

They follow MXNet 1.9.1: fit logs `Epoch[n] Train-<metric>=`, `Time cost=` and
`Validation-<metric>=` at INFO, calls batch-end callbacks with a BatchEndParam and
epoch-end callbacks with (epoch, symbol, arg_params, aux_params), and resets the training
iterator at the end of each epoch. A metric counts a padded last batch whole, as MXNet's
update_metric does; predict drops the padding.
"""
import logging
import time
from collections import namedtuple

import numpy as _np

from ... import init as kinit
from ...gluon import metric as kmetric
from ..._core.base import KilnError, where_in_user_code
from ..._core.ndarray import ndarray

# what a batch-end callback receives (kiln/mx/callback.py); MXNet's mx.model.BatchEndParam
BatchEndParam = namedtuple("BatchEndParams", ["epoch", "nbatch", "eval_metric", "locals"])


def _as_list(obj):
    return list(obj) if isinstance(obj, (list, tuple)) else [obj]


def _call_all(callbacks, *args):
    for callback in _as_list(callbacks) if callbacks is not None else ():
        callback(*args)


class BaseModule:
    """The interface every module has (MXNet's BaseModule): the state flags, and the loops
    over data iterators written on bind / init_params / forward / backward / update."""
    def __init__(self, logger=logging):
        self.logger = logger
        self.binded = self.for_training = self.inputs_need_grad = False
        self.params_initialized = self.optimizer_initialized = False
        self._symbol, self._total_exec_bytes = None, 0

    symbol = property(lambda self: self._symbol)

    def prepare(self, data_batch, sparse_row_id_fn=None):
        """MXNet's hook before each forward; nothing to prepare by default."""

    def forward_backward(self, data_batch):
        self.forward(data_batch, is_train=True)
        self.backward()

    def update_metric(self, eval_metric, labels, pre_sliced=False):
        eval_metric.update(labels, self.get_outputs())

    def _batches(self, eval_data, reset=True):
        if isinstance(eval_data, ndarray):
            from ...io import NDArrayIter
            eval_data = NDArrayIter(eval_data, batch_size=eval_data.shape[0])
        if reset and hasattr(eval_data, "reset"):
            eval_data.reset()
        return eval_data

    def iter_predict(self, eval_data, num_batch=None, reset=True, sparse_row_id_fn=None):
        """Yields (outputs without the batch's padding, batch number, batch)."""
        for nbatch, batch in enumerate(self._batches(eval_data, reset)):
            if num_batch is not None and nbatch == num_batch:
                break
            self.forward(batch, is_train=False)
            keep = batch.data[0].shape[0] - (getattr(batch, "pad", 0) or 0)
            yield [o[:keep] for o in self.get_outputs()], nbatch, batch

    def predict(self, eval_data, num_batch=None, merge_batches=True, reset=True,
                always_output_list=False, sparse_row_id_fn=None):
        outs = [[o.asnumpy() for o in outputs]
                for outputs, _, _ in self.iter_predict(eval_data, num_batch, reset)]
        if not outs:
            return []
        if not merge_batches:
            return [[ndarray._wrap(o) for o in batch] for batch in outs]
        merged = [ndarray._wrap(_np.concatenate(parts)) for parts in zip(*outs)]
        return merged[0] if len(merged) == 1 and not always_output_list else merged

    def score(self, eval_data, eval_metric, num_batch=None, batch_end_callback=None,
              score_end_callback=None, reset=True, epoch=0, sparse_row_id_fn=None):
        if not isinstance(eval_metric, kmetric.EvalMetric):
            eval_metric = kmetric.create(eval_metric)
        eval_metric.reset()
        done = 0
        for nbatch, batch in enumerate(self._batches(eval_data, reset)):
            if num_batch is not None and nbatch == num_batch:
                break
            self.forward(batch, is_train=False)
            self.update_metric(eval_metric, batch.label)
            _call_all(batch_end_callback, BatchEndParam(epoch, nbatch, eval_metric, locals()))
            done += 1
        _call_all(score_end_callback, BatchEndParam(epoch, done, eval_metric, locals()))
        return eval_metric.get_name_value()

    def fit(self, train_data, eval_data=None, eval_metric="acc", epoch_end_callback=None,
            batch_end_callback=None, kvstore="local", optimizer="sgd",
            optimizer_params=(("learning_rate", 0.01),), eval_end_callback=None,
            eval_batch_end_callback=None, initializer=None, arg_params=None,
            aux_params=None, allow_missing=False, force_rebind=False, force_init=False,
            begin_epoch=0, num_epoch=None, validation_metric=None, monitor=None,
            sparse_row_id_fn=None):
        if num_epoch is None:
            raise KilnError("Module.fit: give num_epoch (MXNet requires it too)"
                            + where_in_user_code())
        self.bind(data_shapes=train_data.provide_data, label_shapes=train_data.provide_label,
                  for_training=True, force_rebind=force_rebind)
        self.init_params(initializer if initializer is not None else kinit.Uniform(0.01),
                         arg_params, aux_params, allow_missing=allow_missing,
                         force_init=force_init)
        self.init_optimizer(kvstore=kvstore, optimizer=optimizer,
                            optimizer_params=optimizer_params)
        if monitor is not None:
            self.install_monitor(monitor)
        validation_metric = validation_metric if validation_metric is not None else eval_metric
        if not isinstance(eval_metric, kmetric.EvalMetric):
            eval_metric = kmetric.create(eval_metric)
        for epoch in range(begin_epoch, num_epoch):
            tic = time.time()
            eval_metric.reset()
            nbatch = 0
            for batch in train_data:
                if monitor is not None:
                    monitor.tic()
                self.forward_backward(batch)
                self.update()
                self.update_metric(eval_metric, batch.label)
                if monitor is not None:
                    monitor.toc_print()
                _call_all(batch_end_callback, BatchEndParam(epoch, nbatch, eval_metric,
                                                            locals()))
                nbatch += 1
            for name, value in eval_metric.get_global_name_value():
                self.logger.info("Epoch[%d] Train-%s=%f", epoch, name, value)
            self.logger.info("Epoch[%d] Time cost=%.3f", epoch, time.time() - tic)
            arg_now, aux_now = self.get_params()
            _call_all(epoch_end_callback, epoch, self.symbol, arg_now, aux_now)
            if eval_data is not None:
                result = self.score(eval_data, validation_metric,
                                    score_end_callback=eval_end_callback,
                                    batch_end_callback=eval_batch_end_callback, epoch=epoch)
                for name, value in result:
                    self.logger.info("Epoch[%d] Validation-%s=%f", epoch, name, value)
            if hasattr(train_data, "reset"):
                train_data.reset()
