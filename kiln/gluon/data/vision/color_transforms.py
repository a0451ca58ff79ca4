"""The colour augmentations of gluon.data.vision.transforms (MXNet's definitions).

They take an (H, W, 3) image (any dtype; uint8 results are rounded and saturated to
[0, 255]) and compute in float32.
"""
import numpy as _np

from ...._core.base import KilnError
from .transform_base import Transform, rng, to_numpy, wrap

_LUMA = _np.array([0.299, 0.587, 0.114], _np.float32)


def _rgb(x, what):
    arr = to_numpy(x, what)
    if arr.ndim != 3 or arr.shape[2] != 3:
        raise KilnError(f"transforms.{what}: expected an RGB image (H, W, 3), got shape "
                        f"{arr.shape}")
    return arr


def _back(out, like):
    if like.dtype.kind in "iu":
        info = _np.iinfo(like.dtype)
        out = _np.clip(_np.rint(out), info.min, info.max)
    return wrap(out.astype(like.dtype))


def _factor(amount):
    return 1.0 + rng().uniform(-amount, amount)


def brightness(img, alpha):
    return img * _np.float32(alpha)


def contrast(img, alpha):
    gray = float((img @ _LUMA).mean())
    return img * _np.float32(alpha) + _np.float32(gray * (1.0 - alpha))


def saturation(img, alpha):
    gray = (img @ _LUMA)[:, :, None]
    return img * _np.float32(alpha) + gray * _np.float32(1.0 - alpha)


_TO_YIQ = _np.array([[0.299, 0.587, 0.114], [0.596, -0.274, -0.321],
                     [0.211, -0.523, 0.311]], _np.float64)
_FROM_YIQ = _np.linalg.inv(_TO_YIQ)


def hue(img, alpha):
    """Rotate the chroma plane of YIQ by alpha * pi."""
    u, w = _np.cos(alpha * _np.pi), _np.sin(alpha * _np.pi)
    rot = _np.array([[1.0, 0.0, 0.0], [0.0, u, -w], [0.0, w, u]])
    t = (_FROM_YIQ @ rot @ _TO_YIQ).astype(_np.float32)
    return img @ t.T


class _Jitter(Transform):
    _fn = None

    def __init__(self, amount):
        if amount < 0:
            raise KilnError(f"transforms.{type(self).__name__}: the amount must be >= 0, "
                            f"got {amount}")
        self._amount = amount

    def forward(self, x):
        img = _rgb(x, type(self).__name__) if type(self).__name__ != "RandomBrightness" \
            else to_numpy(x, "RandomBrightness")
        return _back(type(self)._fn(img.astype(_np.float32), self._alpha()), img)

    def _alpha(self):
        return _factor(self._amount)


class RandomBrightness(_Jitter):
    """Scale every pixel by 1 + U(-brightness, brightness)."""
    _fn = staticmethod(brightness)


class RandomContrast(_Jitter):
    """Blend with the image's mean gray by 1 + U(-contrast, contrast)."""
    _fn = staticmethod(contrast)


class RandomSaturation(_Jitter):
    """Blend with each pixel's gray by 1 + U(-saturation, saturation)."""
    _fn = staticmethod(saturation)


class RandomHue(_Jitter):
    """Rotate the hue by U(-hue, hue) half-turns (in YIQ space)."""
    _fn = staticmethod(hue)

    def _alpha(self):
        return rng().uniform(-self._amount, self._amount)


class RandomColorJitter(Transform):
    """Brightness, contrast, saturation and hue jitter, in a random order."""

    def __init__(self, brightness=0, contrast=0, saturation=0, hue=0):
        self._steps = [cls(amount) for cls, amount in (
            (RandomBrightness, brightness), (RandomContrast, contrast),
            (RandomSaturation, saturation), (RandomHue, hue)) if amount > 0]

    def forward(self, x):
        img = _rgb(x, "RandomColorJitter")
        out = img.astype(_np.float32)
        for i in rng().permutation(len(self._steps)):
            step = self._steps[int(i)]
            out = type(step)._fn(out, step._alpha())
        return _back(out, img)


class RandomLighting(Transform):
    """AlexNet's PCA lighting noise: add eigvec @ (N(0, alpha) * eigval) to every pixel."""
    _eigval = _np.array([55.46, 4.794, 1.148], _np.float32)
    _eigvec = _np.array([[-0.5675, 0.7192, 0.4009], [-0.5808, -0.0045, -0.8140],
                         [-0.5836, -0.6948, 0.4203]], _np.float32)

    def __init__(self, alpha):
        self._alpha = alpha

    def forward(self, x):
        img = _rgb(x, "RandomLighting")
        noise = rng().normal(0.0, self._alpha, size=3).astype(_np.float32)
        shift = self._eigvec @ (noise * self._eigval)
        return _back(img.astype(_np.float32) + shift, img)


class RandomGray(Transform):
    """With probability p, replace each pixel of an (H, W, 3) image by its gray level
    0.2989 R + 0.587 G + 0.114 B in all three channels; float32 out either way, as MXNet 2.
    (MXNet 2's own code multiplies by a matrix that gives each channel coefficient * (R + G
    + B) instead of the gray level; kiln gives the gray level, which is what it documents.)"""
    _coeffs = _np.array([0.2989, 0.5870, 0.114], _np.float32)

    def __init__(self, p=0.5):
        self.p = p

    def forward(self, x):
        img = _rgb(x, "RandomGray").astype(_np.float32)
        if self.p < rng().uniform():
            return wrap(img)
        gray = img @ self._coeffs
        return wrap(_np.repeat(gray[:, :, None], 3, axis=2))
