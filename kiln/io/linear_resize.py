"""Bilinear resizing as OpenCV's INTER_LINEAR does it: each output pixel samples its 2x2
source neighbourhood at the pixel-centre-aligned position, with no smoothing when shrinking.
MXNet's ImageRecordIter resizes this way; Pillow's BILINEAR filters the whole footprint when
shrinking, which gives different pixels, so ImageRecordIter uses this instead."""
import numpy as _np


def _taps(src_size, dst_size):
    """Source index pairs and weights along one axis."""
    pos = (_np.arange(dst_size) + 0.5) * (src_size / dst_size) - 0.5
    left = _np.floor(pos).astype(_np.int64)
    frac = pos - left
    frac[left < 0] = 0.0
    left[left < 0] = 0
    at_end = left >= src_size - 1
    frac[at_end] = 0.0
    left[at_end] = src_size - 1
    right = _np.minimum(left + 1, src_size - 1)
    # OpenCV rounds the weights to 11 fractional bits
    frac = _np.round(frac * 2048) / 2048
    return left, right, frac


def resize_linear(img, width, height):
    """An (H, W, C) uint8 image resized to (height, width, C)."""
    h, w = img.shape[:2]
    if (h, w) == (height, width):
        return img
    y0, y1, fy = _taps(h, height)
    x0, x1, fx = _taps(w, width)
    src = img.astype(_np.float64)
    rows = src[y0] * (1 - fy)[:, None, None] + src[y1] * fy[:, None, None]
    out = rows[:, x0] * (1 - fx)[None, :, None] + rows[:, x1] * fx[None, :, None]
    return _np.clip(_np.floor(out + 0.5), 0, 255).astype(_np.uint8)
