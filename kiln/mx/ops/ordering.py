"""MXNet 1.x's ordering operators by name: sort, argsort, topk, argmin, and diag. Orders
come from kiln.np's sort (differentiable as a gather) and npx.topk; indices are float32
by default, as in 1.x."""
from ... import np as knp, npx as knpx
from ..._core.base import KilnError
from .table import _DTYPE_FLAGS, _op


def _dtype(dtype):
    return _DTYPE_FLAGS.get(str(dtype), dtype)


def _along(data, axis):
    """(data, axis) to order along; axis=None means the flattened array, as in MXNet."""
    return (knp.reshape(data, (-1,)), -1) if axis is None else (data, int(axis))


@_op("sort")
def sort(data, axis=-1, is_ascend=True, **_):
    data, axis = _along(data, axis)
    out = knp.sort(data, axis=axis)
    return out if is_ascend else knp.flip(out, axis=axis)


@_op("argsort")
def argsort(data, axis=-1, is_ascend=True, dtype="float32", **_):
    data, axis = _along(data, axis)
    order = knp.argsort(-data if not is_ascend else data, axis=axis, kind="stable")
    return order.astype(_dtype(dtype))


def _topk_outputs(attrs):
    return 2 if attrs.get("ret_typ", "indices") == "both" else 1


@_op("topk", num_outputs=_topk_outputs)
def topk(data, axis=-1, k=1, ret_typ="indices", is_ascend=False, dtype="float32", **_):
    shape = data.shape
    data, axis = _along(data, axis)
    if ret_typ == "mask":            # a mask has the input's shape, however it was ranked
        idx = knpx.topk(data, axis=int(axis), k=int(k), ret_typ="indices",
                        is_ascend=bool(is_ascend), dtype="int64")
        return knp.reshape(_mask(data, idx, int(axis)), shape)
    if ret_typ not in ("indices", "value", "both"):
        raise KilnError(f"topk: ret_typ must be 'value', 'indices', 'mask' or 'both', got "
                        f"{ret_typ!r}")
    out = knpx.topk(data, axis=int(axis), k=int(k), ret_typ=ret_typ,
                    is_ascend=bool(is_ascend), dtype=_dtype(dtype))
    return list(out) if ret_typ == "both" else out


def _mask(data, idx, axis):
    """1 where an element is among the top k along `axis`, else 0 (data's dtype)."""
    moved = knp.moveaxis(idx, axis, -1)
    hits = knp.sum(knpx.one_hot(moved, data.shape[axis], dtype=data.dtype), axis=-2,
                   dtype=data.dtype)
    return knp.moveaxis(hits, -1, axis)


@_op("argmin")
def argmin(data, axis=None, keepdims=False, **_):
    out = knp.argmin(data, axis=None if axis is None else int(axis), keepdims=bool(keepdims))
    out = out.astype("float32")
    return knp.reshape(out, (1,)) if out.ndim == 0 else out


@_op("diag")
def diag(data, k=0, axis1=0, axis2=1, **_):
    k = int(k)
    if data.ndim == 1:        # the vector on diagonal k of a square matrix, differentiably
        n = data.shape[0] + abs(k)
        padded = knp.concatenate([data, knp.zeros((abs(k),), dtype=data.dtype)])
        placed = knp.reshape(padded, (n, 1) if k >= 0 else (1, n))
        return knp.eye(n, n, k, dtype=data.dtype) * placed
    rows, cols = data.shape[int(axis1)], data.shape[int(axis2)]
    if k > cols or -k > rows:     # MXNet allows the empty diagonal just past the corner
        raise KilnError(f"diag: k={k} is outside a {rows}x{cols} matrix")
    return knp.diagonal(data, k, int(axis1), int(axis2))
