"""A convolution with its bias add and, optionally, ReLU, as one primitive.

    conv_bias(x, w, b, relu)    conv(x, w) + b along the channel axis, then max(., 0)
                                when relu; b is (F,)

Compiled graphs make it out of conv -> add(bias) [-> relu] (kiln/graph/passes/
conv_epilogue.py), so that oneDNN writes the output once: the bias is an argument of
the primitive and ReLU a post-op. Its gradient is made of the conv primitives.
"""
import numpy as _np

from . import channels_last as cl, compose
from .elementwise import relu as relu_op, relu_grad
from .conv import (contiguous_grad, conv, conv_grads, conv_by_windows, recording, _conv_rule,
                   _attrs)
from .registry import register
from .._core.autograd import input_needed
from .._core.base import op_error


def _rule(x, w, b, stride, dilation, pad, groups=1, relu=False):
    shape, dtype = _conv_rule(x, w, stride, dilation, pad, groups)
    if tuple(b.shape) != (w.shape[0],) or b.dtype != dtype:
        raise op_error("conv_bias", f"the bias must have shape ({w.shape[0]},) and dtype "
                       f"{dtype}, got shape {tuple(b.shape)} and dtype {b.dtype}")
    return shape, dtype


def conv_bias_grad(g, out, x, w, b, stride, dilation, pad, groups=1, relu=False,
                   channels_last=False, bf16=False):
    """The gradient rule (bf16: conv_bf16's with a bias, the conv gradients in bfloat16)."""
    g = relu_grad(g, out) if relu else contiguous_grad(g)
    channel = g.ndim - 1 if channels_last else 1
    a = _attrs(stride, dilation, pad, groups, channels_last)
    grads = conv_grads(g, x, w, dict(a, bf16=True) if bf16 else a, bias=input_needed(2))
    if len(grads) == 3:
        return grads
    return grads + (compose.sum(g, axis=tuple(i for i in range(g.ndim) if i != channel))
                    if input_needed(2) else None,)


@register("conv_bias", cl.rule((0,), True)(_rule), conv_bias_grad)
@cl.kernel((0,), True)
def conv_bias(x, w, b, stride, dilation, pad, groups=1, relu=False):
    shape = _rule(x, w, b, stride, dilation, pad, groups)[0]
    fast = conv_bias.lowerings.get("eager")
    y = None if fast is None else fast.conv_forward(x, w, shape, stride, dilation, pad, groups,
                                                    b=b, relu=relu, training=recording())
    if y is not None:
        return y
    y = conv.impl(x, w, stride=stride, dilation=dilation, pad=pad, groups=groups)
    y = y + b.reshape((1, -1) + (1,) * (y.ndim - 2)).astype(y.dtype, copy=False)
    return _np.maximum(y, 0, out=y) if relu else y


def conv_bias_by_windows(x, w, b, stride, dilation, pad, groups=1, relu=False):
    """The decomposition backends without a conv kernel run (expand_heavy.py)."""
    y = conv_by_windows(x, w, stride=stride, dilation=dilation, pad=pad, groups=groups)
    y = y + compose.reshape(b, (1, -1) + (1,) * (y.ndim - 2))
    return relu_op(y) if relu else y


DECOMPOSITIONS = {"conv_bias": cl.kernel((0,), True)(conv_bias_by_windows)}
