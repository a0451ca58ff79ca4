"""MXNet's spatial operators: GridGenerator (affine or warp grids), BilinearSampler,
SpatialTransformer and FlowNet's Correlation, composed of registry ops (the sampler's four
corner pixels are gathers at indices computed from the grid, weighted by the grid's
fractional parts), so gradients reach both the data and the grid, and the ops trace.

Grids hold normalized source coordinates in [-1, 1] (x first), -1 and 1 being the centres of
the first and last pixels; samples outside the image read zeros, as in MXNet.
"""
import numpy as _np

from ... import np as knp
from ..._core.base import KilnError
from .table import _op
from ..._core.ndarray import ndarray


def _target_grid(height, width, dtype):
    ys, xs = _np.meshgrid(_np.linspace(-1, 1, height), _np.linspace(-1, 1, width),
                          indexing="ij")
    coords = _np.stack([xs.ravel(), ys.ravel(), _np.ones(height * width)])   # (3, H*W)
    return ndarray._wrap(coords.astype(dtype))


@_op("GridGenerator")
def GridGenerator(data, transform_type="affine", target_shape=(0, 0), **_):
    if transform_type == "affine":
        h, w = (int(v) for v in target_shape)
        theta = knp.reshape(data, (data.shape[0], 2, 3))
        grid = knp.matmul(theta, _target_grid(h, w, data.dtype))          # (N, 2, H*W)
        return knp.reshape(grid, (data.shape[0], 2, h, w))
    if transform_type == "warp":
        n, two, h, w = data.shape
        if two != 2:
            raise KilnError(f"GridGenerator: a warp field has 2 channels, got shape "
                            f"{tuple(data.shape)}")
        base = _np.stack(_np.meshgrid(_np.arange(w), _np.arange(h), indexing="xy"))
        scale = _np.array([max(w - 1, 1) / 2.0, max(h - 1, 1) / 2.0]).reshape(1, 2, 1, 1)
        pixels = data + ndarray._wrap(base[None].astype(data.dtype))
        return pixels / ndarray._wrap(scale.astype(data.dtype)) - 1.0
    raise KilnError(f"GridGenerator: transform_type must be 'affine' or 'warp', got "
                    f"{transform_type!r}")


@_op("BilinearSampler", ("data", "grid"))
def BilinearSampler(data, grid, cudnn_off=None, **_):
    n, c, h, w = data.shape
    if grid.ndim != 4 or grid.shape[:2] != (n, 2):
        raise KilnError(f"BilinearSampler: grid must be ({n}, 2, height, width), got "
                        f"{tuple(grid.shape)}")
    x = (grid[:, 0] + 1.0) * ((w - 1) / 2.0)                 # (N, oh, ow) in pixels
    y = (grid[:, 1] + 1.0) * ((h - 1) / 2.0)
    return bilinear(data, y, x)


def bilinear(data, y, x):
    """data (N, C, H, W) sampled at pixel coordinates y, x (N, oh, ow): (N, C, oh, ow);
    each of the four corners outside the image counts zero."""
    n, c, h, w = data.shape
    oh, ow = y.shape[1:]
    x0, y0 = knp.floor(x), knp.floor(y)
    fx, fy = x - x0, y - y0
    rows = knp.reshape(knp.transpose(data, (0, 2, 3, 1)), (n * h * w, c))
    batch = ndarray._wrap((_np.arange(n) * h * w).reshape(n, 1, 1).astype(_np.int64))
    out = None
    for dy, wy in ((0, 1.0 - fy), (1, fy)):
        for dx, wx in ((0, 1.0 - fx), (1, fx)):
            xi, yi = x0 + dx, y0 + dy
            inside = (xi >= 0) & (xi <= w - 1) & (yi >= 0) & (yi <= h - 1)
            flat = (knp.clip(yi, 0, h - 1) * w + knp.clip(xi, 0, w - 1)).astype(_np.int64)
            picked = knp.take(rows, knp.reshape(flat + batch, (-1,)), axis=0)   # (N*oh*ow, C)
            weight = knp.reshape(wy * wx * inside.astype(data.dtype), (-1, 1))
            term = picked * weight
            out = term if out is None else out + term
    return knp.transpose(knp.reshape(out, (n, oh, ow, c)), (0, 3, 1, 2))


@_op("SpatialTransformer", ("data", "loc"))
def SpatialTransformer(data, loc, target_shape=(0, 0), transform_type="affine",
                       sampler_type="bilinear", cudnn_off=None, **_):
    if transform_type != "affine" or sampler_type != "bilinear":
        raise KilnError("SpatialTransformer: only transform_type='affine' with "
                        "sampler_type='bilinear' exists in MXNet")
    grid = GridGenerator(loc, transform_type="affine", target_shape=target_shape)
    return BilinearSampler(data, grid)


@_op("Correlation", ("data1", "data2"))
def Correlation(data1, data2, kernel_size=1, max_displacement=1, stride1=1, stride2=1,
                pad_size=0, is_multiply=True, **_):
    """FlowNet's correlation layer: for each displacement (dy, dx) on a grid of step
    stride2 within max_displacement, the mean over channels and a kernel_size window of
    data1 * shifted data2 (|data1 - shifted data2| without is_multiply), sampled every
    stride1 pixels; (N, displacements, H', W'). Slices and products: differentiable."""
    k, md, s1, s2, pad = (int(v) for v in (kernel_size, max_displacement, stride1, stride2,
                                           pad_size))
    if data1.shape != data2.shape or data1.ndim != 4:
        raise KilnError(f"Correlation: expected two NCHW arrays of one shape, got "
                        f"{tuple(data1.shape)} and {tuple(data2.shape)}")
    n, c, h, w = data1.shape
    widths = [(0, 0), (0, 0), (pad, pad), (pad, pad)]
    p1, p2 = knp.pad(data1, widths), knp.pad(data2, widths)
    border = md + (k - 1) // 2
    out_h = -(-(h + 2 * pad - 2 * border) // s1)
    out_w = -(-(w + 2 * pad - 2 * border) // s1)
    if out_h < 1 or out_w < 1:
        raise KilnError(f"Correlation: max_displacement {md} and kernel_size {k} leave no "
                        f"output for inputs of {h}x{w} padded by {pad}")
    radius = md // s2

    def window(p, top, left):
        return p[:, :, top:top + s1 * (out_h - 1) + 1:s1, left:left + s1 * (out_w - 1) + 1:s1]
    planes = []
    for dy in range(-radius, radius + 1):
        for dx in range(-radius, radius + 1):
            total = None
            for j in range(k):
                for i in range(k):
                    a = window(p1, md + j, md + i)
                    b = window(p2, md + j + dy * s2, md + i + dx * s2)
                    term = knp.sum(a * b if is_multiply else knp.abs(a - b), axis=1)
                    total = term if total is None else total + term
            planes.append(total / float(k * k * c))
    return knp.stack(planes, axis=1)
