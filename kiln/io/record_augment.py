"""The image augmenter of MXNet's ImageRecordIter (its `aug_default`), on (H, W, C) uint8
images, in MXNet's order: resize the shorter side, an affine warp (rotation, shear, random
scale and aspect), padding, a crop (random-resized, random-size, or fixed-size), colour
jitter (brightness, contrast, saturation, PCA lighting), an HSL shift, then mirroring.

Random draws come from the iterator's generator, so a seed reproduces a run; they cannot
reproduce MXNet's C++ generator, so random augmentations match MXNet in distribution and
the deterministic ones (fixed rotate, pad, fixed scale, fixed crop size, mirror) in pixels.
"""
import math

import numpy as _np

from .._core.base import KilnError, where_in_user_code
from .linear_resize import resize_linear

_DEFAULTS = dict(resize=-1, rand_crop=False, random_resized_crop=False, max_rotate_angle=0,
                 rotate=-1, max_shear_ratio=0.0, max_aspect_ratio=0.0, min_aspect_ratio=None,
                 max_random_scale=1.0, min_random_scale=1.0, max_random_area=1.0,
                 min_random_area=1.0, max_img_size=1e10, min_img_size=0.0, max_crop_size=-1,
                 min_crop_size=-1, brightness=0.0, contrast=0.0, saturation=0.0,
                 pca_noise=0.0, random_h=0, random_s=0, random_l=0, fill_value=255, pad=0,
                 mirror=False, rand_mirror=False)
_RESIZED_CROP_TRIES = 10


def _uint8(img):
    return _np.clip(_np.floor(img + 0.5), 0, 255).astype(_np.uint8)


def warp_affine(img, matrix, width, height, fill):
    """OpenCV's warpAffine with bilinear sampling and a constant border: output pixel (x, y)
    takes the source at matrix^-1 (x, y, 1); neighbours outside the source count as fill."""
    forward = _np.vstack([_np.asarray(matrix, _np.float64), [0.0, 0.0, 1.0]])
    inverse = _np.linalg.inv(forward)[:2]
    ys, xs = _np.mgrid[0:height, 0:width].astype(_np.float64)
    sx = inverse[0, 0] * xs + inverse[0, 1] * ys + inverse[0, 2]
    sy = inverse[1, 0] * xs + inverse[1, 1] * ys + inverse[1, 2]
    # OpenCV quantizes the sub-pixel position to 1/32
    sx, sy = _np.round(sx * 32) / 32, _np.round(sy * 32) / 32
    x0, y0 = _np.floor(sx).astype(_np.int64), _np.floor(sy).astype(_np.int64)
    fx, fy = (sx - x0)[..., None], (sy - y0)[..., None]
    h, w = img.shape[:2]
    src = img.astype(_np.float64)
    out = _np.zeros((height, width, img.shape[2]), _np.float64)
    for dy, wy in ((0, 1 - fy), (1, fy)):
        for dx, wx in ((0, 1 - fx), (1, fx)):
            yy, xx = y0 + dy, x0 + dx
            inside = ((yy >= 0) & (yy < h) & (xx >= 0) & (xx < w))[..., None]
            vals = src[_np.clip(yy, 0, h - 1), _np.clip(xx, 0, w - 1)]
            out += _np.where(inside, vals, float(fill)) * (wy * wx)
    return _uint8(out)


class RecordAugmenter:
    """Built from ImageRecordIter's keyword arguments (it takes the ones it knows out of
    `kw`); `__call__(img, rng)` augments one decoded image for a (C, H, W) output."""

    def __init__(self, kw, data_shape):
        self.p = {k: kw.pop(k, v) for k, v in _DEFAULTS.items()}
        self.channels, self.height, self.width = data_shape
        p = self.p
        if p["min_aspect_ratio"] is None:
            low, high = 1.0 - p["max_aspect_ratio"], 1.0 + p["max_aspect_ratio"]
        else:
            low, high = float(p["min_aspect_ratio"]), float(p["max_aspect_ratio"])
        self.aspect = (low, high)
        if p["min_crop_size"] != -1 or p["max_crop_size"] != -1:
            if not 0 < p["min_crop_size"] <= p["max_crop_size"]:
                raise KilnError(f"ImageRecordIter: need 0 < min_crop_size <= max_crop_size, "
                                f"got {p['min_crop_size']} and {p['max_crop_size']}"
                                + where_in_user_code())
        if not 0 < p["min_random_area"] <= p["max_random_area"] <= 1:
            raise KilnError(f"ImageRecordIter: need 0 < min_random_area <= max_random_area "
                            f"<= 1, got {p['min_random_area']} and {p['max_random_area']}"
                            + where_in_user_code())

    def _warps(self):
        p = self.p
        return (not p["random_resized_crop"] and (
            p["max_rotate_angle"] > 0 or p["rotate"] > 0 or p["max_shear_ratio"] > 0
            or p["max_random_scale"] != 1 or p["min_random_scale"] != 1
            or p["max_aspect_ratio"] != 0 or p["min_aspect_ratio"] is not None
            or p["max_img_size"] != 1e10 or p["min_img_size"] != 0))

    def _affine(self, img, rng):
        """Rotation by a whole number of degrees, shear (x + m y, y), scale and aspect, on a
        canvas scale times the image's size, the warped image centred on it."""
        p = self.p
        shear = rng.uniform(-p["max_shear_ratio"], p["max_shear_ratio"])
        angle = int(rng.integers(-p["max_rotate_angle"], p["max_rotate_angle"] + 1))
        if p["rotate"] > 0:
            angle = p["rotate"]
        cos, sin = math.cos(math.radians(angle)), math.sin(math.radians(angle))
        scale = rng.uniform(p["min_random_scale"], p["max_random_scale"])
        ratio = rng.uniform(*self.aspect)
        hs = 2 * scale / (1 + ratio)
        ws = ratio * hs
        h, w = img.shape[:2]
        new_w = int(max(p["min_img_size"], min(p["max_img_size"], scale * w)))
        new_h = int(max(p["min_img_size"], min(p["max_img_size"], scale * h)))
        m = _np.array([[hs * cos - shear * sin * ws, hs * sin + shear * cos * ws, 0.0],
                       [-sin * ws, cos * ws, 0.0]])
        m[0, 2] = (new_w - (m[0, 0] * w + m[0, 1] * h)) / 2
        m[1, 2] = (new_h - (m[1, 0] * w + m[1, 1] * h)) / 2
        return warp_affine(img, m, max(new_w, 1), max(new_h, 1), p["fill_value"])

    def _grown(self, img):
        """Grown, keeping its aspect, until it holds the output (MXNet 1.9.1)."""
        h, w = img.shape[:2]
        if h < self.height:
            img = resize_linear(img, w * self.height // h, self.height)
            h, w = img.shape[:2]
        if w < self.width:
            img = resize_linear(img, self.width, h * self.width // w)
        return img

    def _window(self, img, rng, ch, cw):
        h, w = img.shape[:2]
        if self.p["rand_crop"]:
            return int(rng.integers(0, h - ch + 1)), int(rng.integers(0, w - cw + 1))
        return (h - ch) // 2, (w - cw) // 2

    def _resized_crop(self, img, rng):
        """A window of random area fraction and aspect, resized to the output; after
        _RESIZED_CROP_TRIES windows that do not fit, a centre crop of the output's size."""
        h, w = img.shape[:2]
        low, high = self.aspect
        for _ in range(_RESIZED_CROP_TRIES):
            area = h * w * rng.uniform(self.p["min_random_area"], self.p["max_random_area"])
            ratio = rng.uniform(low, high) if high > 0 else 0.0
            if ratio <= 0:
                break
            cw, ch = int(round(math.sqrt(area * ratio))), int(round(math.sqrt(area / ratio)))
            if 0 < cw <= w and 0 < ch <= h:
                y0, x0 = int(rng.integers(0, h - ch + 1)), int(rng.integers(0, w - cw + 1))
                return resize_linear(img[y0:y0 + ch, x0:x0 + cw], self.width, self.height)
        img = self._grown(img)
        h, w = img.shape[:2]
        y0, x0 = (h - self.height) // 2, (w - self.width) // 2
        return img[y0:y0 + self.height, x0:x0 + self.width]

    def _crop(self, img, rng):
        p = self.p
        if p["random_resized_crop"] and (self.aspect != (1.0, 1.0) or (
                p["min_random_area"], p["max_random_area"]) != (1.0, 1.0)):
            # MXNet crops as if random_resized_crop were off when both ranges are [1, 1]
            return self._resized_crop(img, rng)
        if p["max_crop_size"] != -1:
            h, w = img.shape[:2]
            if min(h, w) < p["max_crop_size"]:
                raise KilnError(f"ImageRecordIter: an image of {h}x{w} pixels is smaller "
                                f"than max_crop_size={p['max_crop_size']}"
                                + where_in_user_code())
            size = int(rng.integers(p["min_crop_size"], p["max_crop_size"] + 1))
            y0, x0 = self._window(img, rng, size, size)
            return resize_linear(img[y0:y0 + size, x0:x0 + size], self.width, self.height)
        img = self._grown(img)
        y0, x0 = self._window(img, rng, self.height, self.width)
        return img[y0:y0 + self.height, x0:x0 + self.width]

    def _colour(self, img, rng):
        from ..gluon.data.vision import color_transforms as ct
        p = self.p
        if img.shape[2] != 3 or not (p["brightness"] or p["contrast"] or p["saturation"]
                                     or p["pca_noise"]):
            return img
        out = img.astype(_np.float32)
        for name in ("brightness", "contrast", "saturation"):
            if p[name]:
                out = getattr(ct, name)(out, 1.0 + rng.uniform(-p[name], p[name]))
        if p["pca_noise"]:
            noise = rng.normal(0.0, p["pca_noise"], 3).astype(_np.float32)
            out = out + ct.RandomLighting._eigvec @ (noise * ct.RandomLighting._eigval)
        return _uint8(out)

    def _hsl(self, img, rng):
        """MXNet adds whole numbers to OpenCV's 8-bit H (0-180), L and S channels."""
        p = self.p
        if img.shape[2] != 3 or not (p["random_h"] or p["random_s"] or p["random_l"]):
            return img
        from .hls import hls_to_rgb, rgb_to_hls
        shift = [int(rng.uniform(-p[k], p[k])) if p[k] else 0
                 for k in ("random_h", "random_l", "random_s")]
        hls = rgb_to_hls(img).astype(_np.int64) + _np.array(shift)
        hls = _np.clip(hls, 0, _np.array([180, 255, 255]))
        return hls_to_rgb(hls.astype(_np.uint8))

    def __call__(self, img, rng):
        p = self.p
        if p["resize"] > 0:
            h, w = img.shape[:2]
            r = p["resize"]
            img = resize_linear(img, r * w // h if w > h else r, r * h // w if h > w else r)
        if self._warps():
            img = self._affine(img, rng)
        if p["pad"] > 0:
            img = _np.pad(img, ((p["pad"],) * 2, (p["pad"],) * 2, (0, 0)),
                          constant_values=p["fill_value"])
        img = self._hsl(self._colour(self._crop(img, rng), rng), rng)
        if p["mirror"] or (p["rand_mirror"] and rng.random() < 0.5):
            img = img[:, ::-1]
        return img
