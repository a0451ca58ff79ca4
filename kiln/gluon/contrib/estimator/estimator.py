"""Estimator: `Estimator(net, loss, train_metrics, trainer=...).fit(train_loader, val_loader,
epochs=3)`, MXNet 1.9.1's training loop driven by event handlers (event_handler.py).

Default handlers are added unless the caller gives one of the same kind: stopping after
`epochs` or `batches`, the gradient update (Trainer.step with the batch size), the metric
updates, validation when `val_data` is given, and logging. Handlers run in order of their
`priority` (lower first).
"""
import copy
import logging
import sys
import warnings

from ...._core.base import KilnError
from ...._core.context import Context, cpu
from ... import metric as _metric
from ...data import DataLoader
from ...loss import Loss, SoftmaxCrossEntropyLoss
from .batch_processor import BatchProcessor
from .event_handler import (MetricHandler, ValidationHandler, LoggingHandler, StoppingHandler,
                            GradientUpdateHandler, TrainBegin, EpochBegin, BatchBegin,
                            BatchEnd, EpochEnd, TrainEnd, check_event_handlers, check_metrics)

_EVENTS = (("train_begin", TrainBegin), ("epoch_begin", EpochBegin),
           ("batch_begin", BatchBegin), ("batch_end", BatchEnd), ("epoch_end", EpochEnd),
           ("train_end", TrainEnd))


class Estimator:
    """MXNet's Gluon Estimator: trains `net` with `loss` and a `trainer` over a DataLoader (`fit`),
    evaluates it (`evaluate`), updates the train and validation metrics, and calls the event
    handlers at each stage."""
    def __init__(self, net, loss, train_metrics=None, val_metrics=None, initializer=None,
                 trainer=None, context=None, val_net=None, val_loss=None,
                 batch_processor=None):
        self.net = net
        self.loss = _check_loss(loss)
        self._train_metrics = check_metrics(train_metrics)
        if not self._train_metrics:
            if isinstance(self.loss, SoftmaxCrossEntropyLoss):
                self._train_metrics.append(_metric.Accuracy())
            self._train_metrics.append(_metric.Loss(self.loss.name.rstrip("0123456789")))
        for m in self._train_metrics:
            m.name = "training " + m.name
        self._val_metrics = check_metrics(val_metrics) or [copy.deepcopy(m) for m in
                                                           self._train_metrics]
        for m in self._val_metrics:
            m.name = (m.name.replace("training", "validation") if "training" in m.name
                      else "validation " + m.name)
        self.val_loss = self.loss if val_loss is None else _check_loss(val_loss)
        self.val_net = self.net if val_net is None else val_net
        self.logger = logging.Logger(name="Estimator", level=logging.INFO)
        self.logger.addHandler(logging.StreamHandler(sys.stdout))
        self.context = _check_context(context)
        self._initialize(initializer)
        self.trainer = self._check_trainer(trainer)
        if batch_processor is None:
            batch_processor = BatchProcessor()
        elif not (callable(getattr(batch_processor, "fit_batch", None))
                  and callable(getattr(batch_processor, "evaluate_batch", None))):
            raise KilnError("Estimator: a batch_processor needs fit_batch() and "
                            "evaluate_batch() methods")
        self.batch_processor = batch_processor
        self.max_epoch = self.max_batch = None
        self.batch_axis = 0

    @property
    def train_metrics(self):
        return self._train_metrics

    @property
    def val_metrics(self):
        return self._val_metrics

    def _initialize(self, initializer):
        params = self.net.collect_params()
        ready = all(getattr(p, "_data", None) is not None or getattr(p, "_deferred", None)
                    for p in params.values())
        if not ready or not params:
            self.net.initialize(init=initializer, ctx=self.context)
        elif initializer is not None:
            warnings.warn("Estimator: the network is already initialized; the initializer "
                          "is not used (net.initialize(init, force_reinit=True) would)")

    def _check_trainer(self, trainer):
        from ...trainer import Trainer
        if trainer is None:
            warnings.warn("Estimator: no trainer given; using SGD with learning rate 0.001")
            return Trainer(self.net.collect_params(), "sgd", {"learning_rate": 0.001})
        if not isinstance(trainer, Trainer):
            raise KilnError(f"Estimator: trainer must be a gluon.Trainer, got "
                            f"{type(trainer).__name__}")
        return trainer

    # ---- running ----------------------------------------------------------------------------
    def evaluate(self, val_data, batch_axis=0, event_handlers=None):
        """One pass over val_data updating val_metrics (reset first)."""
        _check_loader(val_data, "evaluate")
        for m in self.val_metrics:
            m.reset()
        handlers = self._with_defaults(event_handlers, validation=True)
        events = _by_event(handlers)
        for h in events["epoch_begin"]:
            h.epoch_begin(self)
        for batch in val_data:
            for h in events["batch_begin"]:
                h.batch_begin(self, batch=batch)
            _, label, pred, loss = self.batch_processor.evaluate_batch(self, batch, batch_axis)
            for h in events["batch_end"]:
                h.batch_end(self, batch=batch, pred=pred, label=label, loss=loss)
        for h in events["epoch_end"]:
            h.epoch_end(self)

    def fit(self, train_data, val_data=None, epochs=None, event_handlers=None, batches=None,
            batch_axis=0):
        """Train for `epochs` epochs or `batches` batches (exactly one of them)."""
        _check_loader(train_data, "fit")
        if (not epochs) == (not batches):
            raise KilnError(f"Estimator.fit: give exactly one of epochs and batches, got "
                            f"epochs={epochs!r}, batches={batches!r}")
        self.max_epoch, self.max_batch, self.batch_axis = epochs, batches, batch_axis
        events = _by_event(self._with_defaults(event_handlers, val_data=val_data))
        for h in events["train_begin"]:
            h.train_begin(self)
        while True:
            for h in events["epoch_begin"]:
                h.epoch_begin(self)
            for batch in train_data:
                for h in events["batch_begin"]:
                    h.batch_begin(self, batch=batch)
                _, label, pred, loss = self.batch_processor.fit_batch(self, batch, batch_axis)
                # every handler sees the batch end, even after one asks to stop
                results = [h.batch_end(self, batch=batch, pred=pred, label=label, loss=loss)
                           for h in events["batch_end"]]
                if any(results):
                    break
            if any([h.epoch_end(self) for h in events["epoch_end"]]):
                break
        for h in events["train_end"]:
            h.train_end(self)

    def _with_defaults(self, event_handlers, val_data=None, validation=False):
        handlers = check_event_handlers(event_handlers)
        metrics = self.val_metrics if validation else self.train_metrics

        def missing(kind):
            return not any(isinstance(h, kind) for h in handlers)
        added = []
        if not validation:
            added.append(StoppingHandler(self.max_epoch, self.max_batch))
            if missing(GradientUpdateHandler):
                added.append(GradientUpdateHandler())
        if missing(MetricHandler):
            added.append(MetricHandler(metrics=metrics))
        if not validation and val_data is not None and missing(ValidationHandler):
            added.append(ValidationHandler(val_data=val_data, eval_fn=self.evaluate))
        if missing(LoggingHandler):
            added.append(LoggingHandler(metrics=metrics))
        if handlers and added:
            known = set(map(id, self.val_metrics if validation else
                            self.train_metrics + self.val_metrics))
            for h in handlers:
                _check_metric_refs(h, known)
        return sorted(handlers + added, key=lambda h: getattr(h, "priority", 0))


def _check_loss(loss):
    if not isinstance(loss, Loss):
        raise KilnError(f"Estimator: loss must be a gluon.loss.Loss, got "
                        f"{type(loss).__name__}")
    return loss


def _check_context(context):
    if not context:
        return [cpu()]
    contexts = [context] if isinstance(context, Context) else context
    if not isinstance(contexts, list) or not all(isinstance(c, Context) for c in contexts):
        raise KilnError(f"Estimator: context must be a Context or a list of them, got "
                        f"{context!r}")
    for c in contexts:
        if c.device_type != "cpu":
            raise KilnError(f"Estimator: {c} is not available; kiln runs on cpu contexts")
    return contexts


def _check_loader(data, what):
    if not isinstance(data, DataLoader):
        raise KilnError(f"Estimator.{what}: expected a gluon.data.DataLoader, got "
                        f"{type(data).__name__} (wrap arrays in an ArrayDataset and a "
                        "DataLoader)")


def _by_event(handlers):
    return {name: [h for h in handlers if isinstance(h, kind)] for name, kind in _EVENTS}


def _check_metric_refs(handler, known):
    """A handler given by the caller must refer to the estimator's own metric objects."""
    for attr in ("metrics", "monitor"):
        ref = getattr(handler, attr, None)
        for m in (ref if isinstance(ref, list) else [ref] if ref is not None else []):
            if id(m) not in known:
                raise KilnError(f"Estimator: {type(handler).__name__} refers to metric "
                                f"{m.name!r}, which is not one of estimator.train_metrics or "
                                "estimator.val_metrics; use those objects")
