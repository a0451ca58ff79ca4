"""MXNet's CTCLoss (`nd.CTCLoss`, `nd.ctc_loss`, `nd.contrib.CTCLoss`): the negative log
likelihood of each label sequence under per-step softmax outputs, by Graves' forward
recursion in log space.

The recursion is an unrolled loop over time of registry ops (a pick of each step's
log-probabilities at the extended label, shifted adds, a guarded log-sum-exp), so the
gradient is autograd's and the whole loss traces. The label layout follows MXNet:
blank 'first' (channel 0, padding 0) or 'last' (channel C-1, padding -1).
"""
import numpy as _np

from . import np as knp, npx as knpx
from .base import KilnError
from .mxnet_ops import _op

_NEG = -1e30      # log(0) stand-in: finite, so no inf - inf appears in the recursion


def _logsumexp(*terms):
    m = terms[0]
    for t in terms[1:]:
        m = knp.maximum(m, t)
    m = knpx.stop_gradient(m)    # any shift is exact; a constant one keeps the gradient simple
    total = knp.exp(terms[0] - m)
    for t in terms[1:]:
        total = total + knp.exp(t - m)
    return m + knp.log(total)


def _shift(x, k):
    """x moved k places right along the last axis, the front filled with log(0)."""
    pad = knp.full(x.shape[:-1] + (k,), _NEG, dtype=x.dtype)
    return knp.concatenate([pad, x[..., :x.shape[-1] - k]], axis=-1)


@_op("CTCLoss ctc_loss _contrib_CTCLoss _contrib_ctc_loss",
     ("data", "label", "data_lengths", "label_lengths"))
def CTCLoss(data, label, data_lengths=None, label_lengths=None, use_data_lengths=False,
            use_label_lengths=False, blank_label="first", **_):
    if blank_label not in ("first", "last"):
        raise KilnError(f"CTCLoss: blank_label must be 'first' or 'last', got {blank_label!r}")
    if data.ndim != 3 or label.ndim != 2 or label.shape[0] != data.shape[1]:
        raise KilnError(f"CTCLoss: expected data (time, batch, alphabet) and label (batch, "
                        f"length), got {tuple(data.shape)} and {tuple(label.shape)}")
    steps, batch, alphabet = data.shape
    blank = 0 if blank_label == "first" else alphabet - 1
    pad_value = 0 if blank_label == "first" else -1
    lab = label.astype(_np.int64)
    if use_label_lengths:
        lab_len = label_lengths.astype(_np.int64)
    else:   # up to the first padding value
        is_pad = (lab == pad_value).astype(_np.int64)
        seen = knp.cumsum(is_pad, axis=1) > 0
        lab_len = knp.sum(1 - seen.astype(_np.int64), axis=1)
    n_lab = label.shape[1]
    # the extended sequence: blank, l1, blank, l2, ..., blank (2L + 1 entries)
    safe = knp.where(lab == pad_value, blank, lab)
    ext = knp.reshape(knp.stack([knp.full(safe.shape, blank, dtype=_np.int64), safe], axis=2),
                      (batch, 2 * n_lab))
    ext = knp.concatenate([ext, knp.full((batch, 1), blank, dtype=_np.int64)], axis=1)
    width = 2 * n_lab + 1
    # a skip from s-2 to s is allowed onto a label that differs from the one before it
    prev2 = knp.concatenate([knp.full((batch, 2), blank, dtype=_np.int64), ext[:, :-2]], 1)
    skip_ok = (ext != blank) & (ext != prev2)
    logp = knpx.log_softmax(data, axis=-1)
    flat_rows = knp.reshape(knp.arange(batch, dtype=_np.int64) * alphabet, (batch, 1))
    index = knp.reshape(ext + flat_rows, (-1,))
    neg = knp.full((batch, width), _NEG, dtype=data.dtype)
    start = knp.arange(width) < 2
    step_len = data_lengths.astype(_np.int64) if use_data_lengths else None
    alpha = None
    for t in range(steps):
        emit = knp.reshape(knp.take(knp.reshape(logp[t], (-1,)), index), (batch, width))
        if alpha is None:
            new = knp.where(start, emit, neg)
        else:
            skipped = knp.where(skip_ok, _shift(alpha, 2), neg)
            new = _logsumexp(alpha, _shift(alpha, 1), skipped) + emit
        if step_len is not None and alpha is not None:
            new = knp.where(knp.reshape(step_len > t, (batch, 1)), new, alpha)
        alpha = new
    last = 2 * lab_len                          # the final blank; the label before it
    end = knpx.pick(alpha, last, axis=1)
    before = knpx.pick(alpha, knp.maximum(last - 1, 0), axis=1)
    before = knp.where(lab_len > 0, before, _NEG)
    return -_logsumexp(end, before)
