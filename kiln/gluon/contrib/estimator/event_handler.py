"""The Estimator's event handlers (MXNet 1.9.1's gluon.contrib.estimator.event_handler).

A handler subclasses the events it reacts to (TrainBegin, EpochBegin, BatchBegin, BatchEnd,
EpochEnd, TrainEnd); batch_end and epoch_end return True to stop training. One difference
from MXNet 1.9.1: with mode='auto', CheckpointHandler and EarlyStoppingHandler treat a
monitored metric as better when greater only if its name has 'acc' or 'f1' in it (MXNet's
test is always true, so it maximized losses too); otherwise smaller is better.
"""
import math
import os
import time
import warnings

from ...._core.base import KilnError
from ... import metric as _metric


class EventHandler:
    """The base class of the Estimator's event handlers; a handler also subclasses the events
    (TrainBegin, EpochEnd, ...) whose methods it implements."""
    pass


def check_event_handlers(handlers):
    if isinstance(handlers, EventHandler):
        return [handlers]
    handlers = list(handlers or [])
    for h in handlers:
        if not isinstance(h, EventHandler):
            raise KilnError(f"Estimator: event handlers must be EventHandlers, got "
                            f"{type(h).__name__}")
    return handlers


def check_metrics(metrics):
    """A list of EvalMetrics from a metric, a composite metric, a list, or None."""
    if isinstance(metrics, _metric.CompositeEvalMetric):
        return [m for inner in metrics.metrics for m in check_metrics(inner)]
    if isinstance(metrics, _metric.EvalMetric):
        return [metrics]
    metrics = list(metrics or [])
    for m in metrics:
        if not isinstance(m, _metric.EvalMetric):
            raise KilnError(f"Estimator: metrics must be EvalMetrics, got {type(m).__name__}")
    return metrics


class TrainBegin(EventHandler):
    """An event handler whose `train_begin(estimator)` runs once before training starts."""
    def train_begin(self, estimator, *args, **kwargs):
        pass


class TrainEnd(EventHandler):
    """An event handler whose `train_end(estimator)` runs once after training ends."""
    def train_end(self, estimator, *args, **kwargs):
        pass


class EpochBegin(EventHandler):
    """An event handler whose `epoch_begin(estimator)` runs before each epoch."""
    def epoch_begin(self, estimator, *args, **kwargs):
        pass


class EpochEnd(EventHandler):
    """An event handler whose `epoch_end(estimator)` runs after each epoch; returning True stops
    training."""
    def epoch_end(self, estimator, *args, **kwargs):
        return False


class BatchBegin(EventHandler):
    """An event handler whose `batch_begin(estimator, batch=...)` runs before each batch."""
    def batch_begin(self, estimator, *args, **kwargs):
        pass


class BatchEnd(EventHandler):
    """An event handler whose `batch_end(estimator, batch=, pred=, label=, loss=)` runs after each
    batch; returning True stops training."""
    def batch_end(self, estimator, *args, **kwargs):
        return False


class StoppingHandler(TrainBegin, BatchEnd, EpochEnd):
    """Stops after the estimator's max_epoch epochs or max_batch batches."""

    def __init__(self, max_epoch=None, max_batch=None):
        self.max_epoch, self.max_batch = max_epoch, max_batch
        self.current_batch = self.current_epoch = 0
        self.stop_training = False

    def train_begin(self, estimator, *args, **kwargs):
        self.max_epoch, self.max_batch = estimator.max_epoch, estimator.max_batch
        self.current_batch = self.current_epoch = 0
        self.stop_training = False

    def batch_end(self, estimator, *args, **kwargs):
        self.current_batch += 1
        self.stop_training = self.stop_training or self.current_batch == self.max_batch
        return self.stop_training

    def epoch_end(self, estimator, *args, **kwargs):
        self.current_epoch += 1
        self.stop_training = self.stop_training or self.current_epoch == self.max_epoch
        return self.stop_training


class MetricHandler(EpochBegin, BatchEnd):
    """Resets the metrics each epoch and updates them after each batch (a Loss metric with
    the batch's losses, the others with labels and predictions)."""

    def __init__(self, metrics, priority=-1000):
        self.metrics = check_metrics(metrics)
        self.priority = priority

    def epoch_begin(self, estimator, *args, **kwargs):
        for m in self.metrics:
            m.reset()

    def batch_end(self, estimator, *args, **kwargs):
        for m in self.metrics:
            if isinstance(m, _metric.Loss):
                m.update(0, kwargs["loss"])
            else:
                m.update(kwargs["label"], kwargs["pred"])


class ValidationHandler(TrainBegin, BatchEnd, EpochEnd):
    """Runs eval_fn(val_data) every epoch_period epochs (or batch_period batches)."""

    def __init__(self, val_data, eval_fn, epoch_period=1, batch_period=None, priority=-1000,
                 event_handlers=None):
        self.val_data, self.eval_fn = val_data, eval_fn
        self.epoch_period, self.batch_period = epoch_period, batch_period
        self.priority, self.event_handlers = priority, event_handlers
        self.current_batch = self.current_epoch = 0

    def _evaluate(self, estimator):
        self.eval_fn(val_data=self.val_data, batch_axis=estimator.batch_axis,
                     event_handlers=self.event_handlers)

    def train_begin(self, estimator, *args, **kwargs):
        self.current_batch = self.current_epoch = 0

    def batch_end(self, estimator, *args, **kwargs):
        self.current_batch += 1
        if self.batch_period and self.current_batch % self.batch_period == 0:
            self._evaluate(estimator)

    def epoch_end(self, estimator, *args, **kwargs):
        self.current_epoch += 1
        if self.epoch_period and self.current_epoch % self.epoch_period == 0:
            self._evaluate(estimator)


def _values(metrics):
    return ", ".join("%s: %.4f" % m.get() for m in metrics)


class LoggingHandler(TrainBegin, TrainEnd, EpochBegin, EpochEnd, BatchBegin, BatchEnd):
    """Logs the learning rate and metrics each epoch, or every `log_interval` batches."""

    def __init__(self, log_interval="epoch", metrics=None, priority=math.inf):
        if not isinstance(log_interval, int) and log_interval != "epoch":
            raise KilnError(f"LoggingHandler: log_interval must be an int or 'epoch', got "
                            f"{log_interval!r}")
        self.metrics = check_metrics(metrics)
        self.log_interval, self.priority = log_interval, priority
        self.batch_index = self.current_epoch = self.processed_samples = 0
        self.log_interval_time = 0.0

    def train_begin(self, estimator, *args, **kwargs):
        self.train_start = time.time()
        estimator.logger.info("Training begin: using optimizer %s with current learning "
                              "rate %.4f ", type(estimator.trainer.optimizer).__name__,
                              estimator.trainer.learning_rate)
        if estimator.max_epoch:
            estimator.logger.info("Train for %d epochs.", estimator.max_epoch)
        else:
            estimator.logger.info("Train for %d batches.", estimator.max_batch)
        self.batch_index = self.current_epoch = self.processed_samples = 0
        self.log_interval_time = 0.0

    def train_end(self, estimator, *args, **kwargs):
        msg = "Train finished using total %ds with %d epochs. " % (
            time.time() - self.train_start, self.current_epoch)
        estimator.logger.info((msg + _values(self.metrics)).rstrip(", "))

    def batch_begin(self, estimator, *args, **kwargs):
        self.batch_start = time.time()

    def batch_end(self, estimator, *args, **kwargs):
        if isinstance(self.log_interval, int):
            self.processed_samples += kwargs["batch"][0].shape[0]
            self.log_interval_time += time.time() - self.batch_start
            if self.batch_index % self.log_interval == 0:
                estimator.logger.info(
                    "[Epoch %d][Batch %d][Samples %s] time/interval: %.3fs %s",
                    self.current_epoch, self.batch_index, self.processed_samples,
                    self.log_interval_time, _values(self.metrics))
                self.log_interval_time = 0.0
        self.batch_index += 1

    def epoch_begin(self, estimator, *args, **kwargs):
        self.epoch_start = time.time()
        if any("training" in m.name for m in self.metrics):
            estimator.logger.info("[Epoch %d] Begin, current learning rate: %.4f",
                                  self.current_epoch, estimator.trainer.learning_rate)
        else:
            estimator.logger.info("Validation Begin")

    def epoch_end(self, estimator, *args, **kwargs):
        msg = "[Epoch %d] Finished in %.3fs, " % (self.current_epoch,
                                                  time.time() - self.epoch_start)
        estimator.logger.info((msg + _values(self.metrics)).rstrip(", "))
        self.current_epoch += 1
        self.batch_index = 0


def _better(monitor, mode, handler):
    """The comparison under which a new value of `monitor` is an improvement."""
    if mode not in ("auto", "min", "max"):
        warnings.warn(f"{handler}: unknown mode {mode!r}, using 'auto'", RuntimeWarning)
        mode = "auto"
    if mode == "auto":
        name = monitor.get()[0].lower()
        mode = "max" if "acc" in name or "f1" in name else "min"
    return (lambda a, b: a > b) if mode == "max" else (lambda a, b: a < b), mode


class CheckpointHandler(TrainBegin, BatchEnd, EpochEnd):
    """Saves `{prefix}-epoch{E}batch{B}.params` and `.states` every epoch_period epochs (or
    batch_period batches), keeps the last max_checkpoints, and with save_best also
    `{prefix}-best` when `monitor` improves."""

    def __init__(self, model_dir, model_prefix="model", monitor=None, verbose=0,
                 save_best=False, mode="auto", epoch_period=1, batch_period=None,
                 max_checkpoints=5, resume_from_checkpoint=False):
        if save_best and not isinstance(monitor, _metric.EvalMetric):
            raise KilnError("CheckpointHandler: save_best needs monitor= one of "
                            "estimator.train_metrics or estimator.val_metrics")
        if resume_from_checkpoint:
            raise KilnError("CheckpointHandler: resume_from_checkpoint is not supported; "
                            "load the .params and .states files before fit()")
        os.makedirs(model_dir, exist_ok=True)
        self.model_dir, self.model_prefix = model_dir, model_prefix
        self.monitor, self.verbose, self.save_best = monitor, verbose, save_best
        self.epoch_period, self.batch_period = epoch_period, batch_period
        self.max_checkpoints = max_checkpoints
        self.saved_checkpoints = []
        self.current_batch = self.current_epoch = 0
        if save_best:
            self.monitor_op, self.mode = _better(monitor, mode, "CheckpointHandler")

    def train_begin(self, estimator, *args, **kwargs):
        self.current_batch = self.current_epoch = 0
        if self.save_best:
            self.best = -math.inf if self.mode == "max" else math.inf

    def batch_end(self, estimator, *args, **kwargs):
        if self.batch_period and (self.current_batch + 1) % self.batch_period == 0:
            self._save_checkpoint(estimator)
        self.current_batch += 1

    def epoch_end(self, estimator, *args, **kwargs):
        if self.epoch_period and (self.current_epoch + 1) % self.epoch_period == 0:
            self._save_checkpoint(estimator)
        self.current_epoch += 1

    def _save(self, estimator, prefix):
        path = os.path.join(self.model_dir, prefix)
        estimator.net.save_parameters(path + ".params")
        estimator.trainer.save_states(path + ".states")

    def _save_checkpoint(self, estimator):
        prefix = "%s-epoch%dbatch%d" % (self.model_prefix, self.current_epoch,
                                        self.current_batch)
        self._save(estimator, prefix)
        self.saved_checkpoints.append(prefix)
        if len(self.saved_checkpoints) > self.max_checkpoints:
            old = self.saved_checkpoints.pop(0)
            for ext in (".params", ".states"):
                path = os.path.join(self.model_dir, old + ext)
                if os.path.exists(path):
                    os.remove(path)
        if self.verbose > 0:
            estimator.logger.info("[Epoch %d] CheckpointHandler: saved %s in %s",
                                  self.current_epoch, prefix, self.model_dir)
        if self.save_best:
            name, value = self.monitor.get()
            if math.isnan(value):
                warnings.warn(f"CheckpointHandler: {name} has no value yet; pass a metric "
                              "the estimator updates", RuntimeWarning)
            elif self.monitor_op(value, self.best):
                self._save(estimator, self.model_prefix + "-best")
                self.best = value


class EarlyStoppingHandler(TrainBegin, EpochEnd, TrainEnd):
    """Stops when `monitor` has not improved by min_delta for `patience` epochs."""

    def __init__(self, monitor, min_delta=0, patience=0, mode="auto", baseline=None):
        if not isinstance(monitor, _metric.EvalMetric) or isinstance(
                monitor, _metric.CompositeEvalMetric):
            raise KilnError("EarlyStoppingHandler: monitor must be one (non-composite) metric "
                            "of estimator.train_metrics or estimator.val_metrics")
        self.monitor, self.baseline, self.patience = monitor, baseline, patience
        self.monitor_op, self.mode = _better(monitor, mode, "EarlyStoppingHandler")
        self.min_delta = min_delta if self.mode == "max" else -min_delta
        self.wait = self.stopped_epoch = self.current_epoch = 0
        self.stop_training = False

    def train_begin(self, estimator, *args, **kwargs):
        self.wait = self.stopped_epoch = self.current_epoch = 0
        self.stop_training = False
        self.best = (self.baseline if self.baseline is not None else
                     -math.inf if self.mode == "max" else math.inf)

    def epoch_end(self, estimator, *args, **kwargs):
        name, value = self.monitor.get()
        if math.isnan(value):
            warnings.warn(f"EarlyStoppingHandler: {name} has no value; pass a metric the "
                          "estimator updates", RuntimeWarning)
        elif self.monitor_op(value - self.min_delta, self.best):
            self.best, self.wait = value, 0
        else:
            self.wait += 1
            if self.wait >= self.patience:
                self.stopped_epoch, self.stop_training = self.current_epoch, True
        self.current_epoch += 1
        return self.stop_training

    def train_end(self, estimator, *args, **kwargs):
        if self.stopped_epoch > 0:
            estimator.logger.info("[Epoch %d] EarlyStoppingHandler: early stopping due to %s "
                                  "not improving", self.stopped_epoch, self.monitor.get()[0])


class GradientUpdateHandler(BatchEnd):
    """Trainer.step with the batch size (the losses' first axes, over the contexts)."""

    def __init__(self, priority=-2000):
        self.priority = priority

    def batch_end(self, estimator, *args, **kwargs):
        loss = kwargs["loss"]
        losses = loss if isinstance(loss, list) else [loss]
        estimator.trainer.step(sum(value.shape[0] for value in losses))
