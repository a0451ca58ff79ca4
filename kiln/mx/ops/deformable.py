"""MXNet's deformable convolution operators (`nd.contrib.DeformableConvolution`, v1, and
`ModulatedDeformableConvolution`, v2 with a mask), for nd and sym.

The sampling is gluon.contrib.cnn's (deformable_columns: each kernel tap read at its
regular position plus the learned offset, bilinearly, with each version's border rule);
this op adds MXNet's operator interface: the weight (F, C / groups, kh, kw) meeting the
columns in one matmul per group, the optional bias. Composed of registry ops, so gradients
reach the data, offsets, mask and weights.
"""
from ... import np as knp
from ..._core.base import KilnError
from .table import _op


def _pair(v, default):
    v = default if v is None or v == () else v
    return (int(v),) * 2 if isinstance(v, int) else tuple(int(x) for x in v)


def _deformable(data, offset, mask, weight, bias, kernel, stride, dilate, pad, num_filter,
                num_group, num_deformable_group, no_bias):
    from ...gluon.contrib.cnn import deformable_columns
    kernel = _pair(kernel, None)
    stride, dilate, pad = _pair(stride, 1), _pair(dilate, 1), _pair(pad, 0)
    cols, (oh, ow) = deformable_columns(data, offset, mask, kernel, stride, pad, dilate,
                                        int(num_deformable_group))
    n, c = data.shape[:2]
    taps = kernel[0] * kernel[1]
    groups, f = int(num_group), int(num_filter)
    if c % groups or f % groups or weight.shape != (f, c // groups) + kernel:
        raise KilnError(f"DeformableConvolution: weight must be {(f, c // groups) + kernel} "
                        f"for {c} channels in {groups} group(s), got {tuple(weight.shape)}")
    per = (c // groups) * taps
    outs = []
    for g in range(groups):
        wg = knp.reshape(weight[g * (f // groups):(g + 1) * (f // groups)], (f // groups, per))
        outs.append(knp.matmul(wg, cols[:, g * per:(g + 1) * per]))     # (N, F/g, H'W')
    out = knp.reshape(knp.concatenate(outs, axis=1) if groups > 1 else outs[0],
                      (n, f, oh, ow))
    if not no_bias and bias is not None:
        out = out + knp.reshape(bias, (1, f, 1, 1))
    return out


@_op("DeformableConvolution _contrib_DeformableConvolution",
     ("data", "offset", "weight", "bias"))
def DeformableConvolution(data, offset, weight, bias=None, kernel=(), stride=(), dilate=(),
                          pad=(), num_filter=1, num_group=1, num_deformable_group=1,
                          no_bias=False, layout=None, workspace=None, **_):
    return _deformable(data, offset, None, weight, bias, kernel, stride, dilate, pad,
                       num_filter, num_group, num_deformable_group, no_bias)


@_op("ModulatedDeformableConvolution _contrib_ModulatedDeformableConvolution",
     ("data", "offset", "mask", "weight", "bias"))
def ModulatedDeformableConvolution(data, offset, mask, weight, bias=None, kernel=(), stride=(),
                                   dilate=(), pad=(), num_filter=1, num_group=1,
                                   num_deformable_group=1, no_bias=False, layout=None,
                                   workspace=None, im2col_step=None, **_):
    return _deformable(data, offset, mask, weight, bias, kernel, stride, dilate, pad,
                       num_filter, num_group, num_deformable_group, no_bias)
