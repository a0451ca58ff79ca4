"""MXNet's spatial-transformer operators: GridGenerator (affine or warp grids),
BilinearSampler and SpatialTransformer, composed of registry ops (the four corner pixels
are gathers at indices computed from the grid; the weights are the grid's fractional
parts), so gradients reach both the data and the grid, and the ops trace.

Grids hold normalized source coordinates in [-1, 1] (x first), -1 and 1 being the centres of
the first and last pixels; samples outside the image read zeros, as in MXNet.
"""
import numpy as _np

from . import np as knp
from .base import KilnError
from .mxnet_ops import _op
from .ndarray import ndarray


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
    oh, ow = grid.shape[2:]
    x = (grid[:, 0] + 1.0) * ((w - 1) / 2.0)                 # (N, oh, ow) in pixels
    y = (grid[:, 1] + 1.0) * ((h - 1) / 2.0)
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
