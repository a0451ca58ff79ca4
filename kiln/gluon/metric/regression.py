"""Regression metrics: MAE, MSE and RMSE."""
import math

import numpy as _np

from .base import EvalMetric, _register


class _Regression(EvalMetric):
    """MXNet's MAE/MSE/RMSE: one instance per update pair, averaged over its elements."""
    def update(self, labels, preds):
        for label, pred in self._pairs(labels, preds):
            if label.ndim == 1:
                label = label.reshape(label.shape[0], 1)
            if pred.ndim == 1:
                pred = pred.reshape(pred.shape[0], 1)
            self.sum_metric += self._value(label, pred)
            self.num_inst += 1


@_register("mae")
class MAE(_Regression):
    """The mean absolute error between labels and predictions."""
    def __init__(self, name="mae", output_names=None, label_names=None):
        super().__init__(name, output_names, label_names)

    def _value(self, label, pred):
        return float(_np.abs(label - pred).mean())


@_register("mse")
class MSE(_Regression):
    """The mean squared error between labels and predictions."""
    def __init__(self, name="mse", output_names=None, label_names=None):
        super().__init__(name, output_names, label_names)

    def _value(self, label, pred):
        return float(((label - pred) ** 2.0).mean())


@_register("rmse")
class RMSE(_Regression):
    """The root of the mean squared error between labels and predictions."""
    def __init__(self, name="rmse", output_names=None, label_names=None):
        super().__init__(name, output_names, label_names)

    def _value(self, label, pred):
        return math.sqrt(float(((label - pred) ** 2.0).mean()))
