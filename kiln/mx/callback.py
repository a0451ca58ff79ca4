"""`mx.callback`: what Module.fit calls at the end of a batch or an epoch (MXNet 1.x).

A batch-end callback takes a BatchEndParam (epoch, nbatch, eval_metric, locals); an
epoch-end callback takes (epoch, symbol, arg_params, aux_params). Messages go to the
`logging` root logger at INFO, in MXNet's words, so scripts that parse them keep working.
"""
import logging
import sys
import time

from .model import save_checkpoint


def module_checkpoint(mod, prefix, period=1, save_optimizer_states=False):
    """An epoch-end callback saving `mod` every `period` epochs as prefix-%04d.params."""
    period = max(1, int(period))

    def _callback(iter_no, sym=None, arg=None, aux=None):
        if (iter_no + 1) % period == 0:
            mod.save_checkpoint(prefix, iter_no + 1)
    return _callback


def do_checkpoint(prefix, period=1):
    """An epoch-end callback writing prefix-symbol.json and prefix-%04d.params (the epoch
    counted from 1) every `period` epochs."""
    period = max(1, int(period))

    def _callback(iter_no, sym, arg, aux):
        if (iter_no + 1) % period == 0:
            save_checkpoint(prefix, iter_no + 1, sym, arg, aux)
    return _callback


def _metric_fields(name_value):
    return "".join(f"\t{name}={value:f}" for name, value in name_value)


def log_train_metric(period, auto_reset=False):
    """A batch-end callback logging the training metric every `period` batches."""
    def _callback(param):
        if param.nbatch % period == 0 and param.eval_metric is not None:
            for name, value in param.eval_metric.get_name_value():
                logging.info("Iter[%d] Batch[%d] Train-%s=%f", param.epoch, param.nbatch,
                             name, value)
            if auto_reset:
                param.eval_metric.reset_local()
    return _callback


class Speedometer:
    """Logs samples per second (and the metric) every `frequent` batches."""

    def __init__(self, batch_size, frequent=50, auto_reset=True):
        self.batch_size, self.frequent, self.auto_reset = batch_size, frequent, auto_reset
        self.init, self.tic, self.last_count = False, 0.0, 0

    def __call__(self, param):
        count = param.nbatch
        if self.last_count > count:          # a new epoch: start timing again
            self.init = False
        self.last_count = count
        if not self.init:
            self.init, self.tic = True, time.time()
            return
        if count % self.frequent:
            return
        elapsed = time.time() - self.tic
        speed = self.frequent * self.batch_size / elapsed if elapsed > 0 else float("inf")
        if param.eval_metric is None:
            logging.info("Iter[%d] Batch [%d]\tSpeed: %.2f samples/sec", param.epoch, count,
                         speed)
        else:
            name_value = param.eval_metric.get_name_value()
            first = count - self.frequent if self.auto_reset else 0
            if self.auto_reset:
                param.eval_metric.reset_local()
            logging.info("Epoch[%d] Batch [%d-%d]\tSpeed: %.2f samples/sec%s", param.epoch,
                         first, count, speed, _metric_fields(name_value))
        self.tic = time.time()


class ProgressBar:
    """Draws a text progress bar of `total` batches on stdout."""

    def __init__(self, total, length=80):
        self.total, self.bar_len = max(1, int(total)), int(length)

    def __call__(self, param):
        filled = int(round(self.bar_len * param.nbatch / float(self.total)))
        percents = int(100.0 * param.nbatch / float(self.total) + 0.5)
        sys.stdout.write(f"[{'=' * filled}{'-' * (self.bar_len - filled)}] {percents}%\r")
        sys.stdout.flush()


class LogValidationMetricsCallback:
    """A score-end callback logging the validation metric of the epoch."""

    def __call__(self, param):
        if not param.eval_metric:
            return
        for name, value in param.eval_metric.get_name_value():
            logging.info("Epoch[%d] Validation-%s=%f", param.epoch, name, value)
