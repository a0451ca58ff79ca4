"""MXNet's CTCLoss operator (`nd.CTCLoss`, `nd.ctc_loss`, `nd.contrib.CTCLoss`): the
negative log likelihood of each label sequence under per-step softmax outputs.

The recursion is gluon.loss.CTCLoss's (kiln/gluon/loss/ctc.py: Graves' forward pass in
log space over registry ops, so it differentiates and traces); this op adapts MXNet's
operator conventions to it: data (time, batch, alphabet), and the blank 'first' (channel 0,
labels padded with 0) or 'last' (channel C-1, padded with -1), the loss's own convention.
"""
import numpy as _np

from ... import np as knp
from ..._core.base import KilnError
from .table import _op

_LOSS = []


def _gluon_ctc():
    if not _LOSS:
        from ...gluon.loss import CTCLoss as GluonCTC
        _LOSS.append(GluonCTC(layout="TNC", label_layout="NT"))
    return _LOSS[0]


@_op("CTCLoss ctc_loss _contrib_CTCLoss _contrib_ctc_loss",
     ("data", "label", "data_lengths", "label_lengths"))
def CTCLoss(data, label, data_lengths=None, label_lengths=None, use_data_lengths=False,
            use_label_lengths=False, blank_label="first", **_):
    """The connectionist temporal classification loss of `data` (time, batch, alphabet) against
    `label` (batch, label length), one value per sequence; the blank is the `'first'` or
    `'last'` class."""
    if blank_label not in ("first", "last"):
        raise KilnError(f"CTCLoss: blank_label must be 'first' or 'last', got {blank_label!r}")
    if data.ndim != 3 or label.ndim != 2 or label.shape[0] != data.shape[1]:
        raise KilnError(f"CTCLoss: expected data (time, batch, alphabet) and label (batch, "
                        f"length), got {tuple(data.shape)} and {tuple(label.shape)}")
    alphabet = data.shape[2]
    lab = label.astype(_np.int64)
    if blank_label == "first":
        # move the blank from channel 0 to the last, and the labels 1.. down by one
        order = _np.concatenate([_np.arange(1, alphabet), [0]])
        data = knp.take(data, order, axis=2)
        lab = lab - 1                       # the padding 0 becomes -1
    lengths = label_lengths if use_label_lengths else None
    if lengths is None:                     # up to the first padding value, as MXNet
        is_pad = (lab < 0).astype(_np.int64)
        lengths = knp.sum(1 - (knp.cumsum(is_pad, axis=1) > 0).astype(_np.int64), axis=1)
    steps = data_lengths if use_data_lengths else None
    return _gluon_ctc()(data, knp.where(lab < 0, -1, lab), steps, lengths)
