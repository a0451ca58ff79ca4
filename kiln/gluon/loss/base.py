"""The base of the losses: `Loss` (a global `weight` and the `batch_axis` not averaged) and
the helpers every loss uses to weight its values, match label shapes and average per sample.
"""
import numpy as _np

from ... import np as knp
from ..._core.base import KilnError
from ..block import HybridBlock


def _apply_weighting(loss, weight=None, sample_weight=None):
    if sample_weight is not None:
        loss = loss * sample_weight
    if weight is not None:
        if not isinstance(weight, (int, float, _np.number)):
            raise KilnError(f"loss weight must be a number, got {type(weight).__name__}")
        loss = loss * weight
    return loss


def _reshape_like(x, y):
    """Give `x` the shape of `y` (labels often come as (batch,) for (batch, 1) predictions)."""
    return x if x.shape == y.shape else knp.reshape(x, y.shape)


def _batch_mean(loss, batch_axis):
    axes = tuple(i for i in range(loss.ndim) if i != batch_axis % max(loss.ndim, 1))
    return knp.mean(loss, axis=axes) if axes else loss


def _as_array(x):
    from ..._core.ndarray import ndarray, as_array
    return x if isinstance(x, ndarray) or x is None else as_array(x)


class Loss(HybridBlock):
    """Base class: `weight` (a global scale) and `batch_axis` (the axis not averaged)."""

    def __init__(self, weight=None, batch_axis=0, **kwargs):
        super().__init__(**kwargs)
        self._weight = weight
        self._batch_axis = batch_axis

    def __repr__(self):
        return f"{type(self).__name__}(batch_axis={self._batch_axis}, w={self._weight})"

    def forward(self, pred, label, *args, **kwargs):
        raise NotImplementedError
