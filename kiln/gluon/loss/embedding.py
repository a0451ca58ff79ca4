"""Losses on embeddings: cosine embedding (pairs labelled similar or not), SDML (smoothed
deep metric learning over a batch of aligned pairs) and triplet (anchor, positive,
negative).

CosineEmbeddingLoss gives (batch,) where MXNet gives (batch, 1) with the same values.
"""
import numpy as _np

from ... import np as knp, npx
from ..._core.base import KilnError
from .base import Loss, _apply_weighting, _reshape_like, _as_array


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
