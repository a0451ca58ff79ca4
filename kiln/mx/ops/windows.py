"""MXNet 1.x's windowed operators by name: ROIPooling, and im2col/col2im over kiln's
windows primitives."""
import numpy as _np

from ... import np as knp, npx as knpx
from ...ops import REGISTRY as _R
from .table import _op


@_op("ROIPooling", ("data", "rois"))
def ROIPooling(data, rois, pooled_size=(1, 1), spatial_scale=1.0, **_):
    return knpx.roi_pooling(data, rois, tuple(pooled_size), float(spatial_scale))


def _pads(pad, n):
    pad = tuple(int(p) for p in (pad or (0,) * n))
    out = ()
    for p in pad:
        out += (p, p)
    return out


def _window_attrs(kernel, stride, dilate, pad):
    n = len(kernel)
    return dict(kernel=tuple(int(k) for k in kernel),
                stride=tuple(int(s) for s in (stride or (1,) * n)),
                dilation=tuple(int(d) for d in (dilate or (1,) * n)), pad=_pads(pad, n))


@_op("im2col")
def im2col(data, kernel=(), stride=(), dilate=(), pad=(), **_):
    """Patches as columns: (N, C * prod(kernel), number of patches)."""
    attrs = _window_attrs(kernel, stride, dilate, pad)
    w = _R["windows"](data, **attrs)                # (N, *out, C, *kernel)
    n, nd_ = data.shape[0], len(attrs["kernel"])
    out_sp = w.shape[1:1 + nd_]
    order = (0, 1 + nd_) + tuple(range(2 + nd_, 2 + 2 * nd_)) + tuple(range(1, 1 + nd_))
    cols = knp.transpose(w, order)
    return knp.reshape(cols, (n, data.shape[1] * int(_np.prod(attrs["kernel"])),
                              int(_np.prod(out_sp))))


@_op("col2im")
def col2im(data, output_size=(), kernel=(), stride=(), dilate=(), pad=(), **_):
    """im2col's adjoint: columns summed back into images of `output_size`."""
    attrs = _window_attrs(kernel, stride, dilate, pad)
    size = tuple(int(s) for s in output_size)
    nd_ = len(size)
    k = attrs["kernel"]
    out_sp = tuple((s + attrs["pad"][2 * i] + attrs["pad"][2 * i + 1]
                    - attrs["dilation"][i] * (k[i] - 1) - 1) // attrs["stride"][i] + 1
                   for i, s in enumerate(size))
    n, ck = data.shape[0], data.shape[1]
    c = ck // int(_np.prod(k))
    w = knp.reshape(data, (n, c) + k + out_sp)
    order = (0,) + tuple(range(2 + nd_, 2 + 2 * nd_)) + (1,) + tuple(range(2, 2 + nd_))
    return _R["unwindows"](knp.transpose(w, order), in_shape=size, **attrs)
