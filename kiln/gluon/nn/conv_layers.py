"""Convolution, transposed convolution, pooling and padding layers.

The kernels are channels-first (NCW, NCHW, NCDHW). A channels-last layer (NHWC, ...: MXNet
takes them for 2-D/3-D convolutions and all poolings) transposes its input to channels-first,
runs the same op and transposes the result back; its weight keeps MXNet's channels-last
shape: (channels, *kernel, in_channels) for a convolution, (in_channels, *kernel,
channels) for a transposed one.
"""
import numpy as _np

from ... import np as knp, npx
from ...npx.nn import convolution_relu
from ..._core.base import KilnError, where_in_user_code
from ..block import HybridBlock
from ..parameter import Parameter
from .activations import Activation
from .inputs import expect_batch, expect_dtype

_LAYOUTS = {1: "NCW", 2: "NCHW", 3: "NCDHW"}


def _tuple(value, n, what):
    if isinstance(value, (list, tuple)):
        value = tuple(int(v) for v in value)
        if len(value) != n:
            raise KilnError(f"{what}: expected {n} values, got {value}{where_in_user_code()}")
        return value
    return (int(value),) * n


_CHANNELS_LAST = {1: "NWC", 2: "NHWC", 3: "NDHWC"}


def _check_layout(layout, n, cls, channels_last=True):
    expected = _LAYOUTS[n]
    if layout is None:
        return expected
    if layout != expected and not (channels_last and layout == _CHANNELS_LAST[n]):
        other = f" or {_CHANNELS_LAST[n]!r}" if channels_last else ""
        raise KilnError(f"{cls}: layout {layout!r} is not supported; expected {expected!r}"
                        f"{other}{where_in_user_code()}")
    return layout


def _last(layout):
    return layout.endswith("C")


def _to_channels_first(x, layout):
    if not _last(layout):
        return x
    return knp.transpose(x, (0, x.ndim - 1) + tuple(range(1, x.ndim - 1)))


def _to_channels_last(y, layout):
    if not _last(layout):
        return y
    return knp.transpose(y, (0,) + tuple(range(2, y.ndim)) + (1,))


def _check_input(block, x, nsp, channels=None, layout=None):
    layout = layout or _LAYOUTS[nsp]
    axes = [str(channels or "channels") if c == "C" else c for c in layout[1:]]
    expect_batch(block, x, f"(batch, {', '.join(axes)}) ({layout})")
    if x.ndim != nsp + 2:
        raise KilnError(f"{block.name} ({type(block).__name__}): expected input of "
                        f"{nsp + 2} dimensions ({layout}), got shape {tuple(x.shape)}"
                        f"{where_in_user_code()}")


def _plain_relu(act):
    """Is act a ReLU activation block that nothing hooks into (so the convolution may
    apply it)?"""
    return (type(act) is Activation and act._act_type == "relu" and not act._forward_hooks
            and not act._forward_pre_hooks and not act._hybrid_active)


class _Conv(HybridBlock):
    _mx_alias = "conv"          # MXNet 1.x's name hint (gluon/naming.py)
    _nsp = 2
    _transposed = False

    def __init__(self, channels, kernel_size, strides=1, padding=0, dilation=1, groups=1,
                 layout=None, activation=None, use_bias=True, weight_initializer=None,
                 bias_initializer="zeros", in_channels=0, output_padding=0, **kwargs):
        super().__init__(**kwargs)
        n, cls = self._nsp, type(self).__name__
        self._layout = _check_layout(layout, n, cls, channels_last=n > 1)  # as MXNet
        self._channels, self._in_channels, self._groups = channels, in_channels, groups
        self._kernel = _tuple(kernel_size, n, f"{cls} kernel_size")
        self._strides = _tuple(strides, n, f"{cls} strides")
        self._padding = _tuple(padding, n, f"{cls} padding")
        self._dilation = _tuple(dilation, n, f"{cls} dilation")
        self._output_padding = _tuple(output_padding, n, f"{cls} output_padding")
        if channels % groups or (in_channels and in_channels % groups):
            raise KilnError(f"{cls}: channels ({channels}) and in_channels ({in_channels}) "
                            f"must be divisible by groups ({groups}){where_in_user_code()}")
        self.weight = Parameter("weight", shape=self._weight_shape(in_channels),
                                init=weight_initializer, allow_deferred_init=True)
        self.bias = Parameter("bias", shape=(channels,), init=bias_initializer) \
            if use_bias else None
        self.act = Activation(activation) if activation is not None else None

    def _weight_shape(self, in_channels):
        if self._transposed:
            outer, inner = in_channels, self._channels // self._groups
        else:
            outer, inner = self._channels, in_channels // self._groups
        if _last(self._layout):
            return (outer,) + self._kernel + (inner,)
        return (outer, inner) + self._kernel

    def _expected_channels(self):
        shape = self.weight.shape
        inner = shape[-1] if _last(self._layout) else shape[1]
        return shape[0] if self._transposed else inner * self._groups

    def infer_shape(self, x, *args):
        _check_input(self, x, self._nsp, layout=self._layout)
        self.weight.shape = self._weight_shape(x.shape[-1 if _last(self._layout) else 1])

    def forward(self, x):
        _check_input(self, x, self._nsp, self._expected_channels(), self._layout)
        expect_dtype(self, x, self.weight, exact=True)
        expected = self._expected_channels()
        if x.shape[-1 if _last(self._layout) else 1] != expected:
            raise KilnError(f"{self.name} ({type(self).__name__}): expected input with "
                            f"{expected} channels, got input of shape {tuple(x.shape)}"
                            f"{where_in_user_code()}")
        w = _to_channels_first(self.weight.data(), self._layout)
        x = _to_channels_first(x, self._layout)
        return _to_channels_last(self._channels_first(x, w), self._layout)

    def _channels_first(self, x, w):
        b = self.bias.data() if self.bias is not None else None
        common = dict(kernel=self._kernel, stride=self._strides, dilate=self._dilation,
                      pad=self._padding, num_filter=self._channels, num_group=self._groups,
                      no_bias=b is None)
        if self._transposed:
            y = npx.deconvolution(x, w, b, adj=self._output_padding, **common)
        else:
            if _plain_relu(self.act):
                y = convolution_relu(x, w, b, **common)
                if y is not None:
                    return y
            y = npx.convolution(x, w, b, **common)
        return self.act(y) if self.act is not None else y

    def __repr__(self):
        in_ch = self._expected_channels()
        text = (f"{type(self).__name__}({in_ch} -> {self._channels}, "
                f"kernel_size={self._kernel}, stride={self._strides}")
        if any(self._padding):
            text += f", padding={self._padding}"
        if any(d != 1 for d in self._dilation):
            text += f", dilation={self._dilation}"
        if self._groups != 1:
            text += f", groups={self._groups}"
        if self.bias is None:
            text += ", bias=False"
        if self.act is not None:
            text += f", {self.act!r}"
        return text + ")"


class Conv1D(_Conv):
    """1-D convolution over (N, C, W) input: `channels` filters of `kernel_size`, with `strides`,
    `padding`, `dilation`, `groups`, an optional bias and activation."""
    _nsp = 1


class Conv2D(_Conv):
    """2-D convolution over (N, C, H, W) input: `channels` filters of `kernel_size`, with
    `strides`, `padding`, `dilation`, `groups`, an optional bias and activation."""
    _nsp = 2


class Conv3D(_Conv):
    """3-D convolution over (N, C, D, H, W) input: `channels` filters of `kernel_size`, with
    `strides`, `padding`, `dilation`, `groups`, an optional bias and activation."""
    _nsp = 3


class Conv1DTranspose(_Conv):
    """1-D transposed convolution (the gradient of Conv1D with respect to its input), with
    `output_padding`."""
    _nsp, _transposed = 1, True


class Conv2DTranspose(_Conv):
    """2-D transposed convolution (the gradient of Conv2D with respect to its input), with
    `output_padding`."""
    _nsp, _transposed = 2, True


class Conv3DTranspose(_Conv):
    """3-D transposed convolution (the gradient of Conv3D with respect to its input), with
    `output_padding`."""
    _nsp, _transposed = 3, True


# ---- pooling ---------------------------------------------------------------------------------
class _Pool(HybridBlock):
    _mx_alias = "pool"          # MXNet 1.x's name hint (gluon/naming.py)
    _nsp = 2
    _pool_type = "max"
    _global = False

    def __init__(self, pool_size=2, strides=None, padding=0, layout=None, ceil_mode=False,
                 count_include_pad=True, **kwargs):
        super().__init__(**kwargs)
        n, cls = self._nsp, type(self).__name__
        self._layout = _check_layout(layout, n, cls)
        self._kernel = _tuple(pool_size, n, f"{cls} pool_size")
        self._strides = self._kernel if strides is None else _tuple(strides, n,
                                                                     f"{cls} strides")
        self._padding = _tuple(padding, n, f"{cls} padding")
        self._ceil_mode = ceil_mode
        self._count_include_pad = count_include_pad

    def forward(self, x):
        _check_input(self, x, self._nsp, layout=self._layout)
        y = npx.pooling(_to_channels_first(x, self._layout), kernel=self._kernel,
                        pool_type=self._pool_type, stride=self._strides, pad=self._padding,
                        global_pool=self._global,
                        pooling_convention="full" if self._ceil_mode else "valid",
                        count_include_pad=self._count_include_pad)
        return _to_channels_last(y, self._layout)

    def __repr__(self):
        if self._global:
            return f"{type(self).__name__}(layout={self._layout})"
        return (f"{type(self).__name__}(size={self._kernel}, stride={self._strides}, "
                f"padding={self._padding}, ceil_mode={self._ceil_mode}, "
                f"global_pool=False, pool_type={self._pool_type}, layout={self._layout})")


class _GlobalPool(_Pool):
    _global = True

    def __init__(self, layout=None, **kwargs):
        super().__init__(pool_size=1, layout=layout, **kwargs)


def _pool_class(name, nsp, pool_type, base):
    return type(name, (base,), {"_nsp": nsp, "_pool_type": pool_type,
                                "__module__": __name__,
                                "__doc__": f"{pool_type} pooling over {nsp} spatial dims."})


MaxPool1D = _pool_class("MaxPool1D", 1, "max", _Pool)
MaxPool2D = _pool_class("MaxPool2D", 2, "max", _Pool)
MaxPool3D = _pool_class("MaxPool3D", 3, "max", _Pool)
AvgPool1D = _pool_class("AvgPool1D", 1, "avg", _Pool)
AvgPool2D = _pool_class("AvgPool2D", 2, "avg", _Pool)
AvgPool3D = _pool_class("AvgPool3D", 3, "avg", _Pool)
GlobalMaxPool1D = _pool_class("GlobalMaxPool1D", 1, "max", _GlobalPool)
GlobalMaxPool2D = _pool_class("GlobalMaxPool2D", 2, "max", _GlobalPool)
GlobalMaxPool3D = _pool_class("GlobalMaxPool3D", 3, "max", _GlobalPool)
GlobalAvgPool1D = _pool_class("GlobalAvgPool1D", 1, "avg", _GlobalPool)
GlobalAvgPool2D = _pool_class("GlobalAvgPool2D", 2, "avg", _GlobalPool)
GlobalAvgPool3D = _pool_class("GlobalAvgPool3D", 3, "avg", _GlobalPool)


# ---- padding -------------------------------------------------------------------------------

def _reflect_index(n, before, after):
    """Indices into an axis of length n that pad it by reflection (without the edge)."""
    if before >= n or after >= n:
        raise KilnError(f"ReflectionPad2D: padding ({before}, {after}) must be smaller than "
                        f"the padded axis (length {n})")
    return _np.pad(_np.arange(n), (before, after), mode="reflect")


class ReflectionPad2D(HybridBlock):
    """Pads the last two axes of an NCHW input by reflection.

    `padding`: an int (all four sides) or MXNet's 8-tuple of (before, after) per axis, of
    which only the last two axes may be nonzero."""

    def __init__(self, padding=0, **kwargs):
        super().__init__(**kwargs)
        if isinstance(padding, (int, _np.integer)):
            padding = (0, 0, 0, 0) + (int(padding),) * 4
        padding = tuple(int(p) for p in padding)
        if len(padding) != 8 or any(padding[:4]) or min(padding) < 0:
            raise KilnError(f"ReflectionPad2D: padding must be an int or 8 non-negative "
                            f"ints with the first four zero, got {padding}")
        self._padding = padding

    def forward(self, x):
        if x.ndim != 4:
            raise KilnError(f"ReflectionPad2D: expected a 4-d NCHW input, got shape {x.shape}")
        top, bottom, left, right = self._padding[4:]
        rows = _reflect_index(x.shape[2], top, bottom)
        cols = _reflect_index(x.shape[3], left, right)
        x = knp.take(x, knp.array(rows), axis=2)
        return knp.take(x, knp.array(cols), axis=3)

    def __repr__(self):
        return f"ReflectionPad2D(padding={self._padding})"
