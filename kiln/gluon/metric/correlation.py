"""MXNet 1.9.1's F1, MCC, PCC, PearsonCorrelation and Perplexity metrics (mx.metric).

Each keeps a local window (since reset_local) and a global one (since reset). With
average='macro' (the default) a value is computed per update() call and those values are
averaged; with 'micro' the counts are pooled first, as in MXNet.
"""
import math

import numpy as _np

from ..._core.base import KilnError
from .base import EvalMetric, _register, _host, check_label_shapes


class _Confusion:
    """True/false positive/negative counts of a binary classifier."""

    def __init__(self):
        self.tp = self.fp = self.fn = self.tn = 0

    def add(self, label, pred):
        label = _np.asarray(label).astype(_np.int32).ravel()
        pred = _np.asarray(pred)
        if len(_np.unique(label)) > 2:
            raise KilnError("F1/MCC: only binary classification is supported; the labels "
                            f"hold {len(_np.unique(label))} classes")
        if pred.ndim != 2:
            raise KilnError(f"F1/MCC: predictions must be (batch, 2) class scores, got "
                            f"shape {pred.shape}")
        positive = pred.argmax(axis=1) == 1
        if positive.shape != label.shape:
            raise KilnError(f"F1/MCC: {label.size} labels for {positive.size} predictions")
        truth = label == 1
        self.tp += int((positive & truth).sum())
        self.fp += int((positive & ~truth).sum())
        self.fn += int((~positive & truth).sum())
        self.tn += int((~positive & ~truth).sum())

    @property
    def total(self):
        return self.tp + self.fp + self.fn + self.tn

    def fscore(self):
        precision = self.tp / (self.tp + self.fp) if self.tp + self.fp else 0.0
        recall = self.tp / (self.tp + self.fn) if self.tp + self.fn else 0.0
        return 2 * precision * recall / (precision + recall) if precision + recall else 0.0

    def mcc(self):
        if not self.total:
            return 0.0
        denom = 1.0
        for t in (self.tp + self.fp, self.tp + self.fn, self.tn + self.fp, self.tn + self.fn):
            if t:
                denom *= t
        return (self.tp * self.tn - self.fp * self.fn) / math.sqrt(denom)


class _BinaryMetric(EvalMetric):
    score = None

    def __init__(self, name, output_names=None, label_names=None, average="macro"):
        if average not in ("macro", "micro"):
            raise KilnError(f"{type(self).__name__}: average must be 'macro' or 'micro', got "
                            f"{average!r}")
        self.average = average
        super().__init__(name, output_names, label_names)

    def reset(self):
        self._global = [0.0, 0, _Confusion()]    # macro sum, macro count, pooled counts
        self.reset_local()

    @property
    def num_inst(self):
        """MXNet 1.x's count behind get(): updates (macro) or samples (micro)."""
        return self._local[1] if self.average == "macro" else self._local[2].total

    @property
    def global_num_inst(self):
        return self._global[1] if self.average == "macro" else self._global[2].total

    def reset_local(self):
        self._local = [0.0, 0, _Confusion()]

    def update(self, labels, preds):
        batch = _Confusion()
        for label, pred in self._pairs(labels, preds):
            batch.add(label, pred)
        for window in (self._local, self._global):
            window[0] += self.score(batch)
            window[1] += 1
            for k in ("tp", "fp", "fn", "tn"):
                setattr(window[2], k, getattr(window[2], k) + getattr(batch, k))

    def _value(self, window):
        if self.average == "macro":
            return (self.name, window[0] / window[1]) if window[1] else (self.name,
                                                                        float("nan"))
        pooled = window[2]
        return (self.name, self.score(pooled)) if pooled.total else (self.name, float("nan"))

    def get(self):
        return self._value(self._local)

    def get_global(self):
        return self._value(self._global)


@_register()
class F1(_BinaryMetric):
    """F1 score of binary predictions (class 1 is positive; preds are class scores)."""
    score = staticmethod(_Confusion.fscore)

    def __init__(self, name="f1", output_names=None, label_names=None, average="macro"):
        super().__init__(name, output_names, label_names, average)


@_register()
class MCC(_BinaryMetric):
    """Matthews correlation coefficient of binary predictions."""
    score = staticmethod(_Confusion.mcc)

    def __init__(self, name="mcc", output_names=None, label_names=None, average="macro"):
        super().__init__(name, output_names, label_names, average)


def _multiclass_mcc(cmat):
    n = cmat.sum()
    x, y = cmat.sum(axis=1), cmat.sum(axis=0)
    cov_xx, cov_yy = _np.sum(x * (n - x)), _np.sum(y * (n - y))
    if cov_xx == 0 or cov_yy == 0:
        return float("nan")
    return float(_np.sum(cmat.diagonal() * n - x * y) / (cov_xx * cov_yy) ** 0.5)


@_register()
class PCC(EvalMetric):
    """Multiclass Matthews correlation (Pearson correlation of the confusion matrix)."""

    def __init__(self, name="pcc", output_names=None, label_names=None,
                 has_global_stats=True):
        self.k = 2
        super().__init__(name, output_names, label_names)

    def reset(self):
        self.gcm = _np.zeros((self.k, self.k))
        self.global_num_inst = 0
        self.reset_local()

    def reset_local(self):
        self.lcm = _np.zeros((self.k, self.k))
        self.num_inst = 0

    def update(self, labels, preds):
        for label, pred in self._pairs(labels, preds):
            label = label.astype(_np.int32).ravel()
            pred = (pred.argmax(axis=1) if pred.shape != label.shape and pred.ndim > 1
                    else pred).astype(_np.int32).ravel()
            n = int(max(pred.max(initial=0), label.max(initial=0)))
            if n >= self.k:
                grow = n + 1 - self.k
                self.lcm = _np.pad(self.lcm, ((0, grow), (0, grow)))
                self.gcm = _np.pad(self.gcm, ((0, grow), (0, grow)))
                self.k += grow
            _np.add.at(self.lcm, (pred, label), 1)
            _np.add.at(self.gcm, (pred, label), 1)
        self.num_inst += 1
        self.global_num_inst += 1

    def get(self):
        return (self.name, _multiclass_mcc(self.lcm)) if self.num_inst else (self.name,
                                                                              float("nan"))

    def get_global(self):
        return ((self.name, _multiclass_mcc(self.gcm)) if self.global_num_inst
                else (self.name, float("nan")))


@_register("pearsonr")
class PearsonCorrelation(EvalMetric):
    """Pearson correlation of predictions and labels: per update, averaged ('macro'), or
    over everything seen ('micro')."""

    def __init__(self, name="pearsonr", output_names=None, label_names=None,
                 average="macro"):
        if average not in ("macro", "micro"):
            raise KilnError(f"PearsonCorrelation: average must be 'macro' or 'micro', got "
                            f"{average!r}")
        self.average = average
        super().__init__(name, output_names, label_names)

    def reset(self):
        super().reset()
        self._pred, self._label = [], []

    def update(self, labels, preds):
        for label, pred in self._pairs(labels, preds):
            check_label_shapes(label, pred, shape=True)
            label = label.ravel().astype(_np.float64)
            pred = pred.ravel().astype(_np.float64)
            if self.average == "macro":
                self.sum_metric += float(_np.corrcoef(pred, label)[0, 1])
            else:
                self._pred.append(pred)
                self._label.append(label)
            self.num_inst += 1

    def get(self):
        if self.num_inst == 0:
            return self.name, float("nan")
        if self.average == "macro":
            return self.name, self.sum_metric / self.num_inst
        pred, label = _np.concatenate(self._pred), _np.concatenate(self._label)
        return self.name, float(_np.corrcoef(pred, label)[0, 1])


@_register()
class Perplexity(EvalMetric):
    """exp(mean negative log-probability of the labels); `ignore_label` entries skipped."""

    def __init__(self, ignore_label, axis=-1, name="perplexity", output_names=None,
                 label_names=None):
        self.ignore_label, self.axis = ignore_label, axis
        super().__init__(name, output_names, label_names)

    def update(self, labels, preds):
        labels, preds = check_label_shapes(labels, preds, wrap=True)
        loss, num = 0.0, 0
        for label, pred in zip(labels, preds):
            label, pred = _host(label), _host(pred)
            if label.size != pred.size // pred.shape[-1]:
                raise KilnError(f"Perplexity: shape mismatch: labels {label.shape} vs. "
                                f"predictions {pred.shape}")
            label = label.reshape(-1).astype(_np.int64)
            axis = self.axis % pred.ndim
            moved = _np.moveaxis(pred, axis, -1).reshape(-1, pred.shape[axis])
            picked = moved[_np.arange(label.size), _np.clip(label, 0, moved.shape[1] - 1)]
            # the log and its sum in the predictions' float type, as MXNet computes them
            # (float32 for float32 predictions: its values to the last digit)
            real = picked.dtype.type if picked.dtype.kind == "f" and picked.itemsize >= 4 \
                else _np.float32
            picked = picked.astype(real)
            if self.ignore_label is not None:
                ignore = label == self.ignore_label
                num -= int(ignore.sum())
                picked = _np.where(ignore, real(1), picked)
            loss -= float(_np.sum(_np.log(_np.maximum(real(1e-10), picked))))
            num += picked.size
        self.sum_metric += loss
        self.num_inst += num

    def get(self):
        if self.num_inst == 0:
            return self.name, float("nan")
        return self.name, math.exp(self.sum_metric / self.num_inst)
