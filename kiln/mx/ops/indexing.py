"""MXNet 1.x's index operators by name: scatter_nd, ravel_multi_index/unravel_index,
Crop, choose_element_0index and fill_element_0index."""
import numpy as _np

from ... import np as knp, npx as knpx
from ..._core.base import KilnError, KilnIndexError
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
    shape = [int(s) for s in shape]
    if shape and shape[0] == -1:        # MXNet: a leading -1 is as large as needed
        shape[0] = int(coords[0].max(initial=0)) + 1
    flat = _np.ravel_multi_index(tuple(coords), tuple(shape), mode="wrap")
    return ndarray._wrap(flat.astype(knp.asarray(data).dtype))


@_op("unravel_index _unravel_index")
def unravel_index(data, shape=(), **_):
    flat = knp.asarray(data)._concrete("unravel_index()").astype(_np.int64)
    shape = [int(s) for s in shape]
    if shape and shape[0] == -1:        # MXNet: a leading -1 is as large as needed
        rest = int(_np.prod(shape[1:], dtype=_np.int64))
        shape[0] = int(flat.max(initial=0)) // rest + 1
    coords = _np.stack(_np.unravel_index(flat, tuple(shape)))
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


@_op("gather_nd", ("data", "indices"))
def gather_nd(data, indices, **_):
    """npx.gather_nd, with MXNet's bounds check: an index below -size or at size or above
    is an IndexError (negative ones wrap)."""
    if indices._node is None and data._node is None:
        idx = indices.asnumpy().astype(_np.int64)
        for k in range(min(idx.shape[0], data.ndim)):
            size = data.shape[k]
            if idx[k].size and (idx[k].min() < -size or idx[k].max() >= size):
                raise KilnIndexError(f"gather_nd: an index is out of bounds for axis {k} "
                                     f"with size {size}")
    return knpx.gather_nd(data, indices)


def _histogram_outputs(attrs):
    return 2


@_op("_histogram histogram", ("a", "bins"), num_outputs=_histogram_outputs)
def histogram(a, bins=10, range=None, **_):
    """Counts of `a` in `bins` equal bins over `range` (or between the given edges), and the
    edges; computed eagerly, as NumPy's histogram."""
    edges = bins.asnumpy() if isinstance(bins, ndarray) else int(bins)
    counts, edges = _np.histogram(a.asnumpy(), edges, range=None if range is None else
                                  tuple(float(r) for r in range))
    return [ndarray._wrap(counts.astype(_np.int64)), ndarray._wrap(edges.astype(a.dtype))]


def _split_outputs(attrs):
    sections = attrs.get("indices_or_sections", 1)
    return len(sections) + 1 if isinstance(sections, (tuple, list)) else int(sections)


@_op("_split_v2 split_v2", num_outputs=_split_outputs)
def split_v2(data, indices_or_sections=1, axis=0, squeeze_axis=False, **_):
    """np.split's sections or indices, always a list; squeeze_axis drops a size-1 axis."""
    sections = indices_or_sections
    if not isinstance(sections, (int, _np.integer, tuple)):
        raise KilnError("split_v2: indices_or_sections must either int or tuple of ints")
    sections = tuple(int(i) for i in sections) if isinstance(sections, tuple) \
        else int(sections)
    parts = knp.split(data, sections, axis=int(axis))
    return [knp.squeeze(p, axis=int(axis)) for p in parts] if squeeze_axis else list(parts)


@_op("_sparse_retain sparse_retain retain", ("data", "indices"))
def sparse_retain(data, indices, **_):
    """data with only the rows listed in `indices` kept, the others zero (MXNet's
    sparse.retain on dense values; differentiable in data)."""
    n = data.shape[0]
    rows = knp.reshape(indices, (-1,)).astype("int64")
    hit = knp.minimum(knp.sum(knpx.one_hot(rows, n, dtype=data.dtype), axis=0), 1)
    return data * knp.reshape(hit, (n,) + (1,) * (data.ndim - 1))
