"""Connectionist temporal classification (MXNet's gluon.loss.CTCLoss): Graves' forward
recursion in log space, composed of kiln.np/npx functions, so it differentiates and traces.
"""
import numpy as _np

from ... import np as knp, npx
from ..._core.base import KilnError
from .base import Loss, _apply_weighting, _as_array

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
        _check_label_ids(label, classes)
        if label_lengths is None:       # padding with -1 at the end
            lengths = knp.sum((label >= 0).astype("int64"), axis=1)
        else:
            lengths = knp.reshape(_as_array(label_lengths).astype("int64"), (batch,))
        ext, skip_ok = _extended(label, lengths, blank)
        size = ext.shape[1]
        frames = (None if pred_lengths is None else
                  knp.reshape(_as_array(pred_lengths).astype("int64"), (batch, 1)))
        if frames is not None:
            # frames past a sequence's end may hold anything (NaN padding): zero them before
            # the softmax, so their gradient is 0 as MXNet's, not 0 * NaN
            live = knp.arange(steps).reshape(steps, 1, 1) < knp.reshape(frames, (1, batch, 1))
            pred = knp.where(live, pred, 0)
        logp = npx.log_softmax(pred, axis=-1)
        emit = knp.take_along_axis(logp, knp.broadcast_to(ext, (steps, batch, size)), axis=2)
        first = _np.full((batch, size), _NEG, _np.float32)
        first[:, :2] = 0.0
        alpha = emit[0] + knp.array(first)
        neg1 = knp.full((batch, 1), _NEG, dtype=pred.dtype)
        neg2 = knp.full((batch, 2), _NEG, dtype=pred.dtype)
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


def _check_label_ids(label, classes):
    """Label ids are classes; MXNet takes the blank's id inside a label too (a symbol of its
    own there, scored with the blank's probability)."""
    if getattr(label, "_node", None) is None:    # concrete (eager): the values can be read
        ids = label.asnumpy()
        if (ids >= classes).any():
            raise KilnError(f"CTCLoss: label ids must be below the {classes} classes (the "
                            f"last is the blank), got {ids.max():g}")


def _extended(label, lengths, blank):
    """The blank-interleaved labels (batch, 2L+1), int64, and where a path may skip the
    blank between two labels (they differ), both as arrays of the traced program. Skips are
    decided by position, as MXNet's (warp-ctc's) recursion does: a label slot is odd, even
    when its id is the blank's."""
    batch, length = label.shape
    inside = knp.arange(length).reshape(1, length) < knp.reshape(lengths, (batch, 1))
    ids = knp.where(inside, label, blank).astype("int64")
    blanks = knp.full((batch, length), blank, dtype="int64")
    ext = knp.reshape(knp.stack([blanks, ids], axis=2), (batch, 2 * length))
    ext = knp.concatenate([ext, blanks[:, :1]], axis=1)
    differs = (ext[:, 2:] != blank) * (ext[:, 2:] != ext[:, :-2])
    skip_ok = knp.concatenate([knp.zeros((batch, 2), dtype=bool), differs], axis=1)
    return ext, skip_ok
