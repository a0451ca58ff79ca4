"""MXNet's resampling contrib ops: `BilinearResize2D`, `AdaptiveAvgPooling2D`, `ROIAlign`
and `PSROIPooling`. Each output is a fixed linear map of the input, so each is a matmul
with an interpolation matrix built in NumPy from the shapes (and, for the roi ops, the box
values): differentiable in the data, and BilinearResize2D/AdaptiveAvgPooling2D also trace.
"""
import math

import numpy as _np

from .... import np as knp
from ...._core.base import KilnError
from ...._core.ndarray import ndarray
from ...ops.table import _op


def _linear_weights(n_in, n_out, align_corners):
    """(n_out, n_in) bilinear interpolation along one axis (MXNet's rule: corners aligned,
    or half-pixel centres clamped at 0)."""
    w = _np.zeros((n_out, n_in))
    for i in range(n_out):
        if align_corners:
            src = i * (n_in - 1) / (n_out - 1) if n_out > 1 else 0.0
        else:
            src = max((i + 0.5) * n_in / n_out - 0.5, 0.0)
        lo = min(int(math.floor(src)), n_in - 1)
        hi = min(lo + 1, n_in - 1)
        frac = src - lo
        w[i, lo] += 1 - frac
        w[i, hi] += frac
    return w


def _apply_separable(data, wh, ww):
    """data (..., H, W) -> wh @ data @ ww^T."""
    dt = data.dtype
    out = knp.matmul(ndarray._wrap(wh.astype(dt)), data)
    return knp.matmul(out, ndarray._wrap(ww.T.astype(dt)))


# MXNet's modes that resize to the nearest even or odd size below or above
_TO_PARITY = {"to_even_down": lambda n: n - n % 2, "to_even_up": lambda n: n + n % 2,
              "to_odd_down": lambda n: n - (1 - n % 2), "to_odd_up": lambda n: n + (1 - n % 2)}


def _odd_scale(n, scale):
    if scale is None:
        raise KilnError("BilinearResize2D: mode 'odd_scale' needs scale_height and "
                        "scale_width")
    return int(n * float(scale)) if n % 2 == 0 else int((n - 1) * float(scale)) + 1


@_op("_contrib_BilinearResize2D", ("data", "like"))     # like: an input in mode 'like' only
def BilinearResize2D(data, like=None, height=1, width=1, scale_height=None, scale_width=None,
                     mode="size", align_corners=True, **_):
    """Bilinear resizing of NCHW `data` to `height` x `width` (or by `scale_height`/`scale_width`,
    or to the size of `like`, by `mode`)."""
    data = knp.asarray(data)
    h, w = data.shape[-2:]
    if mode == "like" and like is not None:
        height, width = knp.asarray(like).shape[-2:]
    elif mode in _TO_PARITY:
        height, width = _TO_PARITY[mode](h), _TO_PARITY[mode](w)
    elif mode == "odd_scale":       # an odd size keeps its corners: (n - 1) * scale + 1
        height = _odd_scale(h, scale_height)
        width = _odd_scale(w, scale_width)
    elif mode != "size":
        raise KilnError(f"BilinearResize2D: mode {mode!r} is not one of 'size', 'like', "
                        f"'odd_scale', {', '.join(map(repr, _TO_PARITY))}")
    elif scale_height is not None:
        height, width = int(h * float(scale_height)), int(w * float(scale_width))
    height, width = int(height), int(width)
    if height < 1 or width < 1:
        raise KilnError(f"BilinearResize2D: output size must be positive, got "
                        f"({height}, {width})")
    return _apply_separable(data, _linear_weights(h, height, align_corners),
                            _linear_weights(w, width, align_corners))


def _adaptive_weights(n_in, n_out):
    w = _np.zeros((n_out, n_in))
    for i in range(n_out):
        lo = (i * n_in) // n_out
        hi = -((-(i + 1) * n_in) // n_out)
        w[i, lo:hi] = 1.0 / (hi - lo)
    return w


def AdaptiveAvgPooling2D(data, output_size=1, **_):
    """Average pooling of NCHW `data` to an `output_size` grid, with windows sized to fit."""
    data = knp.asarray(data)
    size = (output_size,) * 2 if isinstance(output_size, int) else tuple(output_size)
    if len(size) == 1:
        size = size * 2
    h, w = data.shape[-2:]
    return _apply_separable(data, _adaptive_weights(h, int(size[0])),
                            _adaptive_weights(w, int(size[1])))


def _bilinear_row(y, x, height, width):
    """Detectron's bilinear weights of one sample point, as {flat index: weight}."""
    if y < -1.0 or y > height or x < -1.0 or x > width:
        return {}
    y, x = max(y, 0.0), max(x, 0.0)
    y0, x0 = int(y), int(x)
    if y0 >= height - 1:
        y0 = y1 = height - 1
        y = float(y0)
    else:
        y1 = y0 + 1
    if x0 >= width - 1:
        x0 = x1 = width - 1
        x = float(x0)
    else:
        x1 = x0 + 1
    ly, lx = y - y0, x - x0
    out = {}
    for (r, c, wt) in ((y0, x0, (1 - ly) * (1 - lx)), (y0, x1, (1 - ly) * lx),
                       (y1, x0, ly * (1 - lx)), (y1, x1, ly * lx)):
        out[r * width + c] = out.get(r * width + c, 0.0) + wt
    return out


def _roi_matrix(roi, pooled, scale, ratio, aligned, height, width):
    ph, pw = pooled
    off = 0.5 if aligned else 0.0
    x0, y0, x1, y1 = (float(v) * scale - off for v in roi)
    rw, rh = x1 - x0, y1 - y0
    if not aligned:
        rw, rh = max(rw, 1.0), max(rh, 1.0)
    bh, bw = rh / ph, rw / pw
    gh = ratio if ratio > 0 else int(math.ceil(rh / ph))
    gw = ratio if ratio > 0 else int(math.ceil(rw / pw))
    count = max(gh * gw, 1)
    m = _np.zeros((ph * pw, height * width))
    for i in range(ph):
        for j in range(pw):
            row = m[i * pw + j]
            for iy in range(gh):
                y = y0 + i * bh + (iy + 0.5) * bh / gh
                for ix in range(gw):
                    x = x0 + j * bw + (ix + 0.5) * bw / gw
                    for k, wt in _bilinear_row(y, x, height, width).items():
                        row[k] += wt / count
    return m


def _batch_index(op, boxes, n):
    """The rois' batch indices, checked (MXNet reads past the batch on a bad one)."""
    index = boxes[:, 0].astype(_np.int64)
    if len(index) and (index.min() < 0 or index.max() >= n):
        raise KilnError(f"{op}: roi batch indices must be in [0, {n}), got "
                        f"{sorted(set(index.tolist()))}")
    return index


def ROIAlign(data, rois, pooled_size=(1, 1), spatial_scale=1.0, sample_ratio=-1,
             position_sensitive=False, aligned=False, **_):
    """Average of bilinear samples per bin (Mask R-CNN's RoIAlign): rois are rows
    (batch index, x1, y1, x2, y2); out (num_rois, C, ph, pw), or position_sensitive,
    (num_rois, C / (ph * pw), ph, pw). The gradient reaches data,
    not the boxes (as in MXNet)."""
    data = knp.asarray(data)
    boxes = knp.asarray(rois)._concrete("contrib.ROIAlign()").astype(_np.float64)
    if boxes.ndim != 2 or boxes.shape[1] != 5:
        raise KilnError(f"ROIAlign: rois must be (num_rois, 5), got {boxes.shape}")
    pooled = (pooled_size,) * 2 if isinstance(pooled_size, int) else tuple(pooled_size)
    n, c, h, w = data.shape
    mats = _np.stack([_roi_matrix(b[1:], pooled, float(spatial_scale), int(sample_ratio),
                                  aligned, h, w) for b in boxes])
    index = _batch_index("ROIAlign", boxes, n)
    rows = knp.take(knp.reshape(data, (n, c, h * w)), index, axis=0)       # (R, C, HW)
    if position_sensitive:
        # R-FCN's: bin (i, j) of output channel k reads input channel k * P + i * pw + j
        bins = pooled[0] * pooled[1]
        if c % bins:
            raise KilnError(f"ROIAlign: position_sensitive needs channels divisible by "
                            f"{bins} bins, got {c}")
        rows = knp.reshape(rows, (len(boxes), c // bins, bins, h * w))
        weights = ndarray._wrap(mats[:, None].astype(data.dtype))         # (R, 1, P, HW)
        out = knp.sum(rows * weights, axis=-1)
        return knp.reshape(out, (len(boxes), c // bins) + pooled)
    out = knp.matmul(rows, ndarray._wrap(_np.swapaxes(mats, 1, 2).astype(data.dtype)))
    return knp.reshape(out, (len(boxes), c) + pooled)


def _rroi_matrix(roi, pooled, scale, ratio, height, width):
    """(ph*pw, H*W) averaging matrix of one rotated roi (centre x, y, width, height, angle
    in degrees): its bins' samples are rotated about the centre (MXNet's RROIAlign)."""
    ph, pw = pooled
    cx, cy, rw, rh = (float(v) * scale for v in roi[:4])
    theta = float(roi[4]) * math.pi / 180.0
    rw, rh = max(rw, 1.0), max(rh, 1.0)       # malformed rois become 1 x 1
    bh, bw = rh / ph, rw / pw
    gh = ratio if ratio > 0 else int(math.ceil(rh / ph))
    gw = ratio if ratio > 0 else int(math.ceil(rw / pw))
    cos, sin = math.cos(theta), math.sin(theta)
    m = _np.zeros((ph * pw, height * width))
    for i in range(ph):
        for j in range(pw):
            row = m[i * pw + j]
            for iy in range(gh):
                yy = -rh / 2 + i * bh + (iy + 0.5) * bh / gh
                for ix in range(gw):
                    xx = -rw / 2 + j * bw + (ix + 0.5) * bw / gw
                    x, y = xx * cos + yy * sin + cx, yy * cos - xx * sin + cy
                    for k, wt in _bilinear_row(y, x, height, width).items():
                        row[k] += wt / max(gh * gw, 1)
    return m


def RROIAlign(data, rois, pooled_size=(1, 1), spatial_scale=1.0, sampling_ratio=-1, **_):
    """RoIAlign over rotated boxes: rois are rows (batch index, centre x, centre y, width,
    height, angle in degrees); out (num_rois, C, ph, pw)."""
    data = knp.asarray(data)
    boxes = knp.asarray(rois)._concrete("contrib.RROIAlign()").astype(_np.float64)
    if boxes.ndim != 2 or boxes.shape[1] != 6:
        raise KilnError(f"RROIAlign: rois must be (num_rois, 6), got {boxes.shape}")
    pooled = (pooled_size,) * 2 if isinstance(pooled_size, int) else tuple(pooled_size)
    n, c, h, w = data.shape
    mats = _np.stack([_rroi_matrix(b[1:], pooled, float(spatial_scale), int(sampling_ratio),
                                   h, w) for b in boxes]) if len(boxes) else \
        _np.zeros((0, pooled[0] * pooled[1], h * w))
    index = _batch_index("RROIAlign", boxes, n)
    rows = knp.take(knp.reshape(data, (n, c, h * w)), index, axis=0)
    out = knp.matmul(rows, ndarray._wrap(_np.swapaxes(mats, 1, 2).astype(data.dtype)))
    return knp.reshape(out, (len(boxes), c) + pooled)


def _c_round(v):
    """C's round(): halves away from zero (NumPy's rounds them to even)."""
    return math.copysign(math.floor(abs(v) + 0.5), v)


def _psroi_bins(roi, pooled, scale, height, width):
    """(P*P, H*W) averaging matrix of one roi's bins (R-FCN's PSROIPooling)."""
    x0, y0 = _c_round(roi[0]) * scale, _c_round(roi[1]) * scale
    x1, y1 = (_c_round(roi[2]) + 1) * scale, (_c_round(roi[3]) + 1) * scale
    bin_h, bin_w = max(y1 - y0, 0.1) / pooled, max(x1 - x0, 0.1) / pooled
    m = _np.zeros((pooled * pooled, height * width))
    for ph in range(pooled):
        hs = min(max(int(math.floor(ph * bin_h + y0)), 0), height)
        he = min(max(int(math.ceil((ph + 1) * bin_h + y0)), 0), height)
        for pw in range(pooled):
            ws = min(max(int(math.floor(pw * bin_w + x0)), 0), width)
            we = min(max(int(math.ceil((pw + 1) * bin_w + x0)), 0), width)
            if he > hs and we > ws:
                cells = (_np.arange(hs, he)[:, None] * width + _np.arange(ws, we)).ravel()
                m[ph * pooled + pw, cells] = 1.0 / len(cells)
    return m


def PSROIPooling(data, rois, spatial_scale=1.0, output_dim=1, pooled_size=1, group_size=0,
                 **_):
    """Position-sensitive RoI pooling (R-FCN): bin (i, j) of output channel k averages input
    channel (k * group + gi) * group + gj over the bin; out (num_rois, output_dim, p, p).
    An averaging matmul per roi and a gather of the channel of each bin: the gradient reaches
    the data."""
    data = knp.asarray(data)
    boxes = knp.asarray(rois)._concrete("contrib.PSROIPooling()").astype(_np.float64)
    p, dim = int(pooled_size), int(output_dim)
    group = int(group_size) or p
    n, c, h, w = data.shape
    if c != dim * group * group:
        raise KilnError(f"PSROIPooling: input channels must be output_dim * group_size^2 = "
                        f"{dim * group * group}, got {c}")
    mats = _np.stack([_psroi_bins(b[1:], p, float(spatial_scale), h, w) for b in boxes])
    index = _batch_index("PSROIPooling", boxes, n)
    rows = knp.take(knp.reshape(data, (n, c, h * w)), index, axis=0)          # (R, C, HW)
    pooled = knp.matmul(rows, ndarray._wrap(_np.swapaxes(mats, 1, 2).astype(data.dtype)))
    bins = _np.arange(p * p)
    gi = _np.clip((bins // p) * group // p, 0, group - 1)
    gj = _np.clip((bins % p) * group // p, 0, group - 1)
    channel = (_np.arange(dim)[:, None] * group + gi) * group + gj            # (dim, P*P)
    flat = knp.reshape(pooled, (len(boxes), c * p * p))
    picked = knp.take(flat, (channel * p * p + bins).ravel(), axis=1)
    return knp.reshape(picked, (len(boxes), dim, p, p))
