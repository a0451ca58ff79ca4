"""BatchNormReLU and ReflectionPad2D (MXNet 1.9.1's gluon.nn)."""
import numpy as _np

from ... import np as knp, npx
from ..._core.base import KilnError
from ..block import HybridBlock
from .norm_layers import BatchNorm


class BatchNormReLU(BatchNorm):
    """BatchNorm followed by ReLU, with BatchNorm's parameters (MXNet fuses the two)."""

    def forward(self, x):
        return npx.relu(super().forward(x))


def _reflect_index(n, before, after):
    """Indices into an axis of length n that pad it by reflection (without the edge)."""
    if before >= n or after >= n:
        raise KilnError(f"ReflectionPad2D: padding ({before}, {after}) must be smaller than "
                        f"the padded axis (length {n})")
    return _np.pad(_np.arange(n), (before, after), mode="reflect")


class ReflectionPad2D(HybridBlock):
    """Pads the last two axes of an NCHW input by reflection.

    `padding`: an int (all four sides) or MXNet's 8-tuple of (before, after) per axis, of
    which only the last two axes may be nonzero."""

    def __init__(self, padding=0, **kwargs):
        super().__init__(**kwargs)
        if isinstance(padding, (int, _np.integer)):
            padding = (0, 0, 0, 0) + (int(padding),) * 4
        padding = tuple(int(p) for p in padding)
        if len(padding) != 8 or any(padding[:4]) or min(padding) < 0:
            raise KilnError(f"ReflectionPad2D: padding must be an int or 8 non-negative "
                            f"ints with the first four zero, got {padding}")
        self._padding = padding

    def forward(self, x):
        if x.ndim != 4:
            raise KilnError(f"ReflectionPad2D: expected a 4-d NCHW input, got shape {x.shape}")
        top, bottom, left, right = self._padding[4:]
        rows = _reflect_index(x.shape[2], top, bottom)
        cols = _reflect_index(x.shape[3], left, right)
        x = knp.take(x, knp.array(rows), axis=2)
        return knp.take(x, knp.array(cols), axis=3)

    def __repr__(self):
        return f"ReflectionPad2D(padding={self._padding})"
