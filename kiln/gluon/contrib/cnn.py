"""MXNet's gluon.contrib.cnn: DeformableConvolution (v1, Dai et al. 2017) and
ModulatedDeformableConvolution (v2, Zhu et al. 2019), NCHW.

A plain convolution (the offset branch) predicts, per output position and kernel tap, a
shift (dy, dx) of where the tap reads the input (v2 also a mask, 2 * sigmoid). The input is
sampled there bilinearly and the samples are multiplied with the weights, as MXNet's
deformable_im2col does: v1 reads a point only when 0 <= y < H and 0 <= x < W (clamping
reads past the last row/column to it); v2 reads when -1 < y < H and -1 < x < W, treating
pixels outside as 0. Composed of kiln.np ops, so it differentiates (offsets included) and
traces; the sampling gathers K * Ho * Wo points per channel.
"""
import numpy as _np

from ... import np as knp, npx
from ..._core.base import KilnError
from ..block import HybridBlock
from ..nn.activations import Activation
from ..parameter import Parameter


def _pair(value, what):
    out = (int(value),) * 2 if isinstance(value, int) else tuple(int(v) for v in value)
    if len(out) != 2:
        raise KilnError(f"DeformableConvolution: {what} must be an int or 2 ints, got "
                        f"{value!r}")
    return out


def _corner(flat, yc, xc, weight, ok, height, width):
    """weight * input[yc, xc] where `ok`, gathered from flat (N, dg, Cg, H*W)."""
    inside = ok * (yc >= 0) * (yc <= height - 1) * (xc >= 0) * (xc <= width - 1)
    index = (knp.clip(yc, 0, height - 1) * width + knp.clip(xc, 0, width - 1)).astype("int64")
    n, dg, cg = flat.shape[:3]
    index = knp.broadcast_to(knp.expand_dims(index, 2), (n, dg, cg, index.shape[-1]))
    scale = knp.expand_dims(weight * inside, 2)
    return knp.take_along_axis(flat, index, axis=3) * scale


def deformable_columns(x, offset, mask, kernel, stride, pad, dilate, num_deformable_group):
    """The sampled input columns (N, C * kh * kw, Ho * Wo), channel-major as the weight."""
    n, c, height, width = x.shape
    kh, kw = kernel
    taps, dg = kh * kw, num_deformable_group
    ho = (height + 2 * pad[0] - dilate[0] * (kh - 1) - 1) // stride[0] + 1
    wo = (width + 2 * pad[1] - dilate[1] * (kw - 1) - 1) // stride[1] + 1
    if offset.shape != (n, 2 * taps * dg, ho, wo):
        raise KilnError(f"DeformableConvolution: offsets of shape {tuple(offset.shape)}, "
                        f"expected {(n, 2 * taps * dg, ho, wo)}")
    if c % dg:
        raise KilnError(f"DeformableConvolution: {c} channels are not divisible by "
                        f"num_deformable_group={dg}")
    # each tap's unshifted position, (taps, Ho * Wo)
    ty, tx = _np.meshgrid(_np.arange(kh) * dilate[0], _np.arange(kw) * dilate[1],
                          indexing="ij")
    oy, ox = _np.meshgrid(_np.arange(ho) * stride[0] - pad[0],
                          _np.arange(wo) * stride[1] - pad[1], indexing="ij")
    base_y = (ty.reshape(-1, 1) + oy.reshape(1, -1)).astype(_np.float32)
    base_x = (tx.reshape(-1, 1) + ox.reshape(1, -1)).astype(_np.float32)
    off = knp.reshape(offset, (n, dg, taps, 2, ho * wo))
    y = knp.reshape(off[:, :, :, 0] + knp.array(base_y), (n, dg, taps * ho * wo))
    xs = knp.reshape(off[:, :, :, 1] + knp.array(base_x), (n, dg, taps * ho * wo))
    if mask is None:        # v1: inside the image; the last row/column clamps
        ok = (y >= 0) * (xs >= 0) * (y < height) * (xs < width)
        y = knp.where(y >= height - 1, float(height - 1), y)
        xs = knp.where(xs >= width - 1, float(width - 1), xs)
    else:                   # v2: within one pixel of the image; outside pixels are 0
        ok = (y > -1) * (xs > -1) * (y < height) * (xs < width)
    y0, x0 = npx.stop_gradient(knp.floor(y)), npx.stop_gradient(knp.floor(xs))
    ly, lx = y - y0, xs - x0
    y0i, x0i = y0.astype("int64"), x0.astype("int64")
    flat = knp.reshape(x, (n, dg, c // dg, height * width))
    sampled = (_corner(flat, y0i, x0i, (1 - ly) * (1 - lx), ok, height, width)
               + _corner(flat, y0i, x0i + 1, (1 - ly) * lx, ok, height, width)
               + _corner(flat, y0i + 1, x0i, ly * (1 - lx), ok, height, width)
               + _corner(flat, y0i + 1, x0i + 1, ly * lx, ok, height, width))
    if mask is not None:
        sampled = sampled * knp.expand_dims(knp.reshape(mask, (n, dg, taps * ho * wo)), 2)
    return knp.reshape(sampled, (n, c * taps, ho * wo)), (ho, wo)


class DeformableConvolution(HybridBlock):
    """A convolution whose taps read the input at learned offsets (parameters offset_weight,
    offset_bias, deformable_conv_weight, deformable_conv_bias, as MXNet names them)."""
    _modulated = False

    def __init__(self, channels, kernel_size=(1, 1), strides=(1, 1), padding=(0, 0),
                 dilation=(1, 1), groups=1, num_deformable_group=1, layout="NCHW",
                 use_bias=True, in_channels=0, activation=None, weight_initializer=None,
                 bias_initializer="zeros", offset_weight_initializer="zeros",
                 offset_bias_initializer="zeros", offset_use_bias=True, **kwargs):
        kwargs.pop("op_name", None)
        super().__init__(**kwargs)
        if layout != "NCHW":
            raise KilnError(f"{type(self).__name__}: kiln supports layout 'NCHW', got "
                            f"{layout!r}")
        self._kernel = _pair(kernel_size, "kernel_size")
        self._conv = dict(stride=_pair(strides, "strides"), pad=_pair(padding, "padding"),
                          dilate=_pair(dilation, "dilation"))
        self._channels, self._groups, self._dg = channels, groups, num_deformable_group
        taps = self._kernel[0] * self._kernel[1]
        self._offset_channels = (3 if self._modulated else 2) * taps * num_deformable_group
        per_group = in_channels // groups
        self.offset_weight = Parameter(
            "offset_weight", shape=(self._offset_channels, per_group) + self._kernel,
            init=offset_weight_initializer, allow_deferred_init=True)
        self.offset_bias = Parameter("offset_bias", shape=(self._offset_channels,),
                                     init=offset_bias_initializer) if offset_use_bias else None
        self.deformable_conv_weight = Parameter(
            "deformable_conv_weight", shape=(channels, per_group) + self._kernel,
            init=weight_initializer, allow_deferred_init=True)
        self.deformable_conv_bias = Parameter("deformable_conv_bias", shape=(channels,),
                                              init=bias_initializer) if use_bias else None
        self.act = Activation(activation) if activation else None

    def infer_shape(self, x, *args):
        per_group = x.shape[1] // self._groups
        self.offset_weight.shape = (self._offset_channels, per_group) + self._kernel
        self.deformable_conv_weight.shape = (self._channels, per_group) + self._kernel

    def forward(self, x):
        if x.ndim != 4:
            raise KilnError(f"{type(self).__name__}: expected an NCHW input, got shape "
                            f"{tuple(x.shape)}")
        ob = self.offset_bias.data() if self.offset_bias is not None else None
        offset = npx.convolution(x, self.offset_weight.data(), ob, kernel=self._kernel,
                                 num_filter=self._offset_channels, num_group=self._groups,
                                 no_bias=ob is None, **self._conv)
        mask = None
        if self._modulated:
            split = 2 * self._kernel[0] * self._kernel[1] * self._dg
            offset, mask = offset[:, :split], npx.sigmoid(offset[:, split:]) * 2
        cols, (ho, wo) = deformable_columns(x, offset, mask, self._kernel, self._conv["stride"],
                                            self._conv["pad"], self._conv["dilate"], self._dg)
        n, g = x.shape[0], self._groups
        w = knp.reshape(self.deformable_conv_weight.data(), (1, g, self._channels // g, -1))
        out = knp.matmul(w, knp.reshape(cols, (n, g, -1, ho * wo)))
        out = knp.reshape(out, (n, self._channels, ho, wo))
        if self.deformable_conv_bias is not None:
            out = out + knp.reshape(self.deformable_conv_bias.data(), (1, -1, 1, 1))
        return self.act(out) if self.act is not None else out


class ModulatedDeformableConvolution(DeformableConvolution):
    """Deformable convolution v2: the offset branch also predicts a mask per tap."""
    _modulated = True
