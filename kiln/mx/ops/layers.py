"""MXNet 1.x's layer operators (FullyConnected, Convolution, BatchNorm, Pooling, the
softmax family and output heads, ...) by their MXNet names, over kiln.np / kiln.npx."""
import numpy as _np

from ... import np as knp, npx as knpx
from ..._core import autograd
from ..._core.base import KilnError
from .table import OPS, MXOp, _op, tuple_or_none as _tuple_or_none


def _fc_shapes(attrs, data):
    n = int(attrs["num_hidden"])
    k = int(_np.prod(data[1:])) if attrs.get("flatten", True) else data[-1]
    return {"weight": (n, k), "bias": (n,)}


@_op("FullyConnected", ("data", "weight", "bias"), param_shapes=_fc_shapes)
def FullyConnected(data, weight, bias=None, num_hidden=None, no_bias=False, flatten=True,
                   **_):
    return knpx.fully_connected(data, weight, None if no_bias else bias, num_hidden,
                                no_bias, flatten)


def _conv_shapes(attrs, data):
    f, g = int(attrs["num_filter"]), int(attrs.get("num_group", 1))
    return {"weight": (f, data[1] // g) + tuple(attrs["kernel"]), "bias": (f,)}


def _channels_first(op, layout):
    if layout not in (None, "NCW", "NCHW", "NCDHW"):
        raise KilnError(f"{op}: layout {layout!r} is not supported (channels first only)")


@_op("Convolution", ("data", "weight", "bias"), param_shapes=_conv_shapes)
def Convolution(data, weight, bias=None, kernel=None, stride=None, dilate=None, pad=None,
                num_filter=None, num_group=1, no_bias=False, layout=None, **_):
    _channels_first("Convolution", layout)
    return knpx.convolution(data, weight, None if no_bias else bias, kernel,
                            _tuple_or_none(stride), _tuple_or_none(dilate),
                            _tuple_or_none(pad), num_filter, num_group, no_bias)


def _deconv_shapes(attrs, data):
    f, g = int(attrs["num_filter"]), int(attrs.get("num_group", 1))
    return {"weight": (data[1], f // g) + tuple(attrs["kernel"]), "bias": (f,)}


@_op("Deconvolution", ("data", "weight", "bias"), param_shapes=_deconv_shapes)
def Deconvolution(data, weight, bias=None, kernel=None, stride=None, dilate=None, pad=None,
                  adj=None, num_filter=None, num_group=1, no_bias=True, target_shape=None,
                  layout=None, **_):
    _channels_first("Deconvolution", layout)
    if target_shape and any(int(t) for t in target_shape):
        pad, adj = _pad_for_target(data.shape[2:], kernel, stride, dilate, target_shape)
    return knpx.deconvolution(data, weight, None if no_bias else bias, kernel,
                              _tuple_or_none(stride), _tuple_or_none(dilate),
                              _tuple_or_none(pad), _tuple_or_none(adj), num_filter,
                              num_group, no_bias)


def _pad_for_target(spatial, kernel, stride, dilate, target):
    """MXNet's pad and adj giving a Deconvolution output of size `target`: the padding the
    full output has beyond it, split evenly, its odd unit given back as adj."""
    n = len(kernel)
    stride, dilate = _tuple_or_none(stride) or (1,) * n, _tuple_or_none(dilate) or (1,) * n
    pad, adj = [], []
    for i in range(n):
        full = stride[i] * (int(spatial[i]) - 1) + 1 + (int(kernel[i]) - 1) * dilate[i]
        extra = full - int(target[i])
        if extra < 0:
            raise KilnError(f"Deconvolution: target_shape {tuple(target)} is larger than the "
                            f"full output {full} on axis {i}")
        pad.append((extra + 1) // 2)
        adj.append(extra % 2)
    return tuple(pad), tuple(adj)


def _bn_shapes(attrs, data):
    c = (data[int(attrs.get("axis", 1))],)
    return {"gamma": c, "beta": c, "moving_mean": c, "moving_var": c}


def batch_norm_statistics(data, moving_mean, moving_var, axis, use_global_stats):
    """The mean and variance BatchNorm normalizes with: the batch's over every axis but
    `axis` in training, else the moving ones (copies, as the step updates those)."""
    if autograd.is_training() and not use_global_stats:
        others = tuple(k for k in range(data.ndim) if k != int(axis) % data.ndim)
        return knp.mean(data, axis=others), knp.var(data, axis=others)
    return moving_mean + 0, moving_var + 0


def _bn_outputs(attrs):
    return 3 if attrs.get("output_mean_var") else 1


@_op("BatchNorm", ("data", "gamma", "beta"), aux=("moving_mean", "moving_var"),
     param_shapes=_bn_shapes, num_outputs=_bn_outputs,
     output_names=lambda attrs: ["output", "mean", "var"][:_bn_outputs(attrs)])
def BatchNorm(data, gamma, beta, moving_mean, moving_var, eps=1e-3, momentum=0.9,
              fix_gamma=True, use_global_stats=False, axis=1, output_mean_var=False, **_):
    """With output_mean_var, also the mean and 1 / sqrt(var + eps) it normalized with (the
    batch's in training, else the moving statistics), as MXNet's second and third outputs."""
    if output_mean_var:     # read before the training step updates the moving statistics
        mean, var = batch_norm_statistics(data, moving_mean, moving_var, axis,
                                          use_global_stats)
        inv_std = 1.0 / knp.sqrt(var + eps)
    out = knpx.batch_norm(data, gamma, beta, moving_mean, moving_var, eps=eps,
                          momentum=momentum, fix_gamma=fix_gamma,
                          use_global_stats=use_global_stats, axis=axis)
    return (out, knpx.stop_gradient(mean), knpx.stop_gradient(inv_std)) if output_mean_var \
        else out


def _ln_shapes(attrs, data):
    c = (data[int(attrs.get("axis", -1))],)
    return {"gamma": c, "beta": c}


@_op("LayerNorm", ("data", "gamma", "beta"), param_shapes=_ln_shapes)
def LayerNorm(data, gamma, beta, axis=-1, eps=1e-5, **_):
    return knpx.layer_norm(data, gamma, beta, axis=axis, eps=eps)


def _emb_shapes(attrs, data):
    return {"weight": (int(attrs["input_dim"]), int(attrs["output_dim"]))}


@_op("Embedding _contrib_SparseEmbedding", ("data", "weight"), param_shapes=_emb_shapes)
def Embedding(data, weight, input_dim=None, output_dim=None, **_):
    return knpx.embedding(data, weight)


@_op("Activation", same_shape=True)
def Activation(data, act_type="relu", **_):
    return knpx.activation(data, act_type=act_type)


@_op("LeakyReLU", ("data", "gamma"),
     # prelu: one gamma per channel; the other act_types have no gamma to infer
     param_shapes=lambda attrs, data: ({"gamma": (data[1],)}
                                       if attrs.get("act_type", "leaky") == "prelu" else {}))
def LeakyReLU(data, gamma=None, act_type="leaky", slope=0.25, **_):
    return knpx.leaky_relu(data, gamma, act_type=act_type, slope=slope)


@_op("Pooling")
def Pooling(data, kernel=None, pool_type="max", stride=None, pad=None, global_pool=False,
            pooling_convention="valid", count_include_pad=True, layout=None, **_):
    _channels_first("Pooling", layout)
    pad = _tuple_or_none(pad)
    if pad is not None and len(pad) > data.ndim - 2:    # MXNet reads the leading values
        pad = pad[:data.ndim - 2]
    return knpx.pooling(data, kernel=_tuple_or_none(kernel), pool_type=pool_type,
                        stride=_tuple_or_none(stride), pad=pad,
                        global_pool=global_pool, pooling_convention=pooling_convention,
                        count_include_pad=True if count_include_pad is None
                        else count_include_pad)


@_op("Dropout")
def Dropout(data, p=0.5, mode="training", axes=(), **_):
    if float(p) >= 1 and (mode == "always" or autograd.is_training()):
        # MXNet scales the kept elements by 1 / (1 - p): with none kept, 0 * inf is NaN
        return data * float("nan")
    return knpx.dropout(data, p=p, mode=mode, axes=tuple(axes or ()))


@_op("Flatten flatten")
def Flatten(data, **_):
    return knp.reshape(data, (data.shape[0], -1))


@_op("softmax", ("data", "length"))
def softmax(data, length=None, axis=-1, temperature=None, use_length=False, dtype=None, **_):
    return knpx.softmax(data, axis=axis, length=length, temperature=temperature,
                        use_length=bool(use_length), dtype=dtype)


@_op("log_softmax", ("data", "length"))
def log_softmax(data, length=None, axis=-1, temperature=None, use_length=False, dtype=None,
                **_):
    return knpx.log_softmax(data, axis=axis, length=length, temperature=temperature,
                            use_length=bool(use_length), dtype=dtype)


@_op("SoftmaxActivation")
def SoftmaxActivation(data, mode="instance", **_):
    return knpx.softmax(data, axis=1 if mode == "channel" else -1)


def _upsampling_shapes(attrs, data):
    scale = int(attrs.get("scale", 1))
    kernel = 2 * scale - scale % 2
    return {"weight": (int(attrs.get("num_filter", data[1])), 1, kernel, kernel)}


@_op("UpSampling", ("data", "weight"), variadic=True, param_shapes=_upsampling_shapes)
def UpSampling(*data, scale=1, sample_type="nearest", num_args=1, num_filter=0,
               multi_input_mode="concat", **_):
    """MXNet's UpSampling. 'nearest': every input repeated up to the first one's size times
    `scale`, then joined on the channels ('concat') or added ('sum'). 'bilinear': a
    depthwise Deconvolution by the given weight (kernel 2*scale - scale%2)."""
    scale = int(scale)
    if sample_type == "bilinear":
        if len(data) != 2:
            raise KilnError(f"UpSampling: sample_type='bilinear' takes two inputs (data, "
                            f"weight), got {len(data)}; 'nearest' takes one or more")
        x, weight = data
        kernel = 2 * scale - scale % 2
        pad = (scale - 1) // 2 + (scale - 1) % 2
        return knpx.deconvolution(x, weight, None, (kernel, kernel), (scale, scale), None,
                                  (pad, pad), None, x.shape[1], x.shape[1], True)
    if sample_type != "nearest":
        raise KilnError(f"UpSampling: sample_type must be 'nearest' or 'bilinear', got "
                        f"{sample_type!r}")
    size = data[0].shape[2] * scale
    outs = []
    for x in data:
        factor = size // x.shape[2]
        outs.append(knp.repeat(knp.repeat(x, factor, axis=2), factor, axis=3))
    if len(outs) == 1:
        return outs[0]
    if multi_input_mode == "sum":
        return add_all(outs)
    return knp.concatenate(outs, axis=1)


def add_all(arrays):
    out = arrays[0]
    for a in arrays[1:]:
        out = out + a
    return out


@_op("L2Normalization")
def L2Normalization(data, eps=1e-10, mode="instance", **_):
    axes = {"instance": tuple(range(1, data.ndim)), "channel": 1,
            "spatial": tuple(range(2, data.ndim))}.get(mode)
    if axes is None:
        raise KilnError(f"L2Normalization: mode {mode!r} (expected instance, channel or "
                        "spatial)")
    return data / knp.sqrt(knp.sum(data * data, axis=axes, keepdims=True) + float(eps))


def _in_shapes(attrs, data):
    return {"gamma": (data[1],), "beta": (data[1],)}


@_op("InstanceNorm", ("data", "gamma", "beta"), param_shapes=_in_shapes)
def InstanceNorm(data, gamma, beta, eps=1e-3, **_):
    axes = tuple(range(2, data.ndim))
    mean = knp.mean(data, axis=axes, keepdims=True)
    d = data - mean
    var = knp.mean(d * d, axis=axes, keepdims=True)
    shape = (1, data.shape[1]) + (1,) * (data.ndim - 2)
    return d / knp.sqrt(var + float(eps)) * knp.reshape(gamma, shape) + \
        knp.reshape(beta, shape)


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


def _alias_v1():
    """MXNet 1.x's deprecated *_v1 operators take the same inputs and attributes."""
    for name in ("Convolution", "BatchNorm", "Pooling"):
        op = OPS[name]
        OPS[name + "_v1"] = MXOp(name + "_v1", op.fn, op.inputs, aux=op.aux,
                                 variadic=op.variadic, num_outputs=op.num_outputs,
                                 param_shapes=op.param_shapes)


_alias_v1()
