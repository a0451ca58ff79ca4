"""MXNet 1.x operators by their MXNet names, mapped onto kiln's own functions.

Each entry says which named inputs an MXNet op takes (and which of them are auxiliary
states), how to parse its attributes, and which kiln function computes it. Nothing here is
a new kernel: every op is a composition of registry primitives through kiln.np / kiln.npx,
so the same entry runs eagerly, records gradients, and traces into a graph.

`kiln.nd.FullyConnected`, `kiln.sym.FullyConnected` and the nodes of a loaded MXNet symbol
file all resolve here. This file has the table and the layers; mxnet_ops_tensor.py the
arithmetic, reductions and shape ops.
"""
import numpy as _np

from ... import np as knp, npx as knpx
from ..._core.base import KilnError

_DTYPE_FLAGS = {"0": "float32", "1": "float64", "2": "float16", "3": "uint8", "4": "int32",
                "5": "int8", "6": "int64", "7": "bool"}


class MXOp:
    __slots__ = ("name", "fn", "inputs", "aux", "variadic", "num_outputs", "param_shapes")

    def __init__(self, name, fn, inputs=("data",), aux=(), variadic=False, num_outputs=1,
                 param_shapes=None):
        self.name, self.fn, self.inputs, self.aux = name, fn, tuple(inputs), tuple(aux)
        self.variadic = variadic              # takes any number of data inputs (Concat)
        self.num_outputs = num_outputs
        # (attrs, data shape) -> {input name: shape} for the weights MXNet infers
        self.param_shapes = param_shapes

    def input_names(self, attrs):
        names = list(self.inputs)
        if attrs.get("no_bias") and "bias" in names:
            names.remove("bias")
        if self.name in ("softmax", "log_softmax") and not attrs.get("use_length"):
            names.remove("length")
        if self.name == "LeakyReLU" and attrs.get("act_type", "leaky") != "prelu":
            names.remove("gamma")
        if self.name.startswith("Sequence") and not attrs.get("use_sequence_length"):
            names.remove("sequence_length")
        if self.name == "RNN":
            if attrs.get("mode", "lstm") != "lstm":
                names.remove("state_cell")
            if not attrs.get("use_sequence_length"):
                names.remove("sequence_length")
        return names + list(self.aux)


OPS = {}


def _op(names, inputs=("data",), **kw):
    def register(fn):
        for n in names.split():
            OPS[n] = MXOp(n, fn, inputs, **kw)
        return fn
    return register


def lookup(name, where=""):
    op = OPS.get(name)
    if op is None:
        raise KilnError(f"{where}MXNet op {name!r} has no kiln mapping (kiln maps "
                        f"{len(OPS)} MXNet ops; see kiln/mxnet_ops.py)")
    return op


# ---- attribute strings ('(3, 3)', 'False', '1e-05') -------------------------------------------

def parse_attr(text, depth=0):
    """An MXNet attribute string as a Python value, by a small grammar (never eval)."""
    if not isinstance(text, str):
        return text
    if depth > 8:
        raise KilnError(f"attribute value nests tuples too deeply: {text[:60]!r}")
    s = text.strip()
    if s in ("True", "true"):
        return True
    if s in ("False", "false"):
        return False
    if s in ("None", "none"):
        return None
    if s[:1] in "([" and s[-1:] in ")]":
        inner = s[1:-1].strip().rstrip(",")
        if not inner:
            return ()
        return tuple(parse_attr(p, depth + 1) for p in _top_level_split(inner))
    try:
        return int(s)
    except ValueError:
        pass
    try:
        return float(s)
    except ValueError:
        return s


def _top_level_split(text):
    parts, level, start = [], 0, 0
    for k, c in enumerate(text):
        if c in "([":
            level += 1
        elif c in ")]":
            level -= 1
        elif c == "," and level == 0:
            parts.append(text[start:k])
            start = k + 1
    parts.append(text[start:])
    return parts


def _tuple_or_none(v):
    if v is None or v == ():
        return None
    return tuple(int(d) for d in v) if isinstance(v, (tuple, list)) else (int(v),)


# ---- layers ------------------------------------------------------------------------------------

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
    if target_shape:
        raise KilnError(f"Deconvolution: target_shape {tuple(target_shape)} is not "
                        "supported; give pad and adj for that output size instead")
    return knpx.deconvolution(data, weight, None if no_bias else bias, kernel,
                              _tuple_or_none(stride), _tuple_or_none(dilate),
                              _tuple_or_none(pad), _tuple_or_none(adj), num_filter,
                              num_group, no_bias)


def _bn_shapes(attrs, data):
    c = (data[int(attrs.get("axis", 1))],)
    return {"gamma": c, "beta": c, "moving_mean": c, "moving_var": c}


@_op("BatchNorm", ("data", "gamma", "beta"), aux=("moving_mean", "moving_var"),
     param_shapes=_bn_shapes)
def BatchNorm(data, gamma, beta, moving_mean, moving_var, eps=1e-3, momentum=0.9,
              fix_gamma=True, use_global_stats=False, axis=1, **_):
    return knpx.batch_norm(data, gamma, beta, moving_mean, moving_var, eps=eps,
                           momentum=momentum, fix_gamma=fix_gamma,
                           use_global_stats=use_global_stats, axis=axis)


def _ln_shapes(attrs, data):
    c = (data[int(attrs.get("axis", -1))],)
    return {"gamma": c, "beta": c}


@_op("LayerNorm", ("data", "gamma", "beta"), param_shapes=_ln_shapes)
def LayerNorm(data, gamma, beta, axis=-1, eps=1e-5, **_):
    return knpx.layer_norm(data, gamma, beta, axis=axis, eps=eps)


def _emb_shapes(attrs, data):
    return {"weight": (int(attrs["input_dim"]), int(attrs["output_dim"]))}


@_op("Embedding", ("data", "weight"), param_shapes=_emb_shapes)
def Embedding(data, weight, input_dim=None, output_dim=None, **_):
    return knpx.embedding(data, weight)


@_op("Activation")
def Activation(data, act_type="relu", **_):
    return knpx.activation(data, act_type=act_type)


@_op("LeakyReLU", ("data", "gamma"))
def LeakyReLU(data, gamma=None, act_type="leaky", slope=0.25, **_):
    return knpx.leaky_relu(data, gamma, act_type=act_type, slope=slope)


@_op("Pooling")
def Pooling(data, kernel=None, pool_type="max", stride=None, pad=None, global_pool=False,
            pooling_convention="valid", count_include_pad=True, layout=None, **_):
    _channels_first("Pooling", layout)
    return knpx.pooling(data, kernel=_tuple_or_none(kernel), pool_type=pool_type,
                        stride=_tuple_or_none(stride), pad=_tuple_or_none(pad),
                        global_pool=global_pool, pooling_convention=pooling_convention,
                        count_include_pad=True if count_include_pad is None
                        else count_include_pad)


@_op("Dropout")
def Dropout(data, p=0.5, mode="training", axes=(), **_):
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


@_op("SoftmaxOutput Softmax", ("data", "label"),
     param_shapes=lambda attrs, data: {"label": tuple(data[:-1])})
def SoftmaxOutput(data, label, grad_scale=1.0, normalization="null", **_):
    """Forward: softmax. Backward (MXNet's rule): grad_scale * (softmax - one_hot(label)),
    whatever head gradient comes; built from ordinary ops so it traces and compiles."""
    prob = knpx.softmax(data, axis=-1)
    onehot = knpx.one_hot(label.astype("int32"), data.shape[-1], dtype=data.dtype)
    loss = -knp.sum(onehot * knpx.log_softmax(data, axis=-1), axis=-1, keepdims=True)
    scale = float(grad_scale) / data.shape[-1]
    if normalization == "batch":
        scale /= data.shape[0]
    surrogate = loss * scale
    # value: prob; gradient: d(surrogate)/d(data) for each head element
    return knpx.stop_gradient(prob) + (surrogate - knpx.stop_gradient(surrogate))


@_op("LinearRegressionOutput", ("data", "label"),
     param_shapes=lambda attrs, data: {"label": tuple(data)})
def LinearRegressionOutput(data, label, grad_scale=1.0, **_):
    label = knp.reshape(label, data.shape)
    surrogate = (data - knpx.stop_gradient(data)) * knpx.stop_gradient(data - label) * \
        (float(grad_scale) / max(1, data.size // data.shape[0]))
    return data + surrogate - knpx.stop_gradient(surrogate)


@_op("UpSampling", variadic=True)
def UpSampling(*data, scale=1, sample_type="nearest", num_args=1, **_):
    if sample_type != "nearest" or len(data) != 1:
        raise KilnError(f"UpSampling: only sample_type='nearest' with one input is mapped, "
                        f"got {sample_type!r} with {len(data)} inputs")
    x = knp.repeat(data[0], int(scale), axis=2)
    return knp.repeat(x, int(scale), axis=3)


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


# the tensor ops (arithmetic, reductions, shapes) register themselves on import
from . import tensor as mxnet_ops_tensor  # noqa: E402,F401
from . import sequence as mxnet_ops_seq, math as mxnet_ops_more, assorted as mxnet_ops_extra  # noqa: E402,F401  (Sequence*, ...)
from . import ctc as mxnet_ops_ctc, spatial_transformer as mxnet_ops_stn  # noqa: E402,F401  (CTCLoss; spatial transformer)
from . import rnn as mxnet_ops_rnn, deformable as mxnet_ops_deform  # noqa: E402,F401  (fused RNN; deformable conv)
