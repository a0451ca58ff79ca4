"""MXNet's `mx.image` detection pipeline: augmenters that move an image together with its
boxes, CreateDetAugmenter, and ImageDetIter (batches of images with (objects, width) labels
padded with -1). A label row is [class, xmin, ymin, xmax, ymax, ...] with corners as
fractions of the image. Random choices come from Python's `random`, as in MXNet, so the
same seed picks MXNet's crops and paddings.
"""
import json
import math
import random as _pyrandom

import numpy as _np

from ..._core.base import KilnError, where_in_user_code
from ...data.image import _to_numpy, _wrap, fixed_crop
from .augment import (Augmenter, CastAug, ColorJitterAug, ColorNormalizeAug, ForceResizeAug,
    HueJitterAug, LightingAug, RandomGrayAug, ResizeAug, copyMakeBorder, _PCA_EIGVAL,
    _PCA_EIGVEC, _plain)
from .iterator import ImageIter


class _SkipExample(Exception):
    """An example whose label is unusable (MXNet logs and skips it)."""


def _pair(value):
    return tuple(value) if isinstance(value, (tuple, list)) else (value, value)


def _areas(boxes):
    return _np.maximum(0, boxes[:, 2] - boxes[:, 0]) * _np.maximum(0, boxes[:, 3] - boxes[:, 1])


class DetAugmenter:
    """Base class: __call__(src, label) -> (src, label)."""

    def __init__(self, **kwargs):
        self._kwargs = {k: _plain(v) for k, v in kwargs.items()}

    def dumps(self):
        return json.dumps([type(self).__name__.lower(), self._kwargs])

    def __call__(self, src, label):
        raise NotImplementedError("a DetAugmenter subclass must implement __call__")


class DetBorrowAug(DetAugmenter):
    """Apply an image-only Augmenter; the label passes through."""

    def __init__(self, augmenter):
        if not isinstance(augmenter, Augmenter):
            raise KilnError(f"DetBorrowAug: expected an image.Augmenter, got "
                            f"{type(augmenter).__name__}")
        super().__init__(augmenter=augmenter.dumps())
        self.augmenter = augmenter

    def dumps(self):
        return [type(self).__name__.lower(), self.augmenter.dumps()]

    def __call__(self, src, label):
        return self.augmenter(src), label


class DetRandomSelectAug(DetAugmenter):
    """With probability skip_prob nothing; otherwise one of aug_list, chosen at random."""

    def __init__(self, aug_list, skip_prob=0):
        super().__init__(skip_prob=skip_prob)
        aug_list = list(aug_list) if isinstance(aug_list, (list, tuple)) else [aug_list]
        if not all(isinstance(a, DetAugmenter) for a in aug_list):
            raise KilnError("DetRandomSelectAug: aug_list must hold DetAugmenters")
        self.aug_list, self.skip_prob = aug_list, skip_prob if aug_list else 1

    def dumps(self):
        return [type(self).__name__.lower(), [a.dumps() for a in self.aug_list]]

    def __call__(self, src, label):
        if _pyrandom.random() < self.skip_prob:
            return src, label
        _pyrandom.shuffle(self.aug_list)
        return self.aug_list[0](src, label)


class DetHorizontalFlipAug(DetAugmenter):
    """With probability p, mirror the image and its boxes."""

    def __init__(self, p):
        super().__init__(p=p)
        self.p = p

    def __call__(self, src, label):
        if _pyrandom.random() < self.p:
            src = _wrap(_to_numpy(src, "DetHorizontalFlipAug")[:, ::-1])
            label = label.copy()
            label[:, 1], label[:, 3] = 1.0 - label[:, 3], 1.0 - label[:, 1]
        return src, label


def _box_size(ratio, min_area, max_area, height, width, grow):
    """MXNet's choice of (w, h) for a crop (grow=False) or a padding (grow=True) of aspect
    `ratio` and area between min_area and max_area, or None."""
    h = int(round(math.sqrt(min_area / ratio)))
    max_h = int(round(math.sqrt(max_area / ratio)))
    if grow:
        if round(h * ratio) < width:
            h = int((width + 0.499999) / ratio)
        h = max(h, height)
    else:
        if round(max_h * ratio) > width:
            max_h = int((width + 0.4999999) / ratio)
        max_h = min(max_h, height)
    h = min(h, max_h)
    if h < max_h:
        h = _pyrandom.randint(h, max_h)
    w = int(round(h * ratio))
    if grow:
        return (w, h) if h - height >= 2 and w - width >= 2 else None
    area = w * h
    if area < min_area:
        h += 1
        w, area = int(round(h * ratio)), int(round(h * ratio)) * h
    if area > max_area:
        h -= 1
        w, area = int(round(h * ratio)), int(round(h * ratio)) * h
    if min_area <= area <= max_area and 0 <= w <= width and 0 <= h <= height:
        return w, h
    return None


def _boxes(aug, height, width, grow):
    """MXNet's candidate boxes (x, y, w, h) for a crop (where it lies in the image) or a
    padding (where the image lies on the canvas), drawn lazily in MXNet's order, at most
    aug.max_attempts of them."""
    min_area, max_area = (a * height * width for a in aug.area_range)
    for _ in range(aug.max_attempts):
        ratio = _pyrandom.uniform(*aug.aspect_ratio_range)
        if ratio <= 0:
            continue
        size = _box_size(ratio, min_area, max_area, height, width, grow)
        if size is None:
            continue
        w, h = size
        y = _pyrandom.randint(0, max(0, h - height if grow else height - h))
        x = _pyrandom.randint(0, max(0, w - width if grow else width - w))
        yield x, y, w, h


class DetRandomCropAug(DetAugmenter):
    """A random crop (aspect and area ranges) that keeps more than min_object_covered of
    every box it touches; boxes left with min_eject_coverage or less are dropped. After
    max_attempts misses the example is unchanged."""

    def __init__(self, min_object_covered=0.1, aspect_ratio_range=(0.75, 1.33),
                 area_range=(0.05, 1.0), min_eject_coverage=0.3, max_attempts=50):
        aspect_ratio_range, area_range = _pair(aspect_ratio_range), _pair(area_range)
        super().__init__(min_object_covered=min_object_covered,
                         aspect_ratio_range=aspect_ratio_range, area_range=area_range,
                         min_eject_coverage=min_eject_coverage, max_attempts=max_attempts)
        self.min_object_covered, self.min_eject_coverage = min_object_covered, min_eject_coverage
        self.aspect_ratio_range, self.area_range = aspect_ratio_range, area_range
        self.max_attempts = max_attempts
        self.enabled = (0 < area_range[1] and area_range[0] <= area_range[1]
                        and 0 < aspect_ratio_range[0] <= aspect_ratio_range[1])

    def __call__(self, src, label):
        img = _to_numpy(src, "DetRandomCropAug")
        found = self._proposal(label, img.shape[0], img.shape[1])
        if found:
            x, y, w, h, label = found
            src = fixed_crop(img, x, y, w, h, None)
        return src, label

    def _covers(self, label, box, width, height):
        x0, y0, x1, y1 = box
        if (x1 - x0) * (y1 - y0) < 2:
            return False
        frac = _np.array([x0 / width, y0 / height, x1 / width, y1 / height])
        areas = _areas(label[:, 1:5])
        objects = label[areas * width * height > 2, 1:5]
        if not len(objects):
            return False
        inter = _np.concatenate([_np.maximum(objects[:, :2], frac[:2]),
                                 _np.minimum(objects[:, 2:], frac[2:])], 1)
        empty = (inter[:, 0] >= inter[:, 2]) | (inter[:, 1] >= inter[:, 3])
        inter[empty] = 0
        coverage = _areas(inter) / areas[areas * width * height > 2]
        coverage = coverage[coverage > 0]
        return coverage.size > 0 and coverage.min() > self.min_object_covered

    def _moved(self, label, box, height, width):
        x, y, w, h = box[0] / width, box[1] / height, box[2] / width, box[3] / height
        out = label.copy()
        out[:, (1, 3)] = (out[:, (1, 3)] - x) / w
        out[:, (2, 4)] = (out[:, (2, 4)] - y) / h
        out[:, 1:5] = _np.clip(out[:, 1:5], 0, 1)
        coverage = _areas(out[:, 1:5]) * w * h / _areas(label[:, 1:5])
        keep = (out[:, 3] > out[:, 1]) & (out[:, 4] > out[:, 2]) & (
            coverage > self.min_eject_coverage)
        return out[keep] if keep.any() else None

    def _proposal(self, label, height, width):
        if not self.enabled or height <= 0 or width <= 0:
            return ()
        for x, y, w, h in _boxes(self, height, width, grow=False):
            if self._covers(label, (x, y, x + w, y + h), width, height):
                moved = self._moved(label, (x, y, w, h), height, width)
                if moved is not None:
                    return x, y, w, h, moved
        return ()


class DetRandomPadAug(DetAugmenter):
    """Place the image at a random spot of a larger canvas (aspect and area ranges, area
    relative to the image) filled with pad_val; the boxes move with it."""

    def __init__(self, aspect_ratio_range=(0.75, 1.33), area_range=(1.0, 3.0),
                 max_attempts=50, pad_val=(128, 128, 128)):
        aspect_ratio_range, area_range = _pair(aspect_ratio_range), _pair(area_range)
        pad_val = tuple(pad_val) if isinstance(pad_val, (list, tuple)) else (pad_val,) * 3
        super().__init__(aspect_ratio_range=aspect_ratio_range, area_range=area_range,
                         max_attempts=max_attempts, pad_val=pad_val)
        self.aspect_ratio_range, self.area_range = aspect_ratio_range, area_range
        self.max_attempts, self.pad_val = max_attempts, pad_val
        self.enabled = (area_range[1] > 1.0 and area_range[0] <= area_range[1]
                        and 0 < aspect_ratio_range[0] <= aspect_ratio_range[1])

    def __call__(self, src, label):
        img = _to_numpy(src, "DetRandomPadAug")
        height, width = img.shape[:2]
        if not self.enabled or height <= 0 or width <= 0:
            return src, label
        for x, y, w, h in _boxes(self, height, width, grow=True):
            out = label.copy()
            out[:, (1, 3)] = (out[:, (1, 3)] * width + x) / w
            out[:, (2, 4)] = (out[:, (2, 4)] * height + y) / h
            return copyMakeBorder(img, y, h - y - height, x, w - x - width,
                                  values=list(self.pad_val)), out
        return src, label


def CreateMultiRandCropAugmenter(min_object_covered=0.1,  # noqa: N802
                                 aspect_ratio_range=(0.75, 1.33), area_range=(0.05, 1.0),
                                 min_eject_coverage=0.3, max_attempts=50, skip_prob=0):
    """One DetRandomCropAug per set of parameters (lists are zipped, single values
    repeated), of which DetRandomSelectAug applies one at random."""
    params = [p if isinstance(p, list) else [p] for p in (
        min_object_covered, aspect_ratio_range, area_range, min_eject_coverage, max_attempts)]
    count = max(len(p) for p in params)
    for p in params:
        if len(p) not in (1, count):
            raise KilnError(f"CreateMultiRandCropAugmenter: parameter lists must have one "
                            f"value or {count}, got {p!r}")
    params = [p * count if len(p) == 1 else p for p in params]
    return DetRandomSelectAug([DetRandomCropAug(*values) for values in zip(*params)],
                              skip_prob=skip_prob)


def CreateDetAugmenter(data_shape, resize=0, rand_crop=0, rand_pad=0,  # noqa: N802
                       rand_gray=0, rand_mirror=False, mean=None, std=None, brightness=0,
                       contrast=0, saturation=0, pca_noise=0, hue=0, inter_method=2,
                       min_object_covered=0.1, aspect_ratio_range=(0.75, 1.33),
                       area_range=(0.05, 3.0), min_eject_coverage=0.3, max_attempts=50,
                       pad_val=(127, 127, 127)):
    """MXNet's detection list: resize, random crop (probability rand_crop), mirror,
    random padding (probability rand_pad), resize to data_shape, cast, colour jitter, hue,
    PCA noise, gray, normalization."""
    augs = [DetBorrowAug(ResizeAug(resize, inter_method))] if resize > 0 else []
    if rand_crop > 0:
        augs.append(CreateMultiRandCropAugmenter(min_object_covered, aspect_ratio_range,
                                                 area_range, min_eject_coverage,
                                                 max_attempts, skip_prob=1 - rand_crop))
    if rand_mirror > 0:
        augs.append(DetHorizontalFlipAug(0.5))
    if rand_pad > 0:
        pad = DetRandomPadAug(aspect_ratio_range, (1.0, _pair(area_range)[1]), max_attempts,
                              pad_val)
        augs.append(DetRandomSelectAug([pad], 1 - rand_pad))
    augs.append(DetBorrowAug(ForceResizeAug((data_shape[2], data_shape[1]), inter_method)))
    augs.append(DetBorrowAug(CastAug()))
    if brightness or contrast or saturation:
        augs.append(DetBorrowAug(ColorJitterAug(brightness, contrast, saturation)))
    if hue:
        augs.append(DetBorrowAug(HueJitterAug(hue)))
    if pca_noise > 0:
        augs.append(DetBorrowAug(LightingAug(pca_noise, _PCA_EIGVAL, _PCA_EIGVEC)))
    if rand_gray > 0:
        augs.append(DetBorrowAug(RandomGrayAug(rand_gray)))
    mean = _np.array([123.68, 116.28, 103.53], _np.float32) if mean is True else mean
    std = _np.array([58.395, 57.12, 57.375], _np.float32) if std is True else std
    if mean is not None or std is not None:
        augs.append(DetBorrowAug(ColorNormalizeAug(mean, std)))
    return augs


def parse_det_label(raw):
    """[header_width, object_width, ...header, objects...] -> (objects, object_width),
    the rows whose boxes have positive size."""
    raw = _np.asarray(raw, _np.float32).ravel()
    if raw.size < 7:
        raise _SkipExample(f"a detection label needs at least 7 values, got {raw.size}")
    header, width = int(raw[0]), int(raw[1])
    if width < 5 or header < 2 or (raw.size - header) % width:
        raise _SkipExample(f"label of {raw.size} values does not split into a header of "
                           f"{header} and objects of {width}")
    objects = raw[header:].reshape(-1, width)
    objects = objects[(objects[:, 3] > objects[:, 1]) & (objects[:, 4] > objects[:, 2])]
    if not len(objects):
        raise _SkipExample("no object has a box of positive size")
    return objects


class ImageDetIter(ImageIter):
    """ImageIter for detection: labels are (batch, max objects, object width), -1 past each
    image's objects; augmenters take and return (image, label) (CreateDetAugmenter(
    data_shape, **kwargs) by default). Examples whose labels are unusable are skipped."""

    def __init__(self, batch_size, data_shape, path_imgrec=None, path_imglist=None,
                 path_root=None, path_imgidx=None, shuffle=False, part_index=0, num_parts=1,
                 aug_list=None, imglist=None, data_name="data", label_name="label",
                 last_batch_handle="pad", **kwargs):
        super().__init__(batch_size, data_shape, path_imgrec=path_imgrec,
                         path_imglist=path_imglist, path_root=path_root,
                         path_imgidx=path_imgidx, shuffle=shuffle, part_index=part_index,
                         num_parts=num_parts, aug_list=[], imglist=imglist,
                         data_name=data_name, label_name=label_name,
                         last_batch_handle=last_batch_handle)
        self.auglist = CreateDetAugmenter(data_shape, **kwargs) if aug_list is None \
            else aug_list
        self.label_shape = self._estimate_label_shape()
        self._set_label_shape(self.label_shape)

    def _set_label_shape(self, label_shape):
        from ...io.base import DataDesc
        self.provide_label = [DataDesc(self.provide_label[0].name,
                                       (self.batch_size,) + tuple(label_shape))]

    def _estimate_label_shape(self):
        most, width = 0, None
        self.reset()
        try:
            while True:
                value, _ = self.next_sample()
                try:
                    objects = parse_det_label(value)
                except _SkipExample:
                    continue
                most, width = max(most, len(objects)), objects.shape[1]
        except StopIteration:
            pass
        self.reset()
        if width is None:
            raise KilnError("ImageDetIter: no example has a usable detection label "
                            "([header_width, object_width, ..., id, xmin, ymin, xmax, ymax, "
                            "...])" + where_in_user_code())
        return most, width

    def _empty_label(self):
        return _np.full(self.provide_label[0].shape, -1.0, _np.float32)

    def _prepared(self, value, encoded):
        image = self.imdecode(encoded)
        try:
            label = parse_det_label(value)
        except _SkipExample:
            return None
        for aug in self.auglist:
            image, label = aug(image, label)
        if not ((label[:, 0] >= 0) & (label[:, 3] > label[:, 1])
                & (label[:, 4] > label[:, 2])).any():
            return None
        return image, label

    def _store(self, data, label, i, image, objects):
        data[i] = self.postprocess_data(image)
        rows = min(len(objects), label.shape[1])
        label[i, :rows] = objects[:rows, :label.shape[2]]
        label[i, rows:] = -1

    def augmentation_transform(self, data, label):
        for aug in self.auglist:
            data, label = aug(data, label)
        return data, label

    def reshape(self, data_shape=None, label_shape=None):
        """Change the output shapes; labels may grow in objects, never shrink."""
        if data_shape is not None:
            data_shape = tuple(data_shape)
            if len(data_shape) != 3 or data_shape[0] != 3:
                raise KilnError(f"ImageDetIter.reshape: data_shape must be (3, H, W), got "
                                f"{data_shape}" + where_in_user_code())
            from ...io.base import DataDesc
            self.data_shape = data_shape
            self.provide_data = [DataDesc(self.provide_data[0].name,
                                          (self.batch_size,) + data_shape)]
        if label_shape is not None:
            label_shape = tuple(label_shape)
            if len(label_shape) != 2 or label_shape[0] < self.label_shape[0] or \
                    label_shape[1] != self.label_shape[1]:
                raise KilnError(f"ImageDetIter.reshape: label_shape must be (objects >= "
                                f"{self.label_shape[0]}, {self.label_shape[1]}), got "
                                f"{label_shape}" + where_in_user_code())
            self.label_shape = label_shape
            self._set_label_shape(label_shape)

    def sync_label_shape(self, it, verbose=False):
        """Give this iterator and `it` the larger of their object counts; returns `it`."""
        if not isinstance(it, ImageDetIter) or it.label_shape[1] != self.label_shape[1]:
            raise KilnError("ImageDetIter.sync_label_shape: expected an ImageDetIter with "
                            f"objects of width {self.label_shape[1]}" + where_in_user_code())
        most = max(self.label_shape[0], it.label_shape[0])
        for target in (self, it):
            if target.label_shape[0] < most:
                target.reshape(None, (most, target.label_shape[1]))
        return it
