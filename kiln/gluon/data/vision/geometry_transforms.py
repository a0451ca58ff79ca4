"""The geometric transforms of gluon.data.vision.transforms beyond resizing and flipping:
Rotate / RandomRotation (MXNet's `image.imrotate`: a rotation about the centre, sampled
bilinearly with zeros outside, as its BilinearSampler does), CropResize and RandomCrop
(MXNet 2's, with optional padding).
"""
import math

import numpy as _np

from ....base import KilnError
from .... import image as _image
from .transforms import Transform, _check_image, _per_image, _size_pair, rng, to_numpy, wrap

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
        raise KilnError(f"transforms.Rotate: the image needs at least 2x2 pixels, got "
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


def _float32_chw(x, what):
    arr = to_numpy(x, what)
    if arr.dtype != _np.float32:
        raise KilnError(f"transforms.{what} takes float32 (C, H, W) images (call it after "
                        f"ToTensor), got {arr.dtype}")
    if arr.ndim not in (3, 4):
        raise KilnError(f"transforms.{what}: expected (C, H, W) or (N, C, H, W), got shape "
                        f"{arr.shape}")
    return arr


def _check_zoom(what, zoom_in, zoom_out):
    if zoom_in and zoom_out:
        raise KilnError(f"transforms.{what}: zoom_in and zoom_out cannot both be True")


class Rotate(Transform):
    """Rotate a float32 (C, H, W) image or (N, C, H, W) batch by rotation_degrees
    (counter-clockwise on screen for positive angles, as MXNet's imrotate)."""

    def __init__(self, rotation_degrees, zoom_in=False, zoom_out=False):
        _check_zoom("Rotate", zoom_in, zoom_out)
        self._degrees, self._zoom_in, self._zoom_out = rotation_degrees, zoom_in, zoom_out

    def forward(self, x):
        arr = _float32_chw(x, "Rotate")
        rot = [rotate_image(a, self._degrees, self._zoom_in, self._zoom_out)
               for a in (arr if arr.ndim == 4 else arr[None])]
        return wrap(_np.stack(rot) if arr.ndim == 4 else rot[0])


class RandomRotation(Transform):
    """With probability rotate_with_proba, rotate by an angle drawn uniformly from
    angle_limits=(lower, upper) degrees (one angle per image of a batch)."""

    def __init__(self, angle_limits, zoom_in=False, zoom_out=False, rotate_with_proba=1.0):
        lower, upper = angle_limits
        if lower >= upper:
            raise KilnError(f"transforms.RandomRotation: angle_limits must be (lower, upper) "
                            f"with lower < upper, got {angle_limits!r}")
        if not 0 <= rotate_with_proba <= 1:
            raise KilnError(f"transforms.RandomRotation: rotate_with_proba must be in "
                            f"[0, 1], got {rotate_with_proba}")
        _check_zoom("RandomRotation", zoom_in, zoom_out)
        self._limits = (float(lower), float(upper))
        self._zoom_in, self._zoom_out = zoom_in, zoom_out
        self._proba = rotate_with_proba

    def forward(self, x):
        gen = rng()
        if gen.random() > self._proba:
            return x
        arr = _float32_chw(x, "RandomRotation")
        batch = arr if arr.ndim == 4 else arr[None]
        rot = [rotate_image(a, gen.uniform(*self._limits), self._zoom_in, self._zoom_out)
               for a in batch]
        return wrap(_np.stack(rot) if arr.ndim == 4 else rot[0])


class CropResize(Transform):
    """Crop the width x height box at (x, y) of an (H, W, C) image or (N, H, W, C) batch,
    then resize it to size=(w, h) (an int: square) when size is given."""

    def __init__(self, x, y, width, height, size=None, interpolation=None):
        self._box = (int(x), int(y), int(width), int(height))
        self._size = None if not size else _size_pair(size, "CropResize")
        self._interpolation = 1 if interpolation is None else interpolation

    def forward(self, x):
        arr = to_numpy(x, "CropResize")
        _check_image(arr, "CropResize")
        x0, y0, w, h = self._box
        H, W = arr.shape[-3:-1]
        if x0 < 0 or y0 < 0 or w <= 0 or h <= 0 or x0 + w > W or y0 + h > H:
            raise KilnError(f"transforms.CropResize: box x={x0}, y={y0}, width={w}, "
                            f"height={h} is not inside the {W}x{H} image")
        out = arr[..., y0:y0 + h, x0:x0 + w, :]
        if self._size is not None:
            sw, sh = self._size
            out = _per_image(out, lambda img: _image._resize_numpy(img, sw, sh,
                                                                   self._interpolation))
        return wrap(out)


def _pad_width(pad):
    """MXNet 2's pad argument -> NumPy pad widths for (H, W, C)."""
    if pad is None:
        return None
    if isinstance(pad, int):
        return ((pad, pad), (pad, pad), (0, 0))
    pad = tuple(int(p) for p in pad)
    if len(pad) < 4:
        raise KilnError(f"transforms.RandomCrop: pad must be an int or (top, bottom, left, "
                        f"right), got {pad!r}")
    return ((pad[0], pad[1]), (pad[2], pad[3]), (0, 0))


class RandomCrop(Transform):
    """Pad (optional, with pad_value) then crop a random size=(w, h) box of an (H, W, C)
    image; an image smaller than size is cropped to the largest box of that aspect and
    upsampled (MXNet 2's transforms.RandomCrop)."""

    def __init__(self, size, pad=None, pad_value=0, interpolation=1):
        self._size = _size_pair(size, "RandomCrop")
        self._pad = _pad_width(pad)
        self._pad_value, self._interpolation = pad_value, interpolation

    def forward(self, x):
        arr = to_numpy(x, "RandomCrop")
        _check_image(arr, "RandomCrop")
        if self._pad is not None:
            widths = ((0, 0),) * (arr.ndim - 3) + self._pad
            arr = _np.pad(arr, widths, mode="constant", constant_values=self._pad_value)
        return wrap(_per_image(arr, self._crop))

    def _crop(self, img):
        h, w = img.shape[:2]
        new_w, new_h = _image.scale_down((w, h), self._size)
        gen = rng()
        x0 = int(gen.integers(0, w - new_w + 1))
        y0 = int(gen.integers(0, h - new_h + 1))
        return _image.fixed_crop(img, x0, y0, new_w, new_h, self._size,
                                 self._interpolation).asnumpy()
