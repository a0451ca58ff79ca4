"""Convolution as three primitives: conv, and the two halves of its gradient.

    conv(x, w)              x (N, C, *S), w (F, C/groups, *K)  ->  y (N, F, *O)
    conv_grad_data(g, w)    the adjoint of conv in x:  g (N, F, *O)  ->  (N, C, *S)
    conv_grad_weight(x, g)  the adjoint of conv in w:  g (N, F, *O)  ->  (F, C/groups, *K)

The three are closed under differentiation (each one's gradient is made of the others), so
gradients of any order stay on the kernel library. Each primitive runs on the eager kernel
a backend registers (`prim.lowerings["eager"]`: oneDNN, kiln/backend/dnnl/eager.py) when
it takes the call, and otherwise on its decomposition into kiln's `windows` (im2col) and
matmul. The decomposition is also what backends without a conv kernel run
(kiln/graph/passes/expand_heavy.py), so both paths compute the same function.
`pad` is (lo, hi) per spatial dimension. channels_last=True: activations are (N, *S, C)
(kiln/ops/channels_last.py). bf16=True (the gradients, under mixed precision: the AMP pass
sets it, kiln/graph/passes/amp.py): the operands are rounded to bfloat16 and the products
accumulated in float32, as oneDNN's bfloat16 kernels compute them; the result is float32.
"""
import numpy as _np

from . import channels_last as cl, compose
from .elementwise import cast
from .linalg import matmul
from .registry import register
from .window import _check, windows, unwindows
from .._core import autograd
from .._core.autograd import input_needed
from .._core.base import bfloat16_dtype, op_error
from .._core.bfloat16 import round_to_bfloat16
from .._core.ndarray import ndarray


def _attrs_ok(op, nsp, stride, dilation, pad, groups):
    if not (len(stride) == len(dilation) == nsp and len(pad) == 2 * nsp):
        raise op_error(op, f"stride {stride}, dilation {dilation} and pad {pad} do not fit "
                       f"{nsp} spatial dimension(s)")
    if groups < 1 or any(p < 0 for p in pad):
        raise op_error(op, f"groups must be positive and pads non-negative, got groups="
                       f"{groups}, pad={pad}")


def _check_weight(op, c, f, w_shape, groups):
    if f % groups or c != w_shape[1] * groups:
        raise op_error(op, f"the input has {c} channels but the weight of shape "
                       f"{tuple(w_shape)} with {groups} group(s) expects "
                       f"{w_shape[1] * groups} (and {f} filters must divide into the groups)")


def conv_out_shape(op, x_shape, w_shape, stride, dilation, pad, groups):
    nsp = len(w_shape) - 2
    if len(x_shape) != nsp + 2:
        raise op_error(op, f"expected an input of {nsp + 2} dimensions (N, C, {nsp} spatial) "
                       f"for the weight of shape {tuple(w_shape)}, got {tuple(x_shape)}")
    _attrs_ok(op, nsp, stride, dilation, pad, groups)
    _check_weight(op, x_shape[1], w_shape[0], w_shape, groups)
    out = _check(op, x_shape, tuple(w_shape[2:]), stride, dilation, pad)
    return (x_shape[0], w_shape[0]) + out


def _conv_rule(x, w, stride, dilation, pad, groups=1):
    if x.dtype != w.dtype:
        raise op_error("conv", f"input dtype {x.dtype} and weight dtype {w.dtype} differ")
    return conv_out_shape("conv", x.shape, w.shape, stride, dilation, pad, groups), x.dtype


def _attrs(stride, dilation, pad, groups, channels_last):
    a = dict(stride=stride, dilation=dilation, pad=pad, groups=groups)
    if channels_last:
        a["channels_last"] = True
    return a


def contiguous_grad(g):
    """g in C order, made once for both halves of a convolution's gradient: eagerly, a
    strided g (a slice of a concatenation's gradient, in GoogLeNet) was copied by each."""
    if g._node is None and not autograd.is_recording() and not g._data.flags.c_contiguous:
        return ndarray._wrap(_np.ascontiguousarray(g._data))
    return g


def _eager_all(g, x, w, a, bias):
    """The gradients in x and w (and the bias's when bias), eagerly on oneDNN at once: the
    primitives read one converted copy of g instead of converting it each, and the bias's
    is summed inside the weights' primitive. None where that does not apply (tracing, a
    gradient recorded for a higher order, channels_last, no eager kernels registered)."""
    fast = conv.lowerings.get("eager")
    if (fast is None or autograd.is_recording() or a.get("channels_last") or a.get("bf16")
            or any(v._node is not None for v in (g, x, w))):
        return None
    grads = fast.conv_backward(g._data, x._data, w._data, a["stride"], a["dilation"],
                               a["pad"], a["groups"], bias=bias)
    if grads is None:
        return None
    return tuple(ndarray._wrap(v.astype(x.dtype, copy=False)) for v in grads)


def conv_grads(g, x, w, a, bias=False):
    """The gradients of conv(x, w, **a) in x and w, each None where autograd needs none.
    bias: the convolution adds a bias, whose gradient autograd needs; it comes third when
    the eager path gave it, and is the caller's to sum otherwise."""
    if input_needed(0) and input_needed(1):
        g = contiguous_grad(g)
        grads = _eager_all(g, x, w, a, bias)
        if grads is not None:
            return grads
    in_shape = cl.spatial(x.shape, a.get("channels_last", False))
    return (conv_grad_data(g, w, in_shape=in_shape, **a) if input_needed(0) else None,
            conv_grad_weight(x, g, kernel=tuple(w.shape[2:]), **a) if input_needed(1) else None)


def _conv_grad(g, out, x, w, stride, dilation, pad, groups=1, channels_last=False):
    return conv_grads(g, x, w, _attrs(stride, dilation, pad, groups, channels_last))


def recording():
    """Is this eager call part of a training step (autograd recording)? Its forward then
    runs on oneDNN's training kernel, as MXNet's does."""
    return autograd.is_recording()


def _eval(decomposition, *arrays, **attrs):
    """Run a decomposition eagerly on NumPy values: kiln's own kernels."""
    with autograd.pause():
        return decomposition(*[ndarray._wrap(a) for a in arrays], **attrs)._data


@register("conv", cl.rule((0,), True)(_conv_rule), _conv_grad)
@cl.kernel((0,), True)
def conv(x, w, stride, dilation, pad, groups=1):
    shape = _conv_rule(x, w, stride, dilation, pad, groups)[0]
    fast = conv.lowerings.get("eager")
    y = None if fast is None else fast.conv_forward(x, w, shape, stride, dilation, pad, groups,
                                                    training=recording())
    if y is None:
        y = _eval(conv_by_windows, x, w, stride=stride, dilation=dilation, pad=pad,
                  groups=groups)
    return y


def _rounded(bf16, *arrays):
    """NumPy arrays rounded to bfloat16 (kept float32) when bf16, else as they are."""
    return tuple(round_to_bfloat16(a) for a in arrays) if bf16 else arrays


def _grad_data_rule(g, w, in_shape, stride, dilation, pad, groups=1, bf16=False):
    x_shape = (g.shape[0], w.shape[1] * groups) + tuple(in_shape)
    want = conv_out_shape("conv_grad_data", x_shape, w.shape, stride, dilation, pad, groups)
    if tuple(g.shape) != want:
        raise op_error("conv_grad_data", f"gradient of shape {tuple(g.shape)} does not fit a "
                       f"convolution output of shape {want}")
    return x_shape, g.dtype


def _grad_data_grad(c, out, g, w, in_shape, stride, dilation, pad, groups=1,
                    channels_last=False, bf16=False):
    a = _attrs(stride, dilation, pad, groups, channels_last)
    return (conv(c, w, **a), conv_grad_weight(c, g, kernel=tuple(w.shape[2:]), **a))


@register("conv_grad_data", cl.rule((0,), True)(_grad_data_rule), _grad_data_grad)
@cl.kernel((0,), True)
def conv_grad_data(g, w, in_shape, stride, dilation, pad, groups=1, bf16=False):
    shape = _grad_data_rule(g, w, in_shape, stride, dilation, pad, groups)[0]
    g, w = _rounded(bf16, g, w)
    fast = conv_grad_data.lowerings.get("eager")
    gx = None if fast is None else fast.conv_backward_data(g, w, shape, stride, dilation, pad,
                                                           groups)
    if gx is None:
        gx = _eval(conv_grad_data_by_windows, g, w, in_shape=in_shape, stride=stride,
                   dilation=dilation, pad=pad, groups=groups)
    return gx


def _grad_weight_rule(x, g, kernel, stride, dilation, pad, groups=1, bf16=False):
    w_shape = (g.shape[1], x.shape[1] // max(groups, 1)) + tuple(kernel)
    want = conv_out_shape("conv_grad_weight", x.shape, w_shape, stride, dilation, pad, groups)
    if tuple(g.shape) != want:
        raise op_error("conv_grad_weight", f"gradient of shape {tuple(g.shape)} does not fit "
                       f"a convolution output of shape {want}")
    return w_shape, x.dtype


def _grad_weight_grad(c, out, x, g, kernel, stride, dilation, pad, groups=1,
                      channels_last=False, bf16=False):
    a = _attrs(stride, dilation, pad, groups, channels_last)
    return (conv_grad_data(g, c, in_shape=cl.spatial(x.shape, channels_last), **a),
            conv(x, c, **a))


@register("conv_grad_weight", cl.rule((0, 1), False)(_grad_weight_rule), _grad_weight_grad)
@cl.kernel((0, 1), False)
def conv_grad_weight(x, g, kernel, stride, dilation, pad, groups=1, bf16=False):
    shape = _grad_weight_rule(x, g, kernel, stride, dilation, pad, groups)[0]
    x, g = _rounded(bf16, x, g)
    fast = conv_grad_weight.lowerings.get("eager")
    gw = None if fast is None else fast.conv_backward_weights(x, g, shape, stride, dilation,
                                                              pad, groups)
    if gw is None:
        gw = _eval(conv_grad_weight_by_windows, x, g, kernel=kernel, stride=stride,
                   dilation=dilation, pad=pad, groups=groups)
    return gw


# ---- decompositions into windows + matmul (kiln's own kernels) ----------------------------

def _grouped_cols(x, kernel, stride, dilation, pad, groups):
    """windows(x) as (groups, rows, C/groups * prod(kernel)), and the output spatial shape."""
    nsp = len(kernel)
    cols = windows(x, kernel=tuple(kernel), stride=stride, dilation=dilation, pad=pad,
                   pad_value=0.0)
    out_sp = tuple(cols.shape[1:1 + nsp])
    rows = x.shape[0] * int(_np.prod(out_sp, dtype=_np.int64))
    cg = x.shape[1] // groups
    kk = int(_np.prod(kernel, dtype=_np.int64))
    cols = compose.reshape(cols, (rows, groups, cg * kk))
    return compose.transpose(cols, (1, 0, 2)), out_sp


def _grouped_rows(g, groups):
    """g (N, F, *O) as (groups, rows, F/groups)."""
    f = g.shape[1]
    rows = compose.reshape(compose.moveaxis(g, 1, -1), (-1, groups, f // groups))
    return compose.transpose(rows, (1, 0, 2))


def conv_by_windows(x, w, stride, dilation, pad, groups=1):
    f, kernel = w.shape[0], tuple(w.shape[2:])
    cols, out_sp = _grouped_cols(x, kernel, stride, dilation, pad, groups)
    wg = compose.transpose(compose.reshape(w, (groups, f // groups, -1)), (0, 2, 1))
    y = matmul(cols, wg)                                  # (groups, rows, F/groups)
    y = compose.reshape(compose.transpose(y, (1, 0, 2)), (x.shape[0],) + out_sp + (f,))
    return compose.moveaxis(y, -1, 1)


def conv_grad_data_by_windows(g, w, in_shape, stride, dilation, pad, groups=1):
    f, kernel = w.shape[0], tuple(w.shape[2:])
    c = w.shape[1] * groups
    cols = matmul(_grouped_rows(g, groups), compose.reshape(w, (groups, f // groups, -1)))
    cols = compose.reshape(compose.transpose(cols, (1, 0, 2)),
                           (g.shape[0],) + tuple(g.shape[2:]) + (c,) + kernel)
    return unwindows(cols, in_shape=tuple(in_shape), kernel=kernel, stride=stride,
                     dilation=dilation, pad=pad)


def conv_grad_weight_by_windows(x, g, kernel, stride, dilation, pad, groups=1):
    cols, _ = _grouped_cols(x, kernel, stride, dilation, pad, groups)
    gw = matmul(compose.transpose(_grouped_rows(g, groups), (0, 2, 1)), cols)
    return compose.reshape(gw, (g.shape[1], x.shape[1] // groups) + tuple(kernel))


def _through_bfloat16(fn):
    """A decomposition taking bf16: its two operands cast through bfloat16 first."""
    def run(a, b, bf16=False, **attrs):
        if bf16:
            a, b = (cast(cast(v, dtype=bfloat16_dtype()), dtype=_np.float32) for v in (a, b))
        return fn(a, b, **attrs)
    return run


DECOMPOSITIONS = {"conv": cl.kernel((0,), True)(conv_by_windows),
                  "conv_grad_data": _through_bfloat16(
                      cl.kernel((0,), True)(conv_grad_data_by_windows)),
                  "conv_grad_weight": _through_bfloat16(
                      cl.kernel((0, 1), False)(conv_grad_weight_by_windows))}
