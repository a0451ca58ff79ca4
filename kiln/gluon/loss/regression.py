"""Regression losses: L2, L1, Huber (smooth L1) and Poisson negative log-likelihood.

PoissonNLLLoss keeps MXNet's value, the mean over every element (a scalar), rather than one
value per sample.
"""
import math

from ... import np as knp
from .base import Loss, _apply_weighting, _reshape_like, _batch_mean, _as_array


class L2Loss(Loss):
    """0.5 * weight * (pred - label)^2, averaged over non-batch axes."""

    def __init__(self, weight=1.0, batch_axis=0, **kwargs):
        super().__init__(weight, batch_axis, **kwargs)

    def forward(self, pred, label, sample_weight=None):
        label = _reshape_like(_as_array(label), pred)
        loss = knp.square(label - pred)
        loss = _apply_weighting(loss, self._weight / 2, sample_weight)
        return _batch_mean(loss, self._batch_axis)


class L1Loss(Loss):
    """weight * |pred - label|, averaged over non-batch axes."""

    def __init__(self, weight=None, batch_axis=0, **kwargs):
        super().__init__(weight, batch_axis, **kwargs)

    def forward(self, pred, label, sample_weight=None):
        label = _reshape_like(_as_array(label), pred)
        loss = knp.abs(label - pred)
        loss = _apply_weighting(loss, self._weight, sample_weight)
        return _batch_mean(loss, self._batch_axis)


class HuberLoss(Loss):
    """Squared error below `rho`, absolute error above it (smooth L1)."""

    def __init__(self, rho=1, weight=None, batch_axis=0, **kwargs):
        super().__init__(weight, batch_axis, **kwargs)
        self._rho = rho

    def forward(self, pred, label, sample_weight=None):
        label = _reshape_like(_as_array(label), pred)
        err = knp.abs(label - pred)
        loss = knp.where(err > self._rho, err - 0.5 * self._rho,
                         (0.5 / self._rho) * knp.square(err))
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
