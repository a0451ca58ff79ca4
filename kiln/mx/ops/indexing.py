"""MXNet 1.x's index operators by name: scatter_nd, ravel_multi_index/unravel_index,
Crop, choose_element_0index and fill_element_0index."""
import numpy as _np

from ... import np as knp, npx as knpx
from ..._core.base import KilnError
from ..._core.ndarray import ndarray
from ...ops import REGISTRY as _R
from .table import _op


@_op("scatter_nd", ("data", "indices"))
def scatter_nd(data, indices, shape=(), **_):
    """Zeros of `shape` with data placed at indices (first axis indexes the leading axes)."""
    shape = tuple(int(s) for s in shape)
    idx = knp.asarray(indices).astype(_np.int64)
    m = idx.shape[0]
    lead = shape[:m]
    flat = None
    for k in range(m):
        stride = int(_np.prod(lead[k + 1:], dtype=_np.int64))
        term = (idx[k] % lead[k]) * stride
        flat = term if flat is None else flat + term
    rows = _R["scatter_add"](data, flat, axis=0, size=int(_np.prod(lead, dtype=_np.int64)))
    return knp.reshape(rows, shape)


@_op("ravel_multi_index _ravel_multi_index")
def ravel_multi_index(data, shape=(), **_):
    coords = knp.asarray(data)._concrete("ravel_multi_index()").astype(_np.int64)
    flat = _np.ravel_multi_index(tuple(coords), tuple(int(s) for s in shape), mode="wrap")
    return ndarray._wrap(flat.astype(knp.asarray(data).dtype))


@_op("unravel_index _unravel_index")
def unravel_index(data, shape=(), **_):
    flat = knp.asarray(data)._concrete("unravel_index()").astype(_np.int64)
    coords = _np.stack(_np.unravel_index(flat, tuple(int(s) for s in shape)))
    return ndarray._wrap(coords.astype(knp.asarray(data).dtype))


@_op("Crop crop_like", variadic=True)
def Crop(*data, offset=(0, 0), h_w=(0, 0), center_crop=False, num_args=1, **_):
    x = data[0]
    h, w = (data[1].shape[2:4] if len(data) > 1 else tuple(int(v) for v in h_w))
    if center_crop:
        top, left = (x.shape[2] - h) // 2, (x.shape[3] - w) // 2
    else:
        top, left = (int(v) for v in offset)
    if top + h > x.shape[2] or left + w > x.shape[3]:
        raise KilnError(f"Crop: ({h}, {w}) at ({top}, {left}) does not fit {x.shape}")
    return x[:, :, top:top + h, left:left + w]


@_op("choose_element_0index", ("lhs", "rhs"))
def choose_element_0index(lhs, rhs, **_):
    return knpx.pick(lhs, rhs, axis=-1)


@_op("fill_element_0index", ("lhs", "mhs", "rhs"))
def fill_element_0index(lhs, mhs, rhs, **_):
    """lhs with lhs[i, rhs[i]] = mhs[i]."""
    onehot = knpx.one_hot(knp.asarray(rhs).astype(_np.int64), lhs.shape[-1], dtype=lhs.dtype)
    return lhs * (1 - onehot) + knp.expand_dims(mhs, -1) * onehot
