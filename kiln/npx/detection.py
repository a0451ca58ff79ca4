"""Object-detection ops of MXNet's npx: anchor boxes and region-of-interest pooling.

`multibox_prior` only reads its input's spatial shape, so it is computed in NumPy and has no
gradient (MXNet's has none either). `roi_pooling` is built from slicing and `max`, so its
gradient reaches the feature map as in MXNet's ROIPooling.
"""
import math

import numpy as _np

from .._core.base import op_error
from .._core.ndarray import ndarray
from .. import np as knp
from .nn import _arr


def _pair(op, value, name):
    values = tuple(float(v) for v in (value if isinstance(value, (tuple, list)) else
                                      (value, value)))
    if len(values) != 2:
        raise op_error(op, f"{name} takes two numbers (y, x), got {value!r}")
    return values


def multibox_prior(data, sizes=(1.0,), ratios=(1.0,), clip=False, steps=(-1.0, -1.0),
                   offsets=(0.5, 0.5)):
    """Anchor boxes centred on every pixel of `data`'s (height, width): shape
    (1, height * width * (len(sizes) + len(ratios) - 1), 4), corners (xmin, ymin, xmax, ymax)
    as fractions of the image. At each pixel: every size with the first ratio, then the first
    size with each further ratio (MXNet's MultiBoxPrior)."""
    x = _arr(data)
    if x.ndim < 2:
        raise op_error("multibox_prior", f"data needs (..., height, width), got shape "
                       f"{x.shape}")
    sizes = [float(s) for s in (sizes if isinstance(sizes, (tuple, list)) else [sizes])]
    ratios = [float(r) for r in (ratios if isinstance(ratios, (tuple, list)) else [ratios])]
    if not sizes or not ratios:
        raise op_error("multibox_prior", "sizes and ratios each need at least one value")
    height, width = x.shape[-2:]
    step_y, step_x = _pair("multibox_prior", steps, "steps")
    off_y, off_x = _pair("multibox_prior", offsets, "offsets")
    step_y = 1.0 / height if step_y <= 0 else step_y
    step_x = 1.0 / width if step_x <= 0 else step_x
    shapes = [(s, math.sqrt(ratios[0])) for s in sizes]
    shapes += [(sizes[0], math.sqrt(r)) for r in ratios[1:]]
    half_w = _np.array([s * height / width * r / 2 for s, r in shapes], _np.float32)
    half_h = _np.array([s / r / 2 for s, r in shapes], _np.float32)
    cy = ((_np.arange(height, dtype=_np.float32) + off_y) * step_y)[:, None, None]
    cx = ((_np.arange(width, dtype=_np.float32) + off_x) * step_x)[None, :, None]
    shape = (height, width, len(shapes))
    boxes = _np.stack([_np.broadcast_to(cx - half_w, shape), _np.broadcast_to(cy - half_h, shape),
                       _np.broadcast_to(cx + half_w, shape), _np.broadcast_to(cy + half_h, shape)],
                      axis=-1).astype(_np.float32)
    if clip:
        boxes = _np.clip(boxes, 0.0, 1.0)
    return ndarray._wrap(_np.ascontiguousarray(boxes.reshape(1, -1, 4)))


def _round_half_away(v):
    return int(math.floor(abs(v) + 0.5)) * (1 if v >= 0 else -1)


def roi_pooling(data, rois, pooled_size, spatial_scale):
    """Max pooling of each region of interest to `pooled_size` (MXNet's ROIPooling).

    data (batch, channels, height, width); rois (num_rois, 5) rows of
    [batch_index, x1, y1, x2, y2] in image coordinates, scaled by `spatial_scale` and rounded
    to feature-map cells (ends inclusive). Empty bins give 0. Out: (num_rois, channels,
    pooled_h, pooled_w)."""
    x = _arr(data)
    boxes = _np.asarray(_arr(rois).asnumpy(), dtype=_np.float64)
    if x.ndim != 4:
        raise op_error("roi_pooling", f"data must be (batch, channels, height, width), got "
                       f"shape {x.shape}")
    if boxes.ndim != 2 or boxes.shape[1] != 5:
        raise op_error("roi_pooling", f"rois must be (num_rois, 5), got shape {boxes.shape}")
    ph_n, pw_n = (int(v) for v in _pair("roi_pooling", pooled_size, "pooled_size"))
    batch, channels, height, width = x.shape
    zeros = knp.zeros((channels,), dtype=x.dtype)
    pooled = []
    for row in boxes:
        b = int(row[0])
        if not 0 <= b < batch:
            raise op_error("roi_pooling", f"roi batch index {b} is outside the batch of "
                           f"{batch}")
        x1, y1, x2, y2 = (_round_half_away(v * spatial_scale) for v in row[1:])
        bin_h = max(y2 - y1 + 1, 1) / ph_n
        bin_w = max(x2 - x1 + 1, 1) / pw_n
        cells = []
        for ph in range(ph_n):
            h0 = min(max(int(math.floor(ph * bin_h)) + y1, 0), height)
            h1 = min(max(int(math.ceil((ph + 1) * bin_h)) + y1, 0), height)
            for pw in range(pw_n):
                w0 = min(max(int(math.floor(pw * bin_w)) + x1, 0), width)
                w1 = min(max(int(math.ceil((pw + 1) * bin_w)) + x1, 0), width)
                if h1 <= h0 or w1 <= w0:
                    cells.append(zeros)
                else:
                    cells.append(knp.max(x[b, :, h0:h1, w0:w1], axis=(1, 2)))
        pooled.append(knp.reshape(knp.stack(cells, axis=-1), (channels, ph_n, pw_n)))
    if not pooled:
        return knp.zeros((0, channels, ph_n, pw_n), dtype=x.dtype)
    return knp.stack(pooled, axis=0)
