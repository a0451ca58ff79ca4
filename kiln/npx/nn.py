"""Neural-network functions, composed from registry primitives.

Nothing here has a gradient rule of its own: every function is built from primitives, so
gradients, tracing, fusion and code generation come for free. The softmax family and
attention are in softmax.py.
"""
import math

import numpy as _np

from .._core import autograd
from .._core.base import DEFAULT_FLOAT, normalize_axis, op_error, KilnError, normalize_dtype
from .._core.dispatch import to_operands
from .._core.ndarray import ndarray
from ..ops import REGISTRY as _R
from .. import np as knp
from ..np.indexing import pick_along
from . import fused_leaky, fused_softmax
from .norm import batch_norm, layer_norm, group_norm  # noqa: F401,E402


def _arr(x):
    return x if isinstance(x, ndarray) else to_operands([x])[0]


def relu(data):
    """Elementwise `max(x, 0)`."""
    return _R["relu"](_arr(data))


def sigmoid(data):
    """Elementwise logistic sigmoid `1 / (1 + exp(-x))`."""
    return _R["sigmoid"](_arr(data))


def softplus(data):
    """Elementwise `log(1 + exp(x))`, computed without overflow (MXNet's softrelu)."""
    x = _arr(data)
    return relu(x) + knp.log1p(knp.exp(-knp.abs(x)))


def softsign(data):
    """Elementwise `x / (1 + |x|)`."""
    x = _arr(data)
    return x / (1 + knp.abs(x))


def gelu(data, approximation="erf"):
    """Elementwise GELU, `x * Phi(x)` with the normal CDF (`approximation='erf'`) or its tanh
    approximation (`'tanh'`)."""
    x = _arr(data)
    if approximation == "tanh":
        inner = math.sqrt(2.0 / math.pi) * (x + 0.044715 * x * x * x)
        return 0.5 * x * (1.0 + _R["tanh"](inner))
    return 0.5 * x * (1.0 + _R["erf"](x * (1.0 / math.sqrt(2.0))))


def elu(data, alpha=1.0):
    """Elementwise ELU: `x` for `x > 0`, else `alpha * (exp(x) - 1)`."""
    x = _arr(data)
    # expm1, not exp(x) - 1: near 0 that difference loses every digit in float16
    return knp.where(x > 0, x, alpha * knp.expm1(knp.minimum(x, 0)))


def selu(data):
    """Elementwise SELU: `scale * elu(x, alpha)` with the constants of Klambauer et al. (2017)."""
    alpha, scale = 1.6732632423543772, 1.0507009873554805
    return scale * elu(data, alpha)


def silu(data):
    """Elementwise SiLU (swish), `x * sigmoid(x)`; `swish` is the same."""
    x = _arr(data)
    return x * sigmoid(x)


swish = silu


def activation(data, act_type="relu", **kwargs):
    """The activation named by `act_type` ('relu', 'sigmoid', 'tanh', 'softrelu', 'softsign',
    'gelu', 'silu', 'swish', 'elu', 'selu') applied to `data` (MXNet's Activation)."""
    table = {"relu": relu, "sigmoid": sigmoid, "tanh": lambda x: _R["tanh"](_arr(x)),
             "softrelu": softplus, "softsign": softsign, "gelu": gelu, "silu": silu,
             "swish": silu, "elu": elu, "selu": selu}
    fn = table.get(act_type)
    if fn is None:
        raise op_error("activation", f"act_type must be one of {sorted(table)}, got "
                       f"{act_type!r}", KilnError)
    return fn(data)


def leaky_relu(data, gamma=None, act_type="leaky", slope=0.25, **kwargs):
    """MXNet's LeakyReLU family by `act_type`: 'leaky' (`x` or `slope * x`), 'prelu' (a learned
    slope `gamma` per channel), 'elu', 'selu', 'gelu' and 'gelu_tanh'."""
    x = _arr(data)
    if act_type == "leaky":
        if 0 <= slope <= 1:
            # x times a factor of exactly 1 or slope, made without NumPy's slow where: the
            # gradient is one multiply by it (DCGAN's discriminator: 3.3x faster than
            # where(x > 0, x, x * slope), whose gradient took five full-size passes);
            # eager float32 takes one pass each way with the same bits (fused_leaky.py)
            out = fused_leaky.apply(x, slope)
            if out is not None:
                return out
            return x * knp.maximum((x > 0).astype(x.dtype), slope)
        return knp.where(x > 0, x, x * slope)
    if act_type == "prelu":
        g = _arr(gamma)
        if g.ndim < x.ndim:
            g = knp.reshape(g, _prelu_gamma_shape(tuple(g.shape), tuple(x.shape)))
        return knp.where(x > 0, x, x * g)
    if act_type == "elu":
        return elu(x, slope)
    if act_type == "selu":
        return selu(x)
    if act_type in ("gelu", "gelu_erf"):
        return gelu(x)
    if act_type == "gelu_tanh":
        return gelu(x, "tanh")
    raise op_error("leaky_relu", f"unknown act_type {act_type!r}", KilnError)


def _prelu_gamma_shape(gamma, data):
    """MXNet's placement of a PReLU slope: gamma's axes, from its last, fill data's axes 1
    and 0 (the channel, then the batch) where the sizes match or gamma's is 1; every other
    axis is 1. So a vector is per channel and a (batch, channel) matrix per sample."""
    out, s = [1] * len(data), len(gamma) - 1
    for i in range(len(data) - 1, -1, -1):
        if s >= 0 and i <= 1 and gamma[s] in (data[i], 1):
            out[i] = gamma[s]
            s -= 1
    if s != -1:
        raise op_error("leaky_relu", f"cannot broadcast gamma of shape {gamma} to data of "
                       f"shape {data}", KilnError)
    return tuple(out)


def one_hot(indices, depth, on_value=1.0, off_value=0.0, dtype=None):
    """A one-hot encoding of `indices`: a new last axis of length `depth` holding `on_value` at the
    index and `off_value` elsewhere."""
    idx = _arr(indices)
    classes = ndarray._wrap(_np.arange(depth, dtype=_np.int64))
    hit = knp.expand_dims(idx.astype(_np.int64), -1) == classes
    dt = normalize_dtype(dtype, DEFAULT_FLOAT)
    return knp.where(hit, knp.full((), on_value, dtype=dt), knp.full((), off_value, dtype=dt))


def pick(data, index, axis=-1, keepdims=False, mode="clip"):
    """The elements of `data` at `index` along `axis` (one per position of the other axes); indices
    are clipped, or wrapped with `mode='wrap'`."""
    x, idx = _arr(data), _arr(index)
    axis = normalize_axis("pick", axis, x.ndim)
    if idx.ndim == x.ndim - 1:
        idx = knp.expand_dims(idx, axis)
    n = x.shape[axis]
    idx = idx.astype(_np.int64)
    if mode == "wrap":
        idx = idx % n
    out = pick_along(x, idx, axis)
    return out if keepdims else knp.squeeze(out, axis)


def batch_dot(a, b, transpose_a=False, transpose_b=False):
    """Batched matrix product of `a` and `b` over their last two axes, either transposed first when
    asked."""
    a, b = _arr(a), _arr(b)
    if transpose_a:
        a = knp.swapaxes(a, -1, -2)
    if transpose_b:
        b = knp.swapaxes(b, -1, -2)
    return knp.matmul(a, b)


def fully_connected(x, weight, bias=None, num_hidden=None, no_bias=False, flatten=True):
    """A dense layer: `x @ weight.T + bias`, with `x` flattened to 2-D first when `flatten`
    (MXNet's FullyConnected)."""
    x = _arr(x)
    if flatten and x.ndim != 2:
        x = knp.reshape(x, (x.shape[0], -1))
    if x.shape[-1] != weight.shape[1]:
        raise op_error("fully_connected", f"input has {x.shape[-1]} features (shape "
                       f"{x.shape}) but the weight of shape {weight.shape} expects "
                       f"{weight.shape[1]}")
    y = knp.matmul(x, knp.transpose(weight))
    if bias is not None and not no_bias:
        y = y + bias
    return y


def _tuple(value, n, name, default):
    if value is None or value == ():
        return (default,) * n
    if isinstance(value, (int, _np.integer)):
        return (int(value),) * n
    value = tuple(int(v) for v in value)
    if len(value) != n:
        raise op_error(name, f"expected {n} values, got {value}", KilnError)
    return value


def _conv_args(data, weight, bias, stride, dilate, pad, num_group, no_bias):
    x, w = _arr(data), _arr(weight)
    nsp = w.ndim - 2
    if x.ndim != nsp + 2:
        raise op_error("convolution", f"expected input of {nsp + 2} dimensions for a "
                       f"{nsp}-d kernel of shape {w.shape}, got input shape {x.shape}")
    stride = _tuple(stride, nsp, "convolution stride", 1)
    dilate = _tuple(dilate, nsp, "convolution dilate", 1)
    pad = _tuple(pad, nsp, "convolution pad", 0)
    groups = int(num_group)
    c, f = x.shape[1], w.shape[0]
    if c != w.shape[1] * groups or f % groups:
        raise op_error("convolution", f"input has {c} channels (shape {x.shape}) but the "
                       f"weight of shape {w.shape} with {groups} group(s) expects "
                       f"{w.shape[1] * groups}")
    b = _arr(bias) if bias is not None and not no_bias else None
    attrs = dict(stride=stride, dilation=dilate, pad=tuple(p for p in pad for _ in (0, 1)),
                 groups=groups)
    return x, w, b, attrs


def _fusable(x, w, b):
    """Can the convolution, its bias add (and a ReLU) run as one eager conv_bias? Traced
    graphs get that fusion from the compiler (kiln/graph/passes/conv_epilogue.py)."""
    from .._core import trace
    return (b is not None and trace.current() is None and x._node is None
            and w._node is None and b._node is None and x.dtype == w.dtype == b.dtype
            and b.shape == (w.shape[0],))


def convolution(data=None, weight=None, bias=None, kernel=None, stride=None, dilate=None,
                pad=None, num_filter=None, num_group=1, no_bias=False, layout=None, **kwargs):
    """N-d convolution of `data` (NCW, NCHW or NCDHW) with `weight`, `stride`, `dilate`, `pad` and
    `num_group` groups, plus `bias` (MXNet's Convolution)."""
    x, w, b, attrs = _conv_args(data, weight, bias, stride, dilate, pad, num_group, no_bias)
    if _fusable(x, w, b):
        # eagerly, one primitive writes the output once (oneDNN takes the bias)
        return _R["conv_bias"](x, w, b, **attrs)
    y = _R["conv"](x, w, **attrs)
    if b is not None:
        y = y + knp.reshape(b, (1, w.shape[0]) + (1,) * (w.ndim - 2))
    return y


def convolution_relu(data=None, weight=None, bias=None, kernel=None, stride=None,
                     dilate=None, pad=None, num_filter=None, num_group=1, no_bias=False,
                     **kwargs):
    """relu(convolution(...)) as one eager primitive (Conv layers with activation='relu'),
    or None where it cannot be one (traced, no bias): the caller then applies ReLU."""
    x, w, b, attrs = _conv_args(data, weight, bias, stride, dilate, pad, num_group, no_bias)
    if not _fusable(x, w, b):
        return None
    return _R["conv_bias"](x, w, b, relu=True, **attrs)


def deconvolution(data=None, weight=None, bias=None, kernel=None, stride=None, dilate=None,
                  pad=None, adj=None, num_filter=None, num_group=1, no_bias=False, **kwargs):
    """Transposed convolution: the adjoint of convolution with respect to its input."""
    x, w = _arr(data), _arr(weight)
    nsp = w.ndim - 2
    stride = _tuple(stride, nsp, "deconvolution stride", 1)
    dilate = _tuple(dilate, nsp, "deconvolution dilate", 1)
    pad = _tuple(pad, nsp, "deconvolution pad", 0)
    adj = _tuple(adj, nsp, "deconvolution adj", 0)
    groups = int(num_group)
    n, c = x.shape[:2]
    if w.ndim != x.ndim or w.shape[0] != c:
        raise op_error("deconvolution", f"input has {c} channels (shape {x.shape}) but the "
                       f"weight of shape {w.shape} expects {w.shape[0] if w.ndim else 0}")
    f = w.shape[1] * groups
    ksize = tuple(w.shape[2:])
    in_sp = tuple((x.shape[2 + i] - 1) * stride[i] - 2 * pad[i] + dilate[i] * (ksize[i] - 1)
                  + 1 + adj[i] for i in range(nsp))
    # transposed convolution is the adjoint in x of the convolution from y's shape to x's
    y = _R["conv_grad_data"](x, w, in_shape=in_sp, stride=stride, dilation=dilate,
                             pad=tuple(p for p in pad for _ in (0, 1)), groups=groups)
    if bias is not None and not no_bias:
        y = y + knp.reshape(bias, (1, f) + (1,) * nsp)
    return y


def pooling(data=None, kernel=None, pool_type="max", stride=None, pad=None, global_pool=False,
            pooling_convention="valid", count_include_pad=True, layout=None, **kwargs):
    """Max, average or sum pooling (`pool_type`) of `data` over its spatial axes with `kernel`,
    `stride` and `pad`; `global_pool=True` pools each whole feature map (MXNet's Pooling)."""
    x = _arr(data)
    nsp = x.ndim - 2
    if nsp < 1:
        raise op_error("pooling", f"expected input (N, C, spatial...), got shape {x.shape}")
    spatial = tuple(range(2, x.ndim))
    if pool_type not in ("max", "avg", "sum"):
        raise op_error("pooling", f"pool_type must be 'max', 'avg' or 'sum', got "
                       f"{pool_type!r}", KilnError)
    if global_pool:
        if pool_type == "max":
            return knp.max(x, axis=spatial, keepdims=True)
        s = knp.sum(x, axis=spatial, keepdims=True)
        return s if pool_type == "sum" else s / int(_np.prod(x.shape[2:]))
    kernel = _tuple(kernel, nsp, "pooling kernel", 1)
    stride = _tuple(stride, nsp, "pooling stride", 1)
    pad = _tuple(pad, nsp, "pooling pad", 0)
    if pooling_convention == "same" and (nsp != 1 or any(pad)):
        raise op_error("pooling", "pooling_convention 'same' pools 1-d data (N, C, W) and "
                       f"takes no pad, got shape {x.shape} and pad {pad}", KilnError)
    pads = []
    for i in range(nsp):
        hi = pad[i]
        if pooling_convention == "full":
            size = x.shape[2 + i] + 2 * pad[i] - kernel[i]
            hi += (-size) % stride[i]
        elif pooling_convention == "same":    # ceil(W / stride) windows, the last clipped
            out = -(-x.shape[2 + i] // stride[i])
            hi = max((out - 1) * stride[i] + kernel[i] - x.shape[2 + i], 0)
        pads += [pad[i], hi]
    # the avg divisor counts window cells inside the input, plus its explicit padding when
    # count_include_pad; never the extra cells of the 'full' convention (as MXNet)
    inner = tuple(pad) if count_include_pad else (0,) * nsp
    uniform = pads == [p for p in inner for _ in (0, 1)]
    if pool_type == "max" or (pool_type == "avg" and (uniform or not count_include_pad)):
        kind = "max" if pool_type == "max" else "avg" if uniform else "avg_valid"
        return _R["pool"](x, kind=kind, kernel=kernel, stride=stride, pad=tuple(pads))
    cols = _R["windows"](x, kernel=kernel, stride=stride, dilation=(1,) * nsp,
                         pad=tuple(pads), pad_value=0.0)
    kaxes = tuple(range(cols.ndim - nsp, cols.ndim))
    y = knp.sum(cols, axis=kaxes)
    if pool_type == "avg":  # count_include_pad with the 'full' convention's extra cells
        ones = ndarray._wrap(_np.ones((1, 1) + tuple(
            d + 2 * q for d, q in zip(x.shape[2:], inner)), x.dtype))
        rest = tuple(p - inner[i // 2] for i, p in enumerate(pads))
        counts = knp.sum(_R["windows"](ones, kernel=kernel, stride=stride,
                                       dilation=(1,) * nsp, pad=rest), axis=kaxes)
        y = y / counts
    return knp.moveaxis(y, -1, 1)


def dropout(data, p=0.5, mode="training", axes=(), cudnn_off=False, **kwargs):
    """Inverted dropout: in training mode each element is zeroed with probability `p` and the rest
    are scaled by `1 / (1 - p)`; `axes` shares the mask along those axes; otherwise `data`
    unchanged."""
    x = _arr(data)
    if p <= 0 or (mode == "training" and not autograd.is_training()):
        return x
    if p >= 1:
        return x * 0
    shape = tuple(1 if i in axes else d for i, d in enumerate(x.shape))
    if fused_softmax.concrete_float(x):
        return _eager_dropout(x, p, shape)
    keep = knp.random.uniform(size=shape, dtype=x.dtype) >= p
    return x * keep.astype(x.dtype) * (1.0 / (1.0 - p))


def _eager_dropout(x, p, shape):
    """The composite above as one multiply by (keep * scale) and one tape entry: the same
    random draw, the same bits (a product with exactly 0 or 1 rounds nothing), two fewer
    passes forward and one backward."""
    draw = _R["random_uniform"].impl(shape, x.dtype)
    mask = _np.multiply(draw >= p, x.dtype.type(1.0 / (1.0 - p)), dtype=x.dtype)
    out = ndarray._wrap(_np.multiply(x._data, mask))
    if autograd.is_recording() and x._tape is not None:
        def backward(out_grads):
            g = out_grads[0]
            if autograd.is_recording() or g._node is not None:     # create_graph
                return [g * ndarray._wrap(mask)]
            return [ndarray._wrap(_np.multiply(g._data, mask))]
        autograd.record_custom("dropout", [x], [out], backward)
    return out


def embedding(data, weight, input_dim=None, output_dim=None, dtype=None, sparse_grad=False,
              **kwargs):
    """The rows of `weight` at the integer indices `data` (MXNet's Embedding); indices are clipped
    to the table."""
    idx = _arr(data)
    if idx.dtype.kind == "f":
        idx = idx.astype(_np.int64)
    return _R["take"](weight, idx, axis=0, mode="clip")


def sequence_mask(data, sequence_length=None, use_sequence_length=False, value=0.0, axis=0):
    """`data` with the steps at or after each sequence's `sequence_length` along `axis` set to
    `value` (unchanged unless `use_sequence_length`)."""
    x = _arr(data)
    if not use_sequence_length or sequence_length is None:
        return x
    length = _arr(sequence_length)
    # the batch axis is the other one of the first two
    batch_axis = 1 if axis == 0 else 0
    steps = knp.arange(x.shape[axis], dtype=length.dtype)
    shape = [1] * x.ndim
    shape[axis] = x.shape[axis]
    bshape = [1] * x.ndim
    bshape[batch_axis] = x.shape[batch_axis]
    mask = knp.reshape(steps, tuple(shape)) < knp.reshape(length, tuple(bshape))
    return knp.where(mask, x, value)


def topk(data, axis=-1, k=1, ret_typ="indices", is_ascend=False, dtype="float32"):
    """The `k` largest (or, with `is_ascend`, smallest) elements along `axis`: their indices,
    values or both (`ret_typ`); computed eagerly. axis=None: over the flattened array."""
    x = _arr(data)
    if axis is None:
        x, axis = knp.reshape(x, (-1,)), -1
    order = _np.argsort(x._concrete("topk"), axis=axis)
    if not is_ascend:
        order = _np.flip(order, axis=axis)
    order = _np.take(order, _np.arange(k), axis=axis)
    idx = ndarray._wrap(order.astype(_np.int64))
    if ret_typ == "indices":
        return idx.astype(dtype)
    values = pick_along(x, idx, axis)
    if ret_typ == "value":
        return values
    return values, idx.astype(dtype)


def smooth_l1(data, scalar=1.0):
    """Elementwise smooth L1: `0.5 * (scalar * x)**2` where `|x| < 1 / scalar**2`, else `|x| - 0.5
    / scalar**2`."""
    x = _arr(data)
    s2 = scalar * scalar
    ax = knp.abs(x)
    return knp.where(ax < 1.0 / s2, 0.5 * s2 * x * x, ax - 0.5 / s2)


def reshape_like(lhs, rhs):
    """`lhs` reshaped to the shape of `rhs`."""
    return knp.reshape(lhs, _arr(rhs).shape)


def batch_flatten(data):
    """(d0, d1, ..., dk) -> (d0, d1 * ... * dk), as MXNet's Flatten."""
    x = _arr(data)
    if x.ndim == 0:
        raise op_error("batch_flatten", "needs at least one axis, got a scalar")
    return knp.reshape(x, (x.shape[0], -1) if x.shape[0] else (0, int(_np.prod(x.shape[1:]))))


def arange_like(data, start=0.0, step=1.0, repeat=1, axis=None, ctx=None):
    """`start, start + step, ...` in the shape of `data` (or along its `axis`), each value repeated
    `repeat` times, in `data`'s dtype."""
    x = _arr(data)
    n = x.size if axis is None else x.shape[axis]
    values = start + step * _np.arange(n // repeat).repeat(repeat)
    shape = x.shape if axis is None else (n,)
    return ndarray._wrap(values.reshape(shape).astype(x.dtype))


def stop_gradient(data):
    """The value of `data` with no gradient, as an array of its own (MXNet's BlockGrad is an
    operator with its own output): a later write into `data` does not reach it. detach()
    alone shares memory, and compiled code and eager disagreed on whether such a write
    showed through (fuzz seed 12, #173)."""
    return _arr(data).detach().copy()
