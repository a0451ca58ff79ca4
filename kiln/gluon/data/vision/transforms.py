"""gluon.data.vision.transforms: callables on images, as MXNet's (HWC in, CHW after ToTensor).

They run on NumPy buffers (cheap in DataLoader workers) and return kiln arrays. Random
choices come from kiln's generator, which each DataLoader worker reseeds, so workers do
not repeat each other's augmentations.

This module holds the conversions, resizes, crops and flips and the composing transforms;
the colour augmentations (color_transforms.py) and the geometric ones (geometry_transforms.py)
build on the same base (transform_base.py), and all are reachable here.
"""
import math

import numpy as _np

from ...._core.base import KilnError, normalize_dtype
from ....data import image as _image
from .transform_base import (Transform, to_numpy, wrap, rng, _check_image, _size_pair,
                             _per_image)
from .color_transforms import (RandomBrightness, RandomContrast, RandomSaturation,  # noqa
                               RandomHue, RandomColorJitter, RandomLighting, RandomGray)
from .geometry_transforms import Rotate, RandomRotation, CropResize, RandomCrop  # noqa: F401


class Compose(Transform):
    """Apply the transforms in order (any callables, not only kiln's)."""

    def __init__(self, transforms):
        self._transforms = list(transforms)

    def forward(self, x):
        for t in self._transforms:
            x = t(x)
        return x

    def __getitem__(self, i):
        return self._transforms[i]

    def __len__(self):
        return len(self._transforms)


class HybridCompose(Compose):
    """Transforms run in order, each on the previous one's output (the same as Compose)."""
    pass


class Cast(Transform):
    """Converts the input to `dtype` (float32 by default)."""
    def __init__(self, dtype="float32"):
        self._dtype = normalize_dtype(dtype)

    def forward(self, x):
        return wrap(to_numpy(x, "Cast").astype(self._dtype))


class ToTensor(Transform):
    """(H, W, C) in [0, 255] -> (C, H, W) float32 in [0, 1]; batches (N, H, W, C) too."""

    def forward(self, x):
        arr = to_numpy(x, "ToTensor")
        _check_image(arr, "ToTensor")
        out = _np.moveaxis(arr, -1, -3).astype(_np.float32)
        out /= _np.float32(255.0)
        return wrap(out)


class Normalize(Transform):
    """(x - mean) / std per channel of a (C, H, W) or (N, C, H, W) tensor."""

    def __init__(self, mean=0.0, std=1.0):
        self._mean, self._std = mean, std

    def forward(self, x):
        arr = to_numpy(x, "Normalize")
        if arr.ndim not in (3, 4):
            raise KilnError(f"transforms.Normalize: expected (C, H, W) or (N, C, H, W), got "
                            f"shape {arr.shape}")
        channels = arr.shape[-3]
        mean = _np.asarray(self._mean, _np.float32).reshape(-1)
        std = _np.asarray(self._std, _np.float32).reshape(-1)
        for name, v in (("mean", mean), ("std", std)):
            if v.size not in (1, channels):
                raise KilnError(f"transforms.Normalize: {name} has {v.size} values for "
                                f"{channels} channels")
        shape = (-1, 1, 1)
        return wrap(((arr - mean.reshape(shape)) / std.reshape(shape)).astype(_np.float32))


class Resize(Transform):
    """Resize to size=(width, height), or with keep_ratio and an int, the short edge."""

    def __init__(self, size, keep_ratio=False, interpolation=1):
        self._size, self._keep_ratio, self._interpolation = size, keep_ratio, interpolation

    def _target(self, h, w):
        if isinstance(self._size, int) and self._keep_ratio:
            if h > w:
                return self._size, int(self._size * h / w)
            return int(self._size * w / h), self._size
        return _size_pair(self._size, "Resize")

    def forward(self, x):
        arr = to_numpy(x, "Resize")
        _check_image(arr, "Resize")

        def one(img):
            w, h = self._target(*img.shape[:2])
            return _image._resize_numpy(img, w, h, self._interpolation)
        return wrap(_per_image(arr, one))


class CenterCrop(Transform):
    """Crop the centre to size=(width, height), scaling the box down first if it is larger."""

    def __init__(self, size, interpolation=1):
        self._size, self._interpolation = _size_pair(size, "CenterCrop"), interpolation

    def forward(self, x):
        arr = to_numpy(x, "CenterCrop")
        _check_image(arr, "CenterCrop", batch_ok=False)
        return _image.center_crop(arr, self._size, self._interpolation)[0]


class RandomResizedCrop(Transform):
    """Crop a random box of random area (scale) and aspect (ratio), resized to size."""

    def __init__(self, size, scale=(0.08, 1.0), ratio=(3.0 / 4.0, 4.0 / 3.0),
                 interpolation=1):
        self._size = _size_pair(size, "RandomResizedCrop")
        self._scale, self._ratio, self._interpolation = scale, ratio, interpolation

    def forward(self, x):
        arr = to_numpy(x, "RandomResizedCrop")
        _check_image(arr, "RandomResizedCrop", batch_ok=False)
        h, w = arr.shape[:2]
        gen = rng()
        log_ratio = (math.log(self._ratio[0]), math.log(self._ratio[1]))
        for _ in range(10):
            area = gen.uniform(*self._scale) * h * w
            aspect = math.exp(gen.uniform(*log_ratio))
            new_w = int(round(math.sqrt(area * aspect)))
            new_h = int(round(math.sqrt(area / aspect)))
            if 0 < new_w <= w and 0 < new_h <= h:
                x0 = int(gen.integers(0, w - new_w + 1))
                y0 = int(gen.integers(0, h - new_h + 1))
                return _image.fixed_crop(arr, x0, y0, new_w, new_h, self._size,
                                         self._interpolation)
        return _image.center_crop(arr, self._size, self._interpolation)[0]


class _RandomFlip(Transform):
    _axis = None

    def __init__(self, p=0.5):
        self._p = p

    def forward(self, x):
        arr = to_numpy(x, type(self).__name__)
        _check_image(arr, type(self).__name__)
        if rng().random() < self._p:
            arr = _np.flip(arr, axis=self._axis - 3)
        return wrap(arr)


class RandomFlipLeftRight(_RandomFlip):
    """Flips an HWC image left to right with probability `p`."""
    _axis = 1


class RandomFlipTopBottom(_RandomFlip):
    """Flips an HWC image top to bottom with probability `p`."""
    _axis = 0


class RandomApply(Transform):
    """Apply `transforms` (one callable, or a list run in order) with probability p."""

    def __init__(self, transforms, p=0.5):
        if isinstance(transforms, (list, tuple)):
            transforms = Compose(transforms)
        if not callable(transforms):
            raise KilnError(f"transforms.RandomApply: transforms must be callable or a list "
                            f"of callables, got {type(transforms).__name__}")
        self.transforms, self.p = transforms, p

    def forward(self, x):
        if self.p < rng().random():
            return x
        return self.transforms(x)


class HybridRandomApply(RandomApply):
    """Applies `transforms` with probability `p` (the same as RandomApply)."""
    pass


def __getattr__(name):
    # MXNet's transforms module also re-exports the block classes it builds on
    if name in ("Block", "HybridBlock"):
        from ... import block
        return getattr(block, name)
    if name in ("Sequential", "HybridSequential"):
        from ... import nn
        return getattr(nn, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
