"""The few evaluation metrics Module.score accepts by name ('acc', 'mse', 'mae'), or any
object with update(labels, preds) and get_name_value()."""
import numpy as _np

from ..base import KilnError


class _Metric:
    def __init__(self, name, fn):
        self.name, self.fn, self.total, self.count = name, fn, 0.0, 0

    def update(self, labels, preds):
        for label, pred in zip(labels, preds):
            value, n = self.fn(_np.asarray(label.asnumpy()), _np.asarray(pred.asnumpy()))
            self.total += value
            self.count += n

    def get(self):
        return self.name, self.total / max(1, self.count)

    def get_name_value(self):
        return [self.get()]


def _accuracy(label, pred):
    guess = pred.argmax(axis=-1) if pred.ndim > label.ndim else pred.round()
    return float((guess.reshape(-1) == label.reshape(-1)).sum()), label.size


def _mse(label, pred):
    return float(((pred.reshape(label.shape) - label) ** 2).mean()) * len(label), len(label)


def _mae(label, pred):
    return float(_np.abs(pred.reshape(label.shape) - label).mean()) * len(label), len(label)


_NAMED = {"acc": ("accuracy", _accuracy), "accuracy": ("accuracy", _accuracy),
          "mse": ("mse", _mse), "mae": ("mae", _mae)}


def create_metric(metric):
    if isinstance(metric, str):
        if metric.lower() not in _NAMED:
            raise KilnError(f"unknown metric {metric!r}; expected one of {sorted(_NAMED)} "
                            "or an object with update() and get_name_value()")
        return _Metric(*_NAMED[metric.lower()])
    if hasattr(metric, "update") and (hasattr(metric, "get_name_value")
                                      or hasattr(metric, "get")):
        if not hasattr(metric, "get_name_value"):
            metric.get_name_value = lambda: [metric.get()]
        return metric
    raise KilnError(f"not a metric: {metric!r:.60}")
