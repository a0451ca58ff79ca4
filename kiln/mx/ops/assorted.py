"""Further MXNet 1.x operators by name: GroupNorm, ROIPooling, the loss-output heads
(MakeLoss, LogisticRegressionOutput, MAERegressionOutput), softmax_cross_entropy, im2col/
col2im (the windows primitives), scatter_nd, ravel/unravel_multi_index, Crop,
choose/fill_element_0index, and the AMP/bookkeeping helpers (amp_cast, all_finite,
multi_sum_sq, cast_storage). See mxnet_ops.py for the table."""
import numpy as _np

from ... import np as knp, npx as knpx
from ..._core.base import KilnError
from . import _op
from ..._core.ndarray import ndarray
from ...ops import REGISTRY as _R


def _gn_shapes(attrs, data):
    groups = int(attrs.get("num_groups", 1))
    return {"gamma": (groups,), "beta": (groups,)}


@_op("GroupNorm", ("data", "gamma", "beta"), param_shapes=_gn_shapes)
def GroupNorm(data, gamma, beta, num_groups=1, eps=1e-5, **_):
    """MXNet 1.x's GroupNorm: gamma and beta hold one value per group (2.x's per channel)."""
    g = int(num_groups)
    grouped = knp.reshape(data, (data.shape[0], g, -1))
    mean = knp.mean(grouped, axis=2, keepdims=True)
    d = grouped - mean
    y = d / knp.sqrt(knp.mean(d * d, axis=2, keepdims=True) + float(eps))
    y = y * knp.reshape(gamma, (1, g, 1)) + knp.reshape(beta, (1, g, 1))
    return knp.reshape(y, data.shape)


@_op("ROIPooling", ("data", "rois"))
def ROIPooling(data, rois, pooled_size=(1, 1), spatial_scale=1.0, **_):
    return knpx.roi_pooling(data, rois, tuple(pooled_size), float(spatial_scale))


def _head(value, data, surrogate):
    """Forward `value`; backward d(surrogate)/d(data), whatever head gradient comes (the
    rule of MXNet's output layers)."""
    return knpx.stop_gradient(value) + (surrogate - knpx.stop_gradient(surrogate))


@_op("MakeLoss make_loss")
def MakeLoss(data, grad_scale=1.0, valid_thresh=0.0, normalization="null", **_):
    scale = float(grad_scale)
    if normalization == "batch":
        scale /= data.shape[0]
    elif normalization == "valid":
        valid = float(knp.sum(data > float(valid_thresh)))
        scale /= max(valid, 1.0)
    return _head(data, data, data * scale)


def _per_sample(data, grad_scale):
    return float(grad_scale) / max(1, data.size // data.shape[0])


@_op("LogisticRegressionOutput", ("data", "label"),
     param_shapes=lambda attrs, data: {"label": tuple(data)})
def LogisticRegressionOutput(data, label, grad_scale=1.0, **_):
    """Forward: sigmoid. Backward: (sigmoid(data) - label) * grad_scale per output."""
    prob = knpx.sigmoid(data)
    label = knp.reshape(label, data.shape)
    delta = knpx.stop_gradient(prob - label) * _per_sample(data, grad_scale)
    return _head(prob, data, (data - knpx.stop_gradient(data)) * delta)


@_op("MAERegressionOutput", ("data", "label"),
     param_shapes=lambda attrs, data: {"label": tuple(data)})
def MAERegressionOutput(data, label, grad_scale=1.0, **_):
    """Forward: identity. Backward: sign(data - label) * grad_scale per output."""
    label = knp.reshape(label, data.shape)
    delta = knpx.stop_gradient(knp.sign(data - label)) * _per_sample(data, grad_scale)
    return _head(data, data, (data - knpx.stop_gradient(data)) * delta)


@_op("softmax_cross_entropy", ("data", "label"))
def softmax_cross_entropy(data, label, **_):
    """The summed cross-entropy of softmax(data) against integer labels: shape (1,)."""
    logp = knpx.log_softmax(data, axis=-1)
    picked = knpx.pick(logp, label, axis=-1)
    return knp.reshape(-knp.sum(picked), (1,))


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


@_op("amp_cast cast_storage")
def amp_cast(data, dtype=None, stype=None, **_):
    return data.astype(dtype) if dtype is not None else data + 0


@_op("all_finite")
def all_finite(data, init_output=True, **_):
    return knp.reshape(knp.all(knp.isfinite(data)).astype("float32"), (1,))


@_op("multi_all_finite", variadic=True)
def multi_all_finite(*arrays, num_arrays=1, init_output=True, **_):
    ok = [knp.all(knp.isfinite(a)) for a in arrays]
    return knp.reshape(knp.all(knp.stack(ok)).astype("float32"), (1,))


@_op("multi_sum_sq", variadic=True)
def multi_sum_sq(*arrays, num_arrays=1, **_):
    return knp.stack([knp.sum(a.astype("float32") ** 2) for a in arrays])


@_op("SVMOutput", ("data", "label"),
     param_shapes=lambda attrs, data: {"label": tuple(data[:-1])})
def SVMOutput(data, label, margin=1.0, regularization_coefficient=1.0, use_linear=False, **_):
    """Forward: identity. Backward (MXNet's one-vs-all hinge rule, per class j with t = +1
    for the label and -1 otherwise): -reg * t * [margin > t x] (L1) or
    -2 reg * t * max(0, margin - t x) (L2)."""
    sign = knpx.one_hot(knp.asarray(label).astype(_np.int64), data.shape[-1],
                        dtype=data.dtype) * 2 - 1
    slack = float(margin) - sign * knpx.stop_gradient(data)
    reg = float(regularization_coefficient)
    if use_linear:
        delta = -reg * sign * (slack > 0).astype(data.dtype)
    else:
        delta = -2 * reg * sign * knp.maximum(slack, 0.0)
    return _head(data, data, (data - knpx.stop_gradient(data)) * knpx.stop_gradient(delta))


def _alias_v1():
    """MXNet 1.x's deprecated *_v1 operators take the same inputs and attributes."""
    from . import OPS, MXOp
    for name in ("Convolution", "BatchNorm", "Pooling"):
        op = OPS[name]
        OPS[name + "_v1"] = MXOp(name + "_v1", op.fn, op.inputs, aux=op.aux,
                                 variadic=op.variadic, num_outputs=op.num_outputs,
                                 param_shapes=op.param_shapes)


_alias_v1()
