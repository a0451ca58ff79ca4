"""Classification metrics: Accuracy, TopKAccuracy, CrossEntropy and NegativeLogLikelihood."""
import numpy as _np

from ..._core.base import KilnError
from .base import EvalMetric, _register, check_label_shapes


@_register("acc")
class Accuracy(EvalMetric):
    """The fraction of predictions equal to the labels; predictions whose shape differs from the
    labels' are the argmax along `axis`."""
    def __init__(self, axis=1, name="accuracy", output_names=None, label_names=None):
        super().__init__(name, output_names, label_names, axis=axis)
        self.axis = axis

    def update(self, labels, preds):
        for label, pred in self._pairs(labels, preds):
            if pred.shape != label.shape:
                pred = pred.argmax(axis=self.axis)
            pred, label = pred.astype("int32").ravel(), label.astype("int32").ravel()
            check_label_shapes(label, pred, shape=True)
            self.sum_metric += int((pred == label).sum())
            self.num_inst += len(pred)


@_register("top_k_accuracy", "top_k_acc")
class TopKAccuracy(EvalMetric):
    """The fraction of samples whose label is among the `top_k` highest-scored classes."""
    def __init__(self, top_k=1, name="top_k_accuracy", output_names=None, label_names=None):
        if top_k <= 1:
            raise KilnError("TopKAccuracy: top_k must be more than 1 (use Accuracy)")
        super().__init__(f"{name}_{top_k}", output_names, label_names, top_k=top_k)
        self.top_k = top_k

    def update(self, labels, preds):
        for label, pred in self._pairs(labels, preds):
            order = _np.argsort(pred.astype("float32"), axis=-1)[..., ::-1][..., :self.top_k]
            label = label.astype("int32").reshape(-1, 1)
            self.sum_metric += int((order.reshape(len(label), -1) == label).any(axis=1).sum())
            self.num_inst += len(label)


@_register("ce")
class CrossEntropy(EvalMetric):
    """Mean of -log(p[label] + eps) over the examples: preds are probabilities."""
    def __init__(self, eps=1e-12, name="cross-entropy", output_names=None, label_names=None):
        super().__init__(name, output_names, label_names, eps=eps)
        self.eps = eps

    def update(self, labels, preds):
        for label, pred in self._pairs(labels, preds):
            label = label.ravel()
            if label.shape[0] != pred.shape[0]:
                raise KilnError(f"{type(self).__name__}: {label.shape[0]} labels for "
                                f"{pred.shape[0]} predictions")
            prob = pred[_np.arange(label.shape[0]), _np.int64(label)]
            self.sum_metric += float((-_np.log(prob + self.eps)).sum())
            self.num_inst += label.shape[0]


@_register("nll_loss")
class NegativeLogLikelihood(CrossEntropy):
    """The mean negative log of the probability each prediction gives its label (the same value as
    CrossEntropy)."""
    def __init__(self, eps=1e-12, name="nll-loss", output_names=None, label_names=None):
        super().__init__(eps, name, output_names, label_names)
