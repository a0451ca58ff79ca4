"""Registry cases for the heavy primitives (conv, conv_bias, conv_grad_data,
conv_grad_weight, pool, pool_grad; NCHW and channels-last), used by
test_grad_registry.CASES. Inputs are float64, so these check kiln's own kernels (oneDNN
takes float32 only; tests/backend/test_heavy_ops.py compares the two)."""
import math

import numpy as onp
import pytest

R = onp.random.default_rng(12)


def u(*s):
    return R.uniform(-1.0, 1.0, s)


def distinct(*s):
    n = math.prod(s)
    return (R.permutation(n) * 0.1 - n * 0.05 + R.uniform(0, 0.01, n)).reshape(s)


def _F():
    return pytest.importorskip("torch").nn.functional


def _sym(pad):
    return tuple(pad[0::2])


def t_conv(x, w, stride, dilation, pad, groups=1):
    fn = getattr(_F(), f"conv{x.ndim - 2}d")
    return fn(x, w, stride=stride, dilation=dilation, padding=_sym(pad), groups=groups)


def t_conv_grad_data(g, w, in_shape, stride, dilation, pad, groups=1):
    nsp = len(in_shape)
    k = w.shape[2:]
    extra = tuple(in_shape[i] - ((g.shape[2 + i] - 1) * stride[i] - 2 * pad[2 * i]
                                 + dilation[i] * (k[i] - 1) + 1) for i in range(nsp))
    fn = getattr(_F(), f"conv_transpose{nsp}d")
    return fn(g, w, stride=stride, padding=_sym(pad), output_padding=extra, groups=groups,
              dilation=dilation)


def t_pool(x, kind, kernel, stride, pad):
    F = _F()
    nsp = x.ndim - 2
    if kind == "max":
        return getattr(F, f"max_pool{nsp}d")(x, kernel, stride, _sym(pad))
    return getattr(F, f"avg_pool{nsp}d")(x, kernel, stride, _sym(pad),
                                         count_include_pad=kind == "avg")


def heavy_cases(C):
    a2 = dict(stride=(2, 1), dilation=(1, 2), pad=(1, 1, 0, 0))
    g2 = dict(stride=(1, 1), dilation=(1, 1), pad=(1, 1, 1, 1), groups=2)
    a1 = dict(stride=(2,), dilation=(1,), pad=(1, 2))
    a3 = dict(stride=(1, 2, 1), dilation=(1, 1, 1), pad=(0, 0, 1, 1, 0, 0))
    return {
        "conv": [C(u(2, 3, 5, 6), u(4, 3, 2, 2), **a2, torch=t_conv),
                 C(u(1, 4, 4, 4), u(6, 2, 3, 3), **g2, torch=t_conv),
                 C(u(2, 2, 7), u(3, 2, 3), **a1),
                 C(u(1, 2, 3, 4, 3), u(2, 2, 2, 3, 2), **a3, torch=t_conv),
                 C(u(2, 5, 6, 3), u(4, 3, 2, 2), **a2, channels_last=True)],
        "conv_grad_data": [C(u(2, 4, 3, 4), u(4, 3, 2, 2), in_shape=(5, 6), **a2,
                             torch=t_conv_grad_data),
                           C(u(1, 6, 4, 4), u(6, 2, 3, 3), in_shape=(4, 4), **g2,
                             torch=t_conv_grad_data),
                           C(u(2, 3, 4), u(3, 2, 3), in_shape=(7,), **a1),
                           C(u(1, 4, 4, 6), u(6, 2, 3, 3), in_shape=(4, 4), **g2,
                             channels_last=True)],
        "conv_grad_weight": [C(u(2, 3, 5, 6), u(2, 4, 3, 4), kernel=(2, 2), **a2),
                             C(u(1, 4, 4, 4), u(1, 6, 4, 4), kernel=(3, 3), **g2),
                             C(u(2, 2, 7), u(2, 3, 4), kernel=(3,), **a1),
                             C(u(2, 5, 6, 3), u(2, 3, 4, 2), kernel=(2, 2), **a2,
                               channels_last=True)],
        "pool": [C(distinct(2, 3, 5, 5), kind="max", kernel=(3, 3), stride=(2, 2),
                   pad=(1, 1, 1, 1), torch=t_pool),
                 C(u(2, 3, 5, 5), kind="avg", kernel=(2, 2), stride=(2, 2),
                   pad=(1, 1, 1, 1), torch=t_pool),
                 C(u(2, 3, 5, 5), kind="avg_valid", kernel=(3, 3), stride=(2, 2),
                   pad=(1, 1, 1, 1), torch=t_pool),
                 C(distinct(1, 2, 7), kind="max", kernel=(2,), stride=(2,), pad=(0, 1)),
                 C(distinct(2, 5, 5, 3), kind="max", kernel=(3, 3), stride=(2, 2),
                   pad=(1, 1, 1, 1), channels_last=True)],
        "conv_bias": [C(u(2, 3, 5, 6), u(4, 3, 2, 2), u(4), **a2),
                      C(u(1, 4, 4, 4), u(6, 2, 3, 3), u(6), **g2, relu=True),
                      C(u(2, 5, 6, 3), u(4, 3, 2, 2), u(4), **a2, relu=True,
                        channels_last=True)],
        "pool_grad": [C(u(2, 3, 3, 3), distinct(2, 3, 5, 5), kind="max", kernel=(3, 3),
                        stride=(2, 2), pad=(1, 1, 1, 1)),
                      C(u(2, 3, 3, 3), u(2, 3, 5, 5), kind="avg_valid", kernel=(3, 3),
                        stride=(2, 2), pad=(1, 1, 1, 1)),
                      C(u(1, 2, 4), u(1, 2, 7), kind="avg", kernel=(2,), stride=(2,),
                        pad=(0, 1)),
                      C(u(2, 3, 3, 3), distinct(2, 5, 5, 3), kind="max", kernel=(3, 3),
                        stride=(2, 2), pad=(1, 1, 1, 1), channels_last=True)],
    }
