"""MXNet 1.9.1's other gluon losses: CTC, cosine embedding, logistic, Poisson NLL, SDML and
triplet. Composed of kiln.np/npx functions like loss.py's, so they differentiate and trace.

Where MXNet's result shape is odd, kiln's follows the loss convention of loss.py (one value
per sample) except PoissonNLLLoss, whose value MXNet defines as the mean over everything
(a scalar), which kiln keeps. CosineEmbeddingLoss gives (batch,) where MXNet gives
(batch, 1) with the same values.
"""
import math

import numpy as _np

from .. import np as knp, npx
from .._core.base import KilnError
from .loss import Loss, _apply_weighting, _reshape_like, _batch_mean, _as_array

_NEG = -1e30    # log(0) that stays finite, so log-sum-exp gradients are 0, not NaN


def _logsumexp(*terms):
    m = terms[0]
    for t in terms[1:]:
        m = knp.maximum(m, t)
    m = npx.stop_gradient(m)
    total = knp.exp(terms[0] - m)
    for t in terms[1:]:
        total = total + knp.exp(t - m)
    return m + knp.log(total)


class CTCLoss(Loss):
    """Connectionist temporal classification loss; the blank is the last class.

    pred: unnormalized scores (batch, time, classes) ('NTC') or 'TNC'; label: class ids
    (batch, length) ('NT') or 'TN', padded with -1 when label_lengths is not given.
    The forward recursion runs in log space over time, one step of array ops per frame
    (hybridized, the loop is unrolled into the graph)."""

    def __init__(self, layout="NTC", label_layout="NT", weight=None, **kwargs):
        if layout not in ("NTC", "TNC") or label_layout not in ("NT", "TN"):
            raise KilnError(f"CTCLoss: layout must be 'NTC' or 'TNC' and label_layout 'NT' "
                            f"or 'TN', got {layout!r}, {label_layout!r}")
        self._layout, self._label_layout = layout, label_layout
        super().__init__(weight, label_layout.find("N"), **kwargs)

    def forward(self, pred, label, pred_lengths=None, label_lengths=None, sample_weight=None):
        if self._layout == "NTC":
            pred = knp.swapaxes(pred, 0, 1)
        label = _as_array(label)
        if self._batch_axis == 1:
            label = knp.swapaxes(label, 0, 1)
        steps, batch, classes = pred.shape
        blank = classes - 1
        _check_label_ids(label, blank)
        if label_lengths is None:       # padding with -1 at the end
            lengths = knp.sum((label >= 0).astype("int64"), axis=1)
        else:
            lengths = knp.reshape(_as_array(label_lengths).astype("int64"), (batch,))
        ext, skip_ok = _extended(label, lengths, blank)
        size = ext.shape[1]
        logp = npx.log_softmax(pred, axis=-1)
        emit = knp.take_along_axis(logp, knp.broadcast_to(ext, (steps, batch, size)), axis=2)
        first = _np.full((batch, size), _NEG, _np.float32)
        first[:, :2] = 0.0
        alpha = emit[0] + knp.array(first)
        neg1 = knp.full((batch, 1), _NEG, dtype=pred.dtype)
        neg2 = knp.full((batch, 2), _NEG, dtype=pred.dtype)
        frames = (None if pred_lengths is None else
                  knp.reshape(_as_array(pred_lengths).astype("int64"), (batch, 1)))
        for t in range(1, steps):
            one = knp.concatenate([neg1, alpha[:, :-1]], axis=1)
            two = knp.where(skip_ok, knp.concatenate([neg2, alpha[:, :-2]], axis=1), _NEG)
            new = _logsumexp(alpha, one, two) + emit[t]
            alpha = new if frames is None else knp.where(frames > t, new, alpha)
        last = knp.reshape(2 * lengths, (batch, 1))
        end = knp.take_along_axis(alpha, last, axis=1)
        before = knp.take_along_axis(alpha, knp.maximum(last - 1, 0), axis=1)
        before = knp.where(last > 0, before, _NEG)
        loss = -knp.reshape(_logsumexp(end, before), (batch,))
        return _apply_weighting(loss, self._weight, sample_weight)


def _check_label_ids(label, blank):
    if getattr(label, "_node", None) is None:    # concrete (eager): the values can be read
        ids = label.asnumpy()
        if (ids >= blank).any():
            raise KilnError(f"CTCLoss: label ids must be below {blank} (the last class is "
                            f"the blank), got {ids.max():g}")


def _extended(label, lengths, blank):
    """The blank-interleaved labels (batch, 2L+1), int64, and where a path may skip the
    blank between two labels (they differ), both as arrays of the traced program."""
    batch, length = label.shape
    inside = knp.arange(length).reshape(1, length) < knp.reshape(lengths, (batch, 1))
    ids = knp.where(inside, label, blank).astype("int64")
    blanks = knp.full((batch, length), blank, dtype="int64")
    ext = knp.reshape(knp.stack([blanks, ids], axis=2), (batch, 2 * length))
    ext = knp.concatenate([ext, blanks[:, :1]], axis=1)
    differs = (ext[:, 2:] != blank) * (ext[:, 2:] != ext[:, :-2])
    skip_ok = knp.concatenate([knp.zeros((batch, 2), dtype=bool), differs], axis=1)
    return ext, skip_ok


class CosineEmbeddingLoss(Loss):
    """1 - cos(x1, x2) for label 1, max(0, cos(x1, x2) - margin) for label -1."""

    def __init__(self, weight=None, batch_axis=0, margin=0, **kwargs):
        super().__init__(weight, batch_axis, **kwargs)
        self._margin = margin

    def forward(self, input1, input2, label, sample_weight=None):
        input1 = _reshape_like(input1, input2)
        label = knp.reshape(_as_array(label), (-1,))
        norms = knp.maximum(knp.linalg.norm(input1, axis=-1) * knp.linalg.norm(input2, axis=-1),
                            1e-12)
        cos = knp.sum(input1 * input2, axis=-1) / norms
        cos = knp.reshape(cos, (-1,))
        loss = (1 - cos) * (label == 1) + knp.maximum(0.0, (label == -1) * (cos - self._margin))
        return _apply_weighting(loss, self._weight, sample_weight)


class LogisticLoss(Loss):
    """log(1 + exp(-pred * label)) for labels in {-1, 1} ('signed') or {0, 1} ('binary')."""

    def __init__(self, weight=None, batch_axis=0, label_format="signed", **kwargs):
        super().__init__(weight, batch_axis, **kwargs)
        if label_format not in ("signed", "binary"):
            raise KilnError(f"LogisticLoss: label_format must be 'signed' or 'binary', got "
                            f"{label_format!r}")
        self._label_format = label_format

    def forward(self, pred, label, sample_weight=None):
        label = _reshape_like(_as_array(label), pred)
        if self._label_format == "signed":
            label = (label + 1.0) / 2.0
        loss = npx.relu(pred) - pred * label + npx.softplus(-knp.abs(pred))
        loss = _apply_weighting(loss, self._weight, sample_weight)
        return _batch_mean(loss, self._batch_axis)


class PoissonNLLLoss(Loss):
    """exp(pred) - target*pred (from_logits) or pred - target*log(pred + eps); with
    compute_full, Stirling's term for targets > 1. The mean over all elements (MXNet)."""

    def __init__(self, weight=None, from_logits=True, batch_axis=0, compute_full=False,
                 **kwargs):
        super().__init__(weight, batch_axis, **kwargs)
        self._from_logits, self._compute_full = from_logits, compute_full

    def forward(self, pred, target, sample_weight=None, epsilon=1e-08):
        target = _reshape_like(_as_array(target), pred)
        if self._from_logits:
            loss = knp.exp(pred) - target * pred
        else:
            loss = pred - target * knp.log(pred + epsilon)
        if self._compute_full:
            big = target > 1
            safe = knp.where(big, target, 1.0)
            stirling = safe * knp.log(safe) - safe + 0.5 * knp.log(2 * math.pi * safe)
            loss = loss + stirling * big
        loss = _apply_weighting(loss, self._weight, sample_weight)
        return knp.mean(loss)


class SDMLLoss(Loss):
    """Smoothed deep metric learning loss over a batch of aligned pairs (x1[i], x2[i])."""

    def __init__(self, smoothing_parameter=0.3, weight=1., batch_axis=0, **kwargs):
        super().__init__(weight, batch_axis, **kwargs)
        self.smoothing_parameter = smoothing_parameter

    def forward(self, x1, x2):
        if x1.shape != x2.shape or x1.ndim != 2:
            raise KilnError(f"SDMLLoss: expected two (batch, dim) inputs of one shape, got "
                            f"{x1.shape} and {x2.shape}")
        n = x1.shape[0]
        diff = knp.expand_dims(x1, 1) - knp.expand_dims(x2, 0)
        distances = knp.sum(diff * diff, axis=2)
        gold = _np.eye(n, dtype=_np.float32)
        labels = gold * (1 - self.smoothing_parameter) + (1 - gold) * (
            self.smoothing_parameter / (n - 1))
        # MXNet 1.9.1's KLDivLoss sums over the classes (kiln's KLDivLoss averages)
        log_probs = npx.log_softmax(-distances, axis=1)
        labels = knp.array(labels)
        loss = knp.sum(labels * (knp.log(labels + 1e-12) - log_probs), axis=1)
        return _apply_weighting(loss, self._weight)


class TripletLoss(Loss):
    """max(0, |pred - positive|^2 - |pred - negative|^2 + margin), summed over features."""

    def __init__(self, margin=1, weight=None, batch_axis=0, **kwargs):
        super().__init__(weight, batch_axis, **kwargs)
        self._margin = margin

    def forward(self, pred, positive, negative):
        positive = _reshape_like(_as_array(positive), pred)
        negative = _reshape_like(_as_array(negative), pred)
        gap = knp.square(positive - pred) - knp.square(negative - pred)
        axes = tuple(i for i in range(gap.ndim) if i != self._batch_axis)
        loss = npx.relu(knp.sum(gap, axis=axes) + self._margin)
        return _apply_weighting(loss, self._weight, None)
