"""MXNet's `image.imrotate` / `image.random_rotate`: rotate float32 (C, H, W) images about
their centre, keeping their shape. Like MXNet (which builds a sampling grid and runs its
BilinearSampler), each output pixel samples the input bilinearly, with zeros outside.
"""
import math
import numbers

import numpy as _np

from .._core.base import ArgumentTypeError, KilnError, ValueRangeError

_F32 = _np.float32


def _bilinear_sample(img, xs, ys):
    """img (C, H, W); xs, ys (H', W') source coordinates in pixels. Neighbours outside
    the image count as 0 (MXNet's BilinearSampler)."""
    _, h, w = img.shape
    x0, y0 = _np.floor(xs).astype(_np.int64), _np.floor(ys).astype(_np.int64)
    wx, wy = _F32(1) - (xs - x0), _F32(1) - (ys - y0)
    out = _np.zeros((img.shape[0],) + xs.shape, _F32)
    for dy, fy in ((0, wy), (1, _F32(1) - wy)):
        for dx, fx in ((0, wx), (1, _F32(1) - wx)):
            yy, xx = y0 + dy, x0 + dx
            inside = (yy >= 0) & (yy < h) & (xx >= 0) & (xx < w)
            vals = img[:, _np.clip(yy, 0, h - 1), _np.clip(xx, 0, w - 1)]
            out += _np.where(inside, vals, _F32(0)) * (fy * fx)
    return out


def _zoom(h, w, rad, zoom_in, zoom_out):
    """The grid scale that hides the padding (zoom_in) or shows every corner (zoom_out)."""
    if not (zoom_in or zoom_out):
        return _F32(1)
    h, w, rad = _F32(h), _F32(w), _F32(abs(rad))
    rho, corner = _np.sqrt(h * h + w * w), _np.arctan(h / w)
    max_x = max(abs(rho * _np.cos(corner + rad)), abs(rho * _np.cos(corner - rad)))
    max_y = max(abs(rho * _np.sin(corner + rad)), abs(rho * _np.sin(corner - rad)))
    if zoom_out:
        return max(max_x / w, max_y / h)
    return min(w / max_x, h / max_y)


def rotate_image(img, degrees, zoom_in=False, zoom_out=False):
    """Rotate a (C, H, W) float32 image by `degrees` about its centre, keeping its shape."""
    _, h, w = img.shape
    if h < 2 or w < 2:
        raise KilnError(f"image.imrotate: the image needs at least 2x2 pixels, got "
                        f"{h}x{w}")
    rad = _F32(math.pi) * _F32(degrees) / _F32(180)
    hs, ws = _F32((h - 1) / 2), _F32((w - 1) / 2)
    yc = _np.arange(h, dtype=_F32)[:, None] - hs
    xc = _np.arange(w, dtype=_F32)[None, :] - ws
    cos, sin = _np.cos(rad), _np.sin(rad)
    scale = _F32(_zoom(h, w, rad, zoom_in, zoom_out))
    gx = (xc * cos - yc * sin) / ws * scale
    gy = (xc * sin + yc * cos) / hs * scale
    xs = (gx + _F32(1)) * _F32(w - 1) / _F32(2)
    ys = (gy + _F32(1)) * _F32(h - 1) / _F32(2)
    return _bilinear_sample(img, xs, ys)



def _chw_batch(src, what):
    from .._core.ndarray import ndarray
    arr = src._concrete(what) if isinstance(src, ndarray) else _np.asarray(src)
    if arr.dtype != _np.float32:
        raise KilnError(f"{what} takes float32 images (C, H, W) or batches (N, C, H, W); "
                        f"got {arr.dtype} (call it after ToTensor)")
    if arr.ndim not in (3, 4):
        raise KilnError(f"{what}: expected (C, H, W) or (N, C, H, W), got shape {arr.shape}")
    return arr


def imrotate(src, rotation_degrees, zoom_in=False, zoom_out=False):
    """Rotate a float32 (C, H, W) image, or each image of an (N, C, H, W) batch, by
    rotation_degrees (a number, or one angle per image of a batch). zoom_in scales so that
    no padding shows, zoom_out so that the whole image does."""
    from .._core.ndarray import ndarray
    if zoom_in and zoom_out:
        raise ValueRangeError("image.imrotate: zoom_in and zoom_out cannot both be True")
    arr = _chw_batch(src, "image.imrotate")
    if isinstance(rotation_degrees, ndarray):
        rotation_degrees = rotation_degrees.asnumpy()
    if arr.ndim == 3:
        if not isinstance(rotation_degrees, numbers.Number):     # MXNet: a TypeError
            raise ArgumentTypeError(f"image.imrotate: one image takes one angle, got "
                                    f"{rotation_degrees!r}")
        return ndarray._wrap(rotate_image(arr, rotation_degrees, zoom_in, zoom_out))
    if isinstance(rotation_degrees, numbers.Number):
        angles = [float(rotation_degrees)] * len(arr)
    else:
        angles = _np.asarray(rotation_degrees, _np.float64).reshape(-1)
        if len(angles) != len(arr):
            raise KilnError(f"image.imrotate: {len(arr)} images take {len(arr)} angles, got "
                            f"{len(angles)}")
    return ndarray._wrap(_np.stack([rotate_image(a, float(d), zoom_in, zoom_out)
                                    for a, d in zip(arr, angles)]))


def random_rotate(src, angle_limits, zoom_in=False, zoom_out=False):
    """imrotate by angles drawn uniformly from angle_limits=(lower, upper) degrees, one per
    image, from kiln's generator (np.random.seed)."""
    from ..ops.creation import _RandomState
    arr = _chw_batch(src, "image.random_rotate")
    gen = _RandomState.generator
    lower, upper = (float(v) for v in angle_limits)
    if arr.ndim == 3:
        return imrotate(arr, float(gen.uniform(lower, upper)), zoom_in, zoom_out)
    return imrotate(arr, gen.uniform(lower, upper, size=len(arr)), zoom_in, zoom_out)
