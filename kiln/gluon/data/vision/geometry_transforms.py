"""The geometric transforms of gluon.data.vision.transforms beyond resizing and flipping:
Rotate / RandomRotation (on kiln.image_rotate, MXNet's `image.imrotate`), CropResize and
RandomCrop (MXNet 2's, with optional padding).
"""
import numpy as _np

from ...._core.base import DTypeError, KilnError, ValueRangeError
from ....data import image as _image
from ....data.rotate import imrotate
from .transform_base import Transform, _check_image, _per_image, _size_pair, rng, to_numpy, wrap


def _float32_chw(x, what):
    arr = to_numpy(x, what)
    if arr.dtype != _np.float32:
        raise DTypeError(f"transforms.{what} takes float32 (C, H, W) images (call it after "
                        f"ToTensor), got {arr.dtype}")
    if arr.ndim not in (3, 4):
        raise KilnError(f"transforms.{what}: expected (C, H, W) or (N, C, H, W), got shape "
                        f"{arr.shape}")
    return arr


def _check_zoom(what, zoom_in, zoom_out):
    if zoom_in and zoom_out:
        raise ValueRangeError(f"transforms.{what}: zoom_in and zoom_out cannot both be True")


class Rotate(Transform):
    """Rotate a float32 (C, H, W) image or (N, C, H, W) batch by rotation_degrees
    (counter-clockwise on screen for positive angles, as MXNet's imrotate)."""

    def __init__(self, rotation_degrees, zoom_in=False, zoom_out=False):
        _check_zoom("Rotate", zoom_in, zoom_out)
        self._degrees, self._zoom_in, self._zoom_out = rotation_degrees, zoom_in, zoom_out

    def forward(self, x):
        return imrotate(_float32_chw(x, "Rotate"), self._degrees, self._zoom_in,
                        self._zoom_out)


class RandomRotation(Transform):
    """With probability rotate_with_proba, rotate by an angle drawn uniformly from
    angle_limits=(lower, upper) degrees (one angle per image of a batch)."""

    def __init__(self, angle_limits, zoom_in=False, zoom_out=False, rotate_with_proba=1.0):
        lower, upper = angle_limits
        if lower >= upper:
            raise KilnError(f"transforms.RandomRotation: angle_limits must be (lower, upper) "
                            f"with lower < upper, got {angle_limits!r}")
        if not 0 <= rotate_with_proba <= 1:
            raise ValueRangeError(f"transforms.RandomRotation: rotate_with_proba must be in "
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
        angles = gen.uniform(*self._limits, size=len(arr) if arr.ndim == 4 else None)
        return imrotate(arr, angles if arr.ndim == 4 else float(angles), self._zoom_in,
                        self._zoom_out)


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
