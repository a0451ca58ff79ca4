"""MXNet's `mx.image` augmenters: callables on one (H, W, C) image that ImageIter (and
user code) chain, with CreateAugmenter building the usual list. As in MXNet, random choices
come from Python's `random` (crops, jitter amounts, flips, the order of colour jitters) and
NumPy's global generator (PCA lighting noise), so `random.seed`/`np.random.seed` make a run
repeatable. Colour augmenters expect float images (CreateAugmenter casts first).
"""
import json
import random as _pyrandom

import numpy as _np

from ..._core.base import KilnError
from ...data.image import (_to_numpy, _wrap, center_crop, color_normalize, fixed_crop, imresize,
    random_crop, resize_short)

_LUMA = _np.array([0.299, 0.587, 0.114], _np.float32)
# MXNet's RGB <-> YIQ pair for hue rotation (its inverse is the rounded textbook one)
_TO_YIQ = _np.array([[0.299, 0.587, 0.114], [0.596, -0.274, -0.321], [0.211, -0.523, 0.311]])
_FROM_YIQ = _np.array([[1.0, 0.956, 0.621], [1.0, -0.272, -0.647], [1.0, -1.107, 1.705]])
_GRAY = _np.array([[0.21, 0.21, 0.21], [0.72, 0.72, 0.72], [0.07, 0.07, 0.07]], _np.float32)
_PCA_EIGVAL = _np.array([55.46, 4.794, 1.148])
_PCA_EIGVEC = _np.array([[-0.5675, 0.7192, 0.4009], [-0.5808, -0.0045, -0.8140],
                         [-0.5836, -0.6948, 0.4203]])


def _plain(value):
    from ..._core.ndarray import ndarray
    if isinstance(value, ndarray):
        value = value.asnumpy()
    return value.tolist() if isinstance(value, _np.ndarray) else value


def _float_image(src, what):
    img = _to_numpy(src, what)
    if img.dtype.kind != "f":
        raise KilnError(f"image.{what}: expected a float image (add CastAug() before it, as "
                        f"CreateAugmenter does), got {img.dtype}")
    return img


def copyMakeBorder(src, top, bot, left, right, type=0, value=0.0, values=None):  # noqa: A002
    """Pad an (H, W[, C]) image with OpenCV's border codes (which MXNet 1.9.1 uses, whatever
    its docstring says): 0 constant (value, or one per channel in values), 1 replicate
    (aaa|abcd), 2 reflect (cba|abcd), 3 wrap, 4 reflect-101 (dcb|abcd)."""
    img = _to_numpy(src, "copyMakeBorder")
    type &= ~16   # OpenCV's BORDER_ISOLATED flag changes nothing for a whole image
    pads = ((int(top), int(bot)), (int(left), int(right))) + ((0, 0),) * (img.ndim - 2)
    if min(min(p) for p in pads) < 0:
        raise KilnError(f"image.copyMakeBorder: margins must be >= 0, got {top}, {bot}, "
                        f"{left}, {right}")
    modes = {1: "edge", 2: "symmetric", 3: "wrap", 4: "reflect"}
    if type == 0:
        fill = values if values is not None else [value] * (img.shape[2] if img.ndim == 3
                                                            else 1)
        planes = [_np.pad(img[..., k] if img.ndim == 3 else img, pads[:2],
                          constant_values=fill[k]) for k in range(len(fill))]
        return _wrap(_np.stack(planes, -1) if img.ndim == 3 else planes[0])
    if type not in modes:
        raise KilnError(f"image.copyMakeBorder: type must be 0-4 (OpenCV's border codes), "
                        f"got {type}")
    return _wrap(_np.pad(img, pads, mode=modes[type]))


def random_size_crop(src, size, area, ratio, interp=2):
    """Crop a random box of area fraction in `area` ((min, max), or min with max 1) and
    aspect ratio log-uniform in `ratio`, resized to size=(w, h); after 10 misses, the
    centre crop. Returns (image, (x0, y0, w, h))."""
    img = _to_numpy(src, "random_size_crop")
    h, w = img.shape[:2]
    low, high = (area, 1.0) if isinstance(area, (int, float)) else area
    log_ratio = (_np.log(ratio[0]), _np.log(ratio[1]))
    for _ in range(10):
        target = _pyrandom.uniform(low, high) * h * w
        aspect = _np.exp(_pyrandom.uniform(*log_ratio))
        new_w = int(round(_np.sqrt(target * aspect)))
        new_h = int(round(_np.sqrt(target / aspect)))
        if new_w <= w and new_h <= h:
            x0, y0 = _pyrandom.randint(0, w - new_w), _pyrandom.randint(0, h - new_h)
            return fixed_crop(img, x0, y0, new_w, new_h, size, interp), (x0, y0, new_w, new_h)
    return center_crop(img, size, interp)


class Augmenter:
    """Base class: subclasses implement __call__(src) -> image; dumps() describes one."""

    def __init__(self, **kwargs):
        self._kwargs = {k: _plain(v) for k, v in kwargs.items()}

    def dumps(self):
        return json.dumps([type(self).__name__.lower(), self._kwargs])

    def __call__(self, src):
        raise NotImplementedError("an Augmenter subclass must implement __call__")


class SequentialAug(Augmenter):
    """Apply `ts` in order."""

    def __init__(self, ts):
        super().__init__()
        self.ts = ts

    def dumps(self):
        return [type(self).__name__.lower(), [t.dumps() for t in self.ts]]

    def __call__(self, src):
        for aug in self.ts:
            src = aug(src)
        return src


class RandomOrderAug(SequentialAug):
    """Apply `ts` in a random order (the list is shuffled in place, as MXNet does)."""

    def __call__(self, src):
        _pyrandom.shuffle(self.ts)
        return super().__call__(src)


class ResizeAug(Augmenter):
    """Resize the shorter edge to `size`."""

    def __init__(self, size, interp=2):
        super().__init__(size=size, interp=interp)
        self.size, self.interp = size, interp

    def __call__(self, src):
        return resize_short(src, self.size, self.interp)


class ForceResizeAug(Augmenter):
    """Resize to size=(w, h), ignoring the aspect ratio."""

    def __init__(self, size, interp=2):
        super().__init__(size=size, interp=interp)
        self.size, self.interp = size, interp

    def __call__(self, src):
        return imresize(src, self.size[0], self.size[1], self.interp)


class RandomCropAug(Augmenter):
    """A random crop of size=(w, h) (scaled down to fit)."""

    def __init__(self, size, interp=2):
        super().__init__(size=size, interp=interp)
        self.size, self.interp = size, interp

    def __call__(self, src):
        return random_crop(src, self.size, self.interp)[0]


class RandomSizedCropAug(Augmenter):
    """random_size_crop to size=(w, h) with the given area and ratio ranges."""

    def __init__(self, size, area, ratio, interp=2):
        super().__init__(size=size, area=area, ratio=ratio, interp=interp)
        self.size, self.area, self.ratio, self.interp = size, area, ratio, interp

    def __call__(self, src):
        return random_size_crop(src, self.size, self.area, self.ratio, self.interp)[0]


class CenterCropAug(Augmenter):
    """The centre crop of size=(w, h) (scaled down to fit)."""

    def __init__(self, size, interp=2):
        super().__init__(size=size, interp=interp)
        self.size, self.interp = size, interp

    def __call__(self, src):
        return center_crop(src, self.size, self.interp)[0]


class _ColourJitter(Augmenter):
    _what = None

    def __init__(self, amount):
        super().__init__(**{self._what: amount})
        setattr(self, self._what, amount)
        self.amount = amount

    def __call__(self, src):
        img = _float_image(src, type(self).__name__)
        alpha = 1.0 + _pyrandom.uniform(-self.amount, self.amount)
        return _wrap(self._blend(img, alpha).astype(img.dtype))


class BrightnessJitterAug(_ColourJitter):
    """Scale pixels by 1 + U(-brightness, brightness)."""
    _what = "brightness"

    @staticmethod
    def _blend(img, alpha):
        return img * alpha


class ContrastJitterAug(_ColourJitter):
    """Blend with the image's mean luma by 1 + U(-contrast, contrast)."""
    _what = "contrast"

    @staticmethod
    def _blend(img, alpha):
        return img * alpha + (1.0 - alpha) * float((img @ _LUMA).mean())


class SaturationJitterAug(_ColourJitter):
    """Blend with each pixel's luma by 1 + U(-saturation, saturation)."""
    _what = "saturation"

    @staticmethod
    def _blend(img, alpha):
        return img * alpha + (img @ _LUMA)[..., None] * (1.0 - alpha)


class HueJitterAug(Augmenter):
    """Rotate the chroma of YIQ by U(-hue, hue) half-turns."""

    def __init__(self, hue):
        super().__init__(hue=hue)
        self.hue = hue

    def __call__(self, src):
        img = _float_image(src, "HueJitterAug")
        alpha = _pyrandom.uniform(-self.hue, self.hue)
        u, w = _np.cos(alpha * _np.pi), _np.sin(alpha * _np.pi)
        rotate = _np.array([[1.0, 0.0, 0.0], [0.0, u, -w], [0.0, w, u]])
        t = (_FROM_YIQ @ rotate @ _TO_YIQ).T.astype(img.dtype)
        return _wrap(img @ t)


class ColorJitterAug(RandomOrderAug):
    """Brightness, contrast and saturation jitter (those > 0), in a random order."""

    def __init__(self, brightness, contrast, saturation):
        super().__init__([cls(amount) for cls, amount in (
            (BrightnessJitterAug, brightness), (ContrastJitterAug, contrast),
            (SaturationJitterAug, saturation)) if amount > 0])


class LightingAug(Augmenter):
    """AlexNet's PCA noise: add eigvec @ (N(0, alphastd) * eigval) to every pixel."""

    def __init__(self, alphastd, eigval, eigvec):
        super().__init__(alphastd=alphastd, eigval=eigval, eigvec=eigvec)
        self.alphastd = alphastd
        self.eigval, self.eigvec = _np.asarray(eigval), _np.asarray(eigvec)

    def __call__(self, src):
        img = _float_image(src, "LightingAug")
        alpha = _np.random.normal(0, self.alphastd, size=(3,))
        return _wrap((img + _np.dot(self.eigvec * alpha, self.eigval)).astype(img.dtype))


class ColorNormalizeAug(Augmenter):
    """(src - mean) / std."""

    def __init__(self, mean, std):
        super().__init__(mean=mean, std=std)
        self.mean, self.std = mean, std

    def __call__(self, src):
        return color_normalize(src, self.mean, self.std)


class RandomGrayAug(Augmenter):
    """With probability p, every channel becomes the pixel's gray (channels kept)."""

    def __init__(self, p):
        super().__init__(p=p)
        self.p = p

    def __call__(self, src):
        if _pyrandom.random() < self.p:
            img = _float_image(src, "RandomGrayAug")
            return _wrap(img @ _GRAY.astype(img.dtype))
        return src


class HorizontalFlipAug(Augmenter):
    """With probability p, mirror left-right."""

    def __init__(self, p):
        super().__init__(p=p)
        self.p = p

    def __call__(self, src):
        if _pyrandom.random() < self.p:
            return _wrap(_to_numpy(src, "HorizontalFlipAug")[:, ::-1])
        return src


class CastAug(Augmenter):
    """Cast to `typ` (float32 by default)."""

    def __init__(self, typ="float32"):
        super().__init__(type=typ)
        self.typ = typ

    def __call__(self, src):
        return _wrap(_to_numpy(src, "CastAug").astype(self.typ))


def CreateAugmenter(data_shape, resize=0, rand_crop=False, rand_resize=False,  # noqa: N802
                    rand_mirror=False, mean=None, std=None, brightness=0, contrast=0,
                    saturation=0, hue=0, pca_noise=0, rand_gray=0, inter_method=2):
    """MXNet's standard list for a (C, H, W) output: resize, a crop (centre, random, or
    random-sized with area >= 0.08 and ratio in [3/4, 4/3]), mirror, cast to float32,
    colour jitter, hue, PCA lighting, gray, then normalization (mean/std True: ImageNet's)."""
    augs = [ResizeAug(resize, inter_method)] if resize > 0 else []
    crop = (data_shape[2], data_shape[1])
    if rand_resize:
        if not rand_crop:
            raise KilnError("image.CreateAugmenter: rand_resize needs rand_crop=True")
        augs.append(RandomSizedCropAug(crop, 0.08, (3.0 / 4.0, 4.0 / 3.0), inter_method))
    elif rand_crop:
        augs.append(RandomCropAug(crop, inter_method))
    else:
        augs.append(CenterCropAug(crop, inter_method))
    if rand_mirror:
        augs.append(HorizontalFlipAug(0.5))
    augs.append(CastAug())
    if brightness or contrast or saturation:
        augs.append(ColorJitterAug(brightness, contrast, saturation))
    if hue:
        augs.append(HueJitterAug(hue))
    if pca_noise > 0:
        augs.append(LightingAug(pca_noise, _PCA_EIGVAL, _PCA_EIGVEC))
    if rand_gray > 0:
        augs.append(RandomGrayAug(rand_gray))
    mean = _np.array([123.68, 116.28, 103.53], _np.float32) if mean is True else mean
    std = _np.array([58.395, 57.12, 57.375], _np.float32) if std is True else std
    for name, value in (("mean", mean), ("std", std)):
        if value is not None and _np.shape(_plain(value))[:1] not in ((1,), (3,)):
            raise KilnError(f"image.CreateAugmenter: {name} must have 1 or 3 values, got "
                            f"{value!r:.60}")
    if mean is not None or std is not None:
        augs.append(ColorNormalizeAug(mean, std))
    return augs
