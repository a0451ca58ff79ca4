"""MXNet's deformable convolutions (`nd.contrib.DeformableConvolution`, v1, and
`ModulatedDeformableConvolution`, v2 with a mask): each kernel tap reads the input at its
regular position plus a learned offset, bilinearly (mxnet_ops_stn.bilinear), with MXNet's
border rule of each version, and the sampled columns meet the weights in one matmul per
group.

Offsets are laid out as MXNet's: (N, deformable_groups * 2 * kh * kw, H', W'), (dy, dx) per
tap in row-major kernel order; the mask (v2) is (N, deformable_groups * kh * kw, H', W').
Composed of registry ops, so gradients reach the data, the offsets, the mask and the weights.
"""
from . import np as knp
from .base import KilnError
from .mxnet_ops import _op
from .mxnet_ops_stn import bilinear


def _pair(v, default):
    v = default if v is None or v == () else v
    return (int(v),) * 2 if isinstance(v, int) else tuple(int(x) for x in v)


def _columns(data, offset, mask, kernel, stride, dilate, pad, groups):
    """(N, C, taps, H', W'): the sampled input of every tap."""
    n, c, h, w = data.shape
    (kh, kw), taps = kernel, kernel[0] * kernel[1]
    oh, ow = offset.shape[2:]
    if offset.shape[1] != groups * 2 * taps:
        raise KilnError(f"DeformableConvolution: offset needs {groups * 2 * taps} channels "
                        f"(2 per tap per deformable group), got {offset.shape[1]}")
    if c % groups:
        raise KilnError(f"DeformableConvolution: {c} channels do not split into "
                        f"{groups} deformable groups")
    base_y = knp.reshape(knp.arange(oh, dtype=data.dtype) * stride[0] - pad[0], (1, oh, 1))
    base_x = knp.reshape(knp.arange(ow, dtype=data.dtype) * stride[1] - pad[1], (1, 1, ow))
    per_group = c // groups
    cols = []
    for g in range(groups):
        part = data[:, g * per_group:(g + 1) * per_group]
        taps_g = []
        for t in range(taps):
            i, j = divmod(t, kw)
            k = g * taps + t
            y = base_y + i * dilate[0] + offset[:, 2 * k]
            x = base_x + j * dilate[1] + offset[:, 2 * k + 1]
            if mask is None:
                # v1 (MXNet's deformable_im2col): a tap reads only inside [0, H) x [0, W),
                # and within the last pixel it takes that pixel's value
                inside = ((y >= 0) & (x >= 0) & (y < h) & (x < w)).astype(data.dtype)
                sampled = bilinear(part, knp.minimum(y, h - 1), knp.minimum(x, w - 1))
                sampled = sampled * knp.expand_dims(inside, 1)
            else:
                # v2: each of the four corners outside the image counts zero
                sampled = bilinear(part, y, x) * knp.expand_dims(mask[:, k], 1)
            taps_g.append(sampled)
        cols.append(knp.stack(taps_g, axis=2))                   # (N, C/g, taps, H', W')
    return knp.concatenate(cols, axis=1) if groups > 1 else cols[0]


def _deformable(data, offset, mask, weight, bias, kernel, stride, dilate, pad, num_filter,
                num_group, num_deformable_group, no_bias):
    kernel = _pair(kernel, None)
    stride, dilate, pad = _pair(stride, 1), _pair(dilate, 1), _pair(pad, 0)
    cols = _columns(data, offset, mask, kernel, stride, dilate, pad, int(num_deformable_group))
    n, c, taps, oh, ow = cols.shape
    groups, f = int(num_group), int(num_filter)
    if c % groups or f % groups or weight.shape != (f, c // groups) + kernel:
        raise KilnError(f"DeformableConvolution: weight must be {(f, c // groups) + kernel} "
                        f"for {c} channels in {groups} group(s), got {tuple(weight.shape)}")
    per = c // groups
    outs = []
    for g in range(groups):
        col = knp.reshape(cols[:, g * per:(g + 1) * per], (n, per * taps, oh * ow))
        wg = knp.reshape(weight[g * (f // groups):(g + 1) * (f // groups)], (f // groups, -1))
        outs.append(knp.matmul(wg, col))                         # (N, F/g, H'W')
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
