"""Evaluation metrics: MXNet 1.x's `mx.metric` (2.x moved it to `gluon.metric`).

A metric accumulates over `update(labels, preds)` calls, each taking arrays or lists of
arrays (one pair per output), and `get()` returns `(name, value)`. Values are computed in
NumPy on host copies, as MXNet does.
"""
from .base import (EvalMetric, CompositeEvalMetric, Loss, CustomMetric, np, create,
                   check_label_shapes, register, alias)
from .classification import Accuracy, TopKAccuracy, CrossEntropy, NegativeLogLikelihood
from .regression import MAE, MSE, RMSE
from .correlation import F1, MCC, PCC, PearsonCorrelation, Perplexity

__all__ = ["EvalMetric", "CompositeEvalMetric", "Accuracy", "TopKAccuracy", "MAE", "MSE",
           "RMSE", "CrossEntropy", "NegativeLogLikelihood", "Loss", "CustomMetric", "create",
           "np", "F1", "MCC", "PCC", "PearsonCorrelation", "Perplexity"]
