"""MXNet's convolutional recurrent cells (gluon.contrib.rnn): Conv{1,2,3}D{RNN,LSTM,GRU}Cell.

The gates come from a convolution of the input (i2h: its kernel, padding, dilation) plus a
convolution of the hidden state (h2h: an odd kernel, padded to keep the state's size), as
MXNet's cells compute them; LSTM gates i, f, c, o and GRU gates r, z, n as in
gluon.rnn. `input_shape` is one sample's (C, spatial...), as in MXNet; channels-first
layouts (NCW, NCHW, NCDHW) only.
"""
from ... import np as knp, npx
from ..._core.base import KilnError
from ..parameter import Parameter
from ..rnn.cell_math import activation_fn
from ..rnn.rnn_cell import HybridRecurrentCell

_LAYOUTS = {1: "NCW", 2: "NCHW", 3: "NCDHW"}


def _tuple(value, dims, what):
    out = (int(value),) * dims if isinstance(value, int) else tuple(int(v) for v in value)
    if len(out) != dims:
        raise KilnError(f"convolutional RNN cell: {what} must be an int or {dims} ints, got "
                        f"{value!r}")
    return out


class _ConvRNNBase(HybridRecurrentCell):
    gates = 1          # gate blocks stacked in the convolutions' output channels
    states = 1

    def __init__(self, input_shape, hidden_channels, i2h_kernel, h2h_kernel, i2h_pad=0,
                 i2h_dilate=1, h2h_dilate=1, i2h_weight_initializer=None,
                 h2h_weight_initializer=None, i2h_bias_initializer="zeros",
                 h2h_bias_initializer="zeros", conv_layout=None, activation="tanh",
                 **kwargs):
        super().__init__(**kwargs)
        dims = self.dims
        if conv_layout not in (None, _LAYOUTS[dims]):
            raise KilnError(f"{type(self).__name__}: kiln supports the {_LAYOUTS[dims]} "
                            f"layout, got {conv_layout!r}")
        self._i2h = dict(kernel=_tuple(i2h_kernel, dims, "i2h_kernel"),
                         pad=_tuple(i2h_pad, dims, "i2h_pad"),
                         dilate=_tuple(i2h_dilate, dims, "i2h_dilate"))
        h2h_kernel = _tuple(h2h_kernel, dims, "h2h_kernel")
        if any(k % 2 == 0 for k in h2h_kernel):
            raise KilnError(f"{type(self).__name__}: h2h_kernel must be odd, got {h2h_kernel}")
        h2h_dilate = _tuple(h2h_dilate, dims, "h2h_dilate")
        self._h2h = dict(kernel=h2h_kernel, dilate=h2h_dilate,
                         pad=tuple(d * (k - 1) // 2 for d, k in zip(h2h_dilate, h2h_kernel)))
        self._hidden, self._activation = hidden_channels, activation_fn(
            activation, type(self).__name__)
        in_channels, spatial = input_shape[0], tuple(input_shape[1:])
        self._state_shape = (hidden_channels,) + tuple(
            x + 2 * p - d * (k - 1) if x else 0 for x, k, p, d in
            zip(spatial, self._i2h["kernel"], self._i2h["pad"], self._i2h["dilate"]))
        rows = hidden_channels * self.gates
        for name, shape, init in (
                ("i2h_weight", (rows, in_channels) + self._i2h["kernel"],
                 i2h_weight_initializer),
                ("h2h_weight", (rows, hidden_channels) + h2h_kernel, h2h_weight_initializer),
                ("i2h_bias", (rows,), i2h_bias_initializer),
                ("h2h_bias", (rows,), h2h_bias_initializer)):
            setattr(self, name, Parameter(name, shape=shape, init=init,
                                          allow_deferred_init=True))

    def state_info(self, batch_size=0):
        return [{"shape": (batch_size,) + self._state_shape,
                 "__layout__": _LAYOUTS[self.dims]} for _ in range(self.states)]

    def _convolutions(self, inputs, state):
        rows = self._hidden * self.gates
        i2h = npx.convolution(inputs, self.i2h_weight.data(), self.i2h_bias.data(),
                              num_filter=rows, stride=(1,) * self.dims, **self._i2h)
        h2h = npx.convolution(state, self.h2h_weight.data(), self.h2h_bias.data(),
                              num_filter=rows, stride=(1,) * self.dims, **self._h2h)
        return i2h, h2h

    def __repr__(self):
        return f"{type(self).__name__}({self.i2h_weight.shape[1]} -> {self.i2h_weight.shape[0]})"


class _ConvRNN(_ConvRNNBase):
    def forward(self, inputs, states):
        i2h, h2h = self._convolutions(inputs, states[0])
        out = self._activation(i2h + h2h)
        return out, [out]


class _ConvLSTM(_ConvRNNBase):
    gates, states = 4, 2

    def forward(self, inputs, states):
        i2h, h2h = self._convolutions(inputs, states[0])
        i, f, c, o = knp.split(i2h + h2h, 4, axis=1)
        next_c = npx.sigmoid(f) * states[1] + npx.sigmoid(i) * self._activation(c)
        next_h = npx.sigmoid(o) * self._activation(next_c)
        return next_h, [next_h, next_c]


class _ConvGRU(_ConvRNNBase):
    gates = 3

    def forward(self, inputs, states):
        i2h, h2h = self._convolutions(inputs, states[0])
        i2h_r, i2h_z, i2h_n = knp.split(i2h, 3, axis=1)
        h2h_r, h2h_z, h2h_n = knp.split(h2h, 3, axis=1)
        reset = npx.sigmoid(i2h_r + h2h_r)
        update = npx.sigmoid(i2h_z + h2h_z)
        candidate = self._activation(i2h_n + reset * h2h_n)
        out = (1.0 - update) * candidate + update * states[0]
        return out, [out]


def _cell(base, dims):
    return type(f"Conv{dims}D{base.__name__[5:]}Cell", (base,), {
        "dims": dims, "__doc__": f"{dims}-d convolutional {base.__name__[5:]} cell "
                                 f"({_LAYOUTS[dims]}).", "__module__": __name__})


Conv1DRNNCell, Conv2DRNNCell, Conv3DRNNCell = (_cell(_ConvRNN, d) for d in (1, 2, 3))
Conv1DLSTMCell, Conv2DLSTMCell, Conv3DLSTMCell = (_cell(_ConvLSTM, d) for d in (1, 2, 3))
Conv1DGRUCell, Conv2DGRUCell, Conv3DGRUCell = (_cell(_ConvGRU, d) for d in (1, 2, 3))
