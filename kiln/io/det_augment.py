"""The augmenter of MXNet's ImageDetRecordIter (`det_aug_default`), on an (H, W, C) uint8
image and its (objects, width) boxes [id, xmin, ymin, xmax, ymax, ...] in fractions of the
image: resize the shorter side, an SSD-style random crop (samplers of scale, aspect ratio,
IoU and coverage ranges), a random padding, a random mirror, HSL and contrast jitter, then
fitting to data_shape (resize_mode force, shrink or fit). Random draws come from the
iterator's generator; they cannot reproduce MXNet's C++ one.
"""
import numpy as _np

from .._core.base import KilnError, where_in_user_code
from .hls import hls_to_rgb, rgb_to_hls
from .linear_resize import resize_linear

_SAMPLER_FIELDS = ("min_crop_scales", "max_crop_scales", "min_crop_aspect_ratios",
                   "max_crop_aspect_ratios", "min_crop_overlaps", "max_crop_overlaps",
                   "min_crop_sample_coverages", "max_crop_sample_coverages",
                   "min_crop_object_coverages", "max_crop_object_coverages",
                   "max_crop_trials")
_SAMPLER_DEFAULTS = (0.0, 1.0, 1.0, 1.0, 0.0, 1.0, 0.0, 1.0, 0.0, 1.0, 25)
_DEFAULTS = dict(resize=-1, rand_crop_prob=0.0, num_crop_sampler=1, crop_emit_mode="center",
                 emit_overlap_thresh=0.3, rand_pad_prob=0.0, max_pad_scale=1.0,
                 max_random_hue=0, random_hue_prob=0.0, max_random_saturation=0,
                 random_saturation_prob=0.0, max_random_illumination=0,
                 random_illumination_prob=0.0, max_random_contrast=0.0,
                 random_contrast_prob=0.0, rand_mirror_prob=0.0, fill_value=127,
                 resize_mode="force")


def _per_sampler(value, count, name):
    values = list(value) if isinstance(value, (list, tuple)) else [value]
    if len(values) == 1:
        values = values * count
    if len(values) != count:
        raise KilnError(f"ImageDetRecordIter: {name} needs 1 or num_crop_sampler={count} "
                        f"values, got {value!r}" + where_in_user_code())
    return [float(v) for v in values]


def _overlaps(boxes, box):
    """(intersection area, box areas) of every row of `boxes` with `box`."""
    lo = _np.maximum(boxes[:, :2], box[:2])
    hi = _np.minimum(boxes[:, 2:4], box[2:4])
    inter = _np.prod(_np.maximum(hi - lo, 0), axis=1)
    return inter, _np.prod(_np.maximum(boxes[:, 2:4] - boxes[:, :2], 0), axis=1)


class DetRecordAugmenter:
    """Built from ImageDetRecordIter's keyword arguments (it takes those it knows out of
    `kw`); `__call__(img, label, rng)` -> (img, label, (valid height, valid width))."""

    def __init__(self, kw, data_shape):
        self.p = {k: kw.pop(k, v) for k, v in _DEFAULTS.items()}
        self.height, self.width = data_shape[1:]
        count = int(self.p["num_crop_sampler"])
        fields = {name: _per_sampler(kw.pop(name, default), count, name)
                  for name, default in zip(_SAMPLER_FIELDS, _SAMPLER_DEFAULTS)}
        self.samplers = [dict((name, fields[name][k]) for name in _SAMPLER_FIELDS)
                         for k in range(count)]
        if self.p["resize_mode"] not in ("force", "shrink", "fit"):
            raise KilnError(f"ImageDetRecordIter: resize_mode must be 'force', 'shrink' or "
                            f"'fit', got {self.p['resize_mode']!r}" + where_in_user_code())
        if self.p["crop_emit_mode"] not in ("center", "overlap"):
            raise KilnError(f"ImageDetRecordIter: crop_emit_mode must be 'center' or "
                            f"'overlap', got {self.p['crop_emit_mode']!r}"
                            + where_in_user_code())

    def _crop_box(self, boxes, rng):
        """A crop (x0, y0, x1, y1) in fractions satisfying one sampler, or None."""
        found = []
        for s in self.samplers:
            for _ in range(int(s["max_crop_trials"])):
                scale = rng.uniform(s["min_crop_scales"], s["max_crop_scales"])
                ratio = rng.uniform(s["min_crop_aspect_ratios"], s["max_crop_aspect_ratios"])
                ratio = min(max(ratio, scale * scale), 1.0 / max(scale * scale, 1e-12))
                w, h = scale * _np.sqrt(ratio), scale / _np.sqrt(ratio)
                if not (0 < w <= 1 and 0 < h <= 1):
                    continue
                x0, y0 = rng.uniform(0, 1 - w), rng.uniform(0, 1 - h)
                box = _np.array([x0, y0, x0 + w, y0 + h])
                inter, areas = _overlaps(boxes, box)
                iou = inter / _np.maximum(areas + w * h - inter, 1e-12)
                sample_cov = inter / (w * h)
                object_cov = inter / _np.maximum(areas, 1e-12)
                ok = ((s["min_crop_overlaps"] <= iou) & (iou <= s["max_crop_overlaps"])
                      & (s["min_crop_sample_coverages"] <= sample_cov)
                      & (sample_cov <= s["max_crop_sample_coverages"])
                      & (s["min_crop_object_coverages"] <= object_cov)
                      & (object_cov <= s["max_crop_object_coverages"]))
                if ok.any():
                    found.append(box)
                    break
        return found[int(rng.integers(len(found)))] if found else None

    def _crop(self, img, label, rng):
        box = self._crop_box(label[:, 1:5], rng)
        if box is None:
            return img, label
        h, w = img.shape[:2]
        x0, y0 = int(box[0] * w), int(box[1] * h)
        x1, y1 = max(int(box[2] * w), x0 + 1), max(int(box[3] * h), y0 + 1)
        boxes = label[:, 1:5]
        if self.p["crop_emit_mode"] == "center":
            cx, cy = (boxes[:, 0] + boxes[:, 2]) / 2, (boxes[:, 1] + boxes[:, 3]) / 2
            keep = (cx > box[0]) & (cx < box[2]) & (cy > box[1]) & (cy < box[3])
        else:
            inter, areas = _overlaps(boxes, box)
            keep = inter / _np.maximum(areas, 1e-12) > self.p["emit_overlap_thresh"]
        if not keep.any():
            return img, label
        out = label[keep].copy()
        bw, bh = box[2] - box[0], box[3] - box[1]
        out[:, (1, 3)] = _np.clip((out[:, (1, 3)] - box[0]) / bw, 0, 1)
        out[:, (2, 4)] = _np.clip((out[:, (2, 4)] - box[1]) / bh, 0, 1)
        return img[y0:y1, x0:x1], out

    def _pad(self, img, label, rng):
        scale = rng.uniform(1.0, self.p["max_pad_scale"])
        h, w = img.shape[:2]
        nh, nw = int(h * scale), int(w * scale)
        if nh <= h and nw <= w:
            return img, label
        y0, x0 = int(rng.integers(0, nh - h + 1)), int(rng.integers(0, nw - w + 1))
        canvas = _np.full((nh, nw, img.shape[2]), self.p["fill_value"], _np.uint8)
        canvas[y0:y0 + h, x0:x0 + w] = img
        out = label.copy()
        out[:, (1, 3)] = (out[:, (1, 3)] * w + x0) / nw
        out[:, (2, 4)] = (out[:, (2, 4)] * h + y0) / nh
        return canvas, out

    def _colour(self, img, rng):
        p = self.p
        if img.shape[2] != 3:
            return img
        shifts = [0, 0, 0]   # OpenCV's 8-bit H, L, S
        for k, (amount, prob) in enumerate((
                ("max_random_hue", "random_hue_prob"),
                ("max_random_illumination", "random_illumination_prob"),
                ("max_random_saturation", "random_saturation_prob"))):
            if p[amount] and rng.random() < p[prob]:
                shifts[k] = int(rng.uniform(-p[amount], p[amount]))
        if any(shifts):
            hls = _np.clip(rgb_to_hls(img).astype(_np.int64) + shifts, 0, [180, 255, 255])
            img = hls_to_rgb(hls.astype(_np.uint8))
        if p["max_random_contrast"] and rng.random() < p["random_contrast_prob"]:
            alpha = 1.0 + rng.uniform(-p["max_random_contrast"], p["max_random_contrast"])
            img = _np.clip(_np.floor(img * alpha + 0.5), 0, 255).astype(_np.uint8)
        return img

    def _fit(self, img):
        """The image resized for data_shape, and its size there (the rest is zeros)."""
        h, w = img.shape[:2]
        mode = self.p["resize_mode"]
        if mode == "force":
            return resize_linear(img, self.width, self.height), (self.height, self.width)
        scale = min(self.height / h, self.width / w)
        if mode == "shrink":
            scale = min(scale, 1.0)
        nh, nw = max(1, int(h * scale)), max(1, int(w * scale))
        return resize_linear(img, nw, nh), (nh, nw)

    def __call__(self, img, label, rng):
        p = self.p
        if p["resize"] > 0:
            h, w = img.shape[:2]
            r = p["resize"]
            img = resize_linear(img, r * w // h if w > h else r, r * h // w if h > w else r)
        if p["rand_crop_prob"] > 0 and rng.random() < p["rand_crop_prob"]:
            img, label = self._crop(img, label, rng)
        if p["rand_pad_prob"] > 0 and p["max_pad_scale"] > 1 and \
                rng.random() < p["rand_pad_prob"]:
            img, label = self._pad(img, label, rng)
        if p["rand_mirror_prob"] > 0 and rng.random() < p["rand_mirror_prob"]:
            img = img[:, ::-1]
            label = label.copy()
            label[:, 1], label[:, 3] = 1.0 - label[:, 3], 1.0 - label[:, 1]
        img, size = self._fit(self._colour(img, rng))
        return img, label, size
