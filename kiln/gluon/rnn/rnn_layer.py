"""Recurrent layers RNN, LSTM and GRU with MXNet Gluon's signatures and parameter names.

Parameters per layer i and direction ('l' forward, 'r' reverse), as in MXNet:
  {l,r}{i}_i2h_weight (G*H, input)   {l,r}{i}_h2h_weight (G*H, H)
  {l,r}{i}_i2h_bias   (G*H,)         {l,r}{i}_h2h_bias   (G*H,)
with G gates stacked along the first axis (cell_math.py gives the order and formulas).

Mapping to PyTorch's nn.RNN / nn.LSTM / nn.GRU: the gate order is the same in both
(LSTM i, f, g, o; GRU r, z, n, with the reset gate applied to h2h after its bias in both),
so every tensor maps one to one, with no reordering:
  l{i}_i2h_weight = weight_ih_l{i}      r{i}_i2h_weight = weight_ih_l{i}_reverse
  l{i}_h2h_weight = weight_hh_l{i}      r{i}_h2h_weight = weight_hh_l{i}_reverse
  l{i}_i2h_bias   = bias_ih_l{i}        r{i}_i2h_bias   = bias_ih_l{i}_reverse
  l{i}_h2h_bias   = bias_hh_l{i}        r{i}_h2h_bias   = bias_hh_l{i}_reverse
States have PyTorch's shape too: (num_layers * directions, batch, hidden), index
layer * directions + direction; MXNet's layout 'TNC' is PyTorch's batch_first=False.
(tests/gluon/test_gluon_rnn_torch.py checks outputs and gradients against PyTorch.)

Calling a layer with states returns (output, new_states) with states a list ([h], or
[h, c] for LSTM); without, only the output, as in MXNet. Hybridized, each layer direction's
time loop is one `scan` node of the compiled program (time_loop.py).
"""
from ... import np as knp, npx
from ..._core.base import KilnError, where_in_user_code
from ..block import HybridBlock
from ..parameter import Parameter
from ..._core import trace
from . import fused_eager, rnn_cell, time_loop
from .container_cells import BidirectionalCell
from .sequence import zeros_state
from .cell_math import GATES, NUM_STATES, step


class _RNNLayer(HybridBlock):
    def __init__(self, hidden_size, num_layers, layout, dropout, bidirectional, input_size,
                 i2h_weight_initializer, h2h_weight_initializer, i2h_bias_initializer,
                 h2h_bias_initializer, mode, projection_size=None,
                 h2r_weight_initializer=None, dtype="float32",
                 use_sequence_length=False, **kwargs):
        if use_sequence_length:
            raise KilnError(f"{type(self).__name__}: use_sequence_length is not supported by "
                            f"kiln yet{where_in_user_code()}")
        for key in ("lstm_state_clip_min", "lstm_state_clip_max"):
            if kwargs.pop(key, None) is not None:
                raise KilnError(f"{type(self).__name__}: {key} is not supported by kiln yet"
                                f"{where_in_user_code()}")
        kwargs.pop("lstm_state_clip_nan", None)
        super().__init__(**kwargs)
        if layout not in ("TNC", "NTC"):
            raise KilnError(f"{type(self).__name__}: layout must be 'TNC' or 'NTC', got "
                            f"{layout!r}{where_in_user_code()}")
        if not 0 <= dropout <= 1:
            raise KilnError(f"{type(self).__name__}: dropout must be in [0, 1], got "
                            f"{dropout}{where_in_user_code()}")
        self._hidden_size, self._num_layers = int(hidden_size), int(num_layers)
        self._layout, self._dropout, self._mode = layout, dropout, mode
        self._dir = 2 if bidirectional else 1
        self._input_size, self._dtype = int(input_size), dtype
        self._initializers = {"i2h_weight_initializer": i2h_weight_initializer,
                              "h2h_weight_initializer": h2h_weight_initializer,
                              "i2h_bias_initializer": i2h_bias_initializer,
                              "h2h_bias_initializer": h2h_bias_initializer}
        self._gates = GATES[mode]
        # LSTMP: the recurrent state is h projected to projection_size by h2r_weight
        self._projection_size = int(projection_size or 0)
        ng, ni, nh = self._gates, self._input_size, self._hidden_size
        nr = self._projection_size or nh
        for i in range(self._num_layers):
            for j in "lr"[:self._dir]:
                shapes = [("i2h_weight", (ng * nh, ni), i2h_weight_initializer),
                          ("h2h_weight", (ng * nh, nr), h2h_weight_initializer),
                          ("i2h_bias", (ng * nh,), i2h_bias_initializer),
                          ("h2h_bias", (ng * nh,), h2h_bias_initializer)]
                if self._projection_size:
                    shapes.append(("h2r_weight", (nr, nh), h2r_weight_initializer))
                for name, shape, init in shapes:
                    setattr(self, f"{j}{i}_{name}", Parameter(
                        f"{j}{i}_{name}", shape=shape, init=init, dtype=dtype,
                        allow_deferred_init=True))
            ni = nr * self._dir

    def __repr__(self):
        shape = self.l0_i2h_weight.shape
        s = f"{type(self).__name__}({shape[1] or None} -> {shape[0] // self._gates}, " \
            f"{self._layout}"
        if self._num_layers != 1:
            s += f", num_layers={self._num_layers}"
        if self._dropout != 0:
            s += f", dropout={self._dropout}"
        if self._dir == 2:
            s += ", bidirectional"
        return s + ")"

    def _unfuse(self):
        """The layer as MXNet's stack of cells (l{i}_ / r{i}_ cells, dropout between layers)
        sharing this layer's parameters."""
        if self._projection_size:
            raise KilnError(f"{type(self).__name__}._unfuse does not support a projection "
                            f"layer (as in MXNet){where_in_user_code()}")
        mode, hidden = self._mode, self._hidden_size

        def cell(prefix, input_size):
            kw = dict(self._initializers, prefix=prefix, input_size=input_size)
            if mode.startswith("rnn_"):
                made = rnn_cell.RNNCell(hidden, activation=mode[4:], **kw)
            else:
                made = (rnn_cell.LSTMCell if mode == "lstm" else rnn_cell.GRUCell)(hidden, **kw)
            # the layer's own Parameters (a named layer's scope shares them by name already;
            # an unnamed one opens no scope)
            for name in ("i2h_weight", "h2h_weight", "i2h_bias", "h2h_bias"):
                setattr(made, name, getattr(self, prefix + name))
            return made
        stack = rnn_cell.HybridSequentialRNNCell(prefix=self.prefix, params=self.params)
        with stack.name_scope():
            width = self._input_size
            for i in range(self._num_layers):
                if self._dir == 2:
                    stack.add(BidirectionalCell(cell(f"l{i}_", width), cell(f"r{i}_", width)))
                else:
                    stack.add(cell(f"l{i}_", width))
                if self._dropout > 0 and i != self._num_layers - 1:
                    stack.add(rnn_cell.DropoutCell(self._dropout))
                width = hidden * self._dir
        return stack

    def state_info(self, batch_size=0):
        widths = [self._projection_size or self._hidden_size, self._hidden_size]
        return [{"shape": (self._num_layers * self._dir, batch_size, width),
                 "__layout__": "LNC", "dtype": self._dtype}
                for width in widths[:NUM_STATES[self._mode]]]

    def begin_state(self, batch_size=0, func=None, **kwargs):
        """Initial states (zeros unless `func` says otherwise), one array per state."""
        func = knp.zeros if func is None else func
        return [zeros_state(func, info["shape"], info["dtype"], kwargs)
                for info in self.state_info(batch_size)]

    def infer_shape(self, inputs, *args):
        if getattr(inputs, "ndim", 0) == 3:
            for j in "lr"[:self._dir]:
                p = getattr(self, f"{j}0_i2h_weight")
                p.shape = (p.shape[0], inputs.shape[2])

    def _check(self, inputs, states):
        if getattr(inputs, "ndim", None) != 3:
            raise KilnError(f"{type(self).__name__}: expected input of 3 dimensions (layout "
                            f"{self._layout}), got shape {getattr(inputs, 'shape', inputs)}"
                            f"{where_in_user_code()}")
        features = self.l0_i2h_weight.shape[1]
        if inputs.shape[2] != features:
            raise KilnError(f"{type(self).__name__}: expected input with {features} features "
                            f"(layout {self._layout}), got shape {tuple(inputs.shape)}"
                            f"{where_in_user_code()}")
        batch = inputs.shape[self._layout.find("N")]
        infos = self.state_info(batch)
        if len(states) != len(infos):
            raise KilnError(f"{type(self).__name__}: expected {len(infos)} state arrays, got "
                            f"{len(states)}{where_in_user_code()}")
        for state, info in zip(states, infos):
            if tuple(state.shape) != info["shape"]:
                raise KilnError(f"{type(self).__name__}: invalid recurrent state shape; "
                                f"expected {info['shape']}, got {tuple(state.shape)}"
                                f"{where_in_user_code()}")

    def forward(self, inputs, states=None):
        skip_states = states is None
        batch = inputs.shape[self._layout.find("N")] if getattr(inputs, "ndim", 0) == 3 else 0
        if skip_states:
            states = self.begin_state(batch, dtype=inputs.dtype)
        if not isinstance(states, (list, tuple)):
            states = [states]
        states = list(states)
        self._check(inputs, states)
        x = inputs if self._layout == "TNC" else knp.swapaxes(inputs, 0, 1)
        finals = []
        for i in range(self._num_layers):
            outs = []
            for d in range(self._dir):
                k = i * self._dir + d
                y, last = self._direction(x, "lr"[d] + str(i), [s[k] for s in states], d == 1)
                outs.append(y)
                finals.append(last)
            x = outs[0] if self._dir == 1 else knp.concatenate(outs, axis=-1)
            if self._dropout and i < self._num_layers - 1:
                x = npx.dropout(x, p=self._dropout)
        out = x if self._layout == "TNC" else knp.swapaxes(x, 0, 1)
        if skip_states:
            return out
        return out, [knp.stack([f[n] for f in finals]) for n in range(len(states))]

    def _direction(self, x, prefix, states, reverse):
        """One layer in one direction over the whole sequence x (T, N, C)."""
        param = lambda name: getattr(self, prefix + "_" + name).data()   # noqa: E731
        h2h_weight, h2h_bias = param("h2h_weight"), param("h2h_bias")
        # the input projection of every time step at once: one big matmul before the loop
        length, batch, features = x.shape
        xs = npx.fully_connected(knp.reshape(x, (length * batch, features)),
                                 param("i2h_weight"), param("i2h_bias"),
                                 num_hidden=self._gates * self._hidden_size)
        xs = knp.reshape(xs, (length, batch, self._gates * self._hidden_size))
        mode = self._mode
        h2r_weight = param("h2r_weight") if self._projection_size else None
        if trace.current() is None and h2r_weight is None and \
                fused_eager.supported(xs, states, h2h_weight):
            return fused_eager.run(mode, xs, states, h2h_weight, h2h_bias, reverse)
        return time_loop.run(lambda x_t, s: step(mode, x_t, s, h2h_weight, h2h_bias,
                                                 h2r_weight=h2r_weight),
                             xs, states, reverse=reverse)



class RNN(_RNNLayer):
    """Elman RNN, h' = act(x W_i2h^T + b_i2h + h W_h2h^T + b_h2h), act 'relu' or 'tanh'."""

    def __init__(self, hidden_size, num_layers=1, activation="relu", layout="TNC", dropout=0,
                 bidirectional=False, i2h_weight_initializer=None,
                 h2h_weight_initializer=None, i2h_bias_initializer="zeros",
                 h2h_bias_initializer="zeros", input_size=0, dtype="float32", **kwargs):
        if activation not in ("relu", "tanh"):
            raise KilnError(f"RNN: activation must be 'relu' or 'tanh', got {activation!r}"
                            f"{where_in_user_code()}")
        super().__init__(hidden_size, num_layers, layout, dropout, bidirectional, input_size,
                         i2h_weight_initializer, h2h_weight_initializer,
                         i2h_bias_initializer, h2h_bias_initializer, "rnn_" + activation,
                         dtype=dtype, **kwargs)


class LSTM(_RNNLayer):
    """Long short-term memory; states [h, c] (with projection_size, LSTMP: [r, c])."""

    def __init__(self, hidden_size, num_layers=1, layout="TNC", dropout=0,
                 bidirectional=False, input_size=0, i2h_weight_initializer=None,
                 h2h_weight_initializer=None, i2h_bias_initializer="zeros",
                 h2h_bias_initializer="zeros", projection_size=None,
                 h2r_weight_initializer=None, dtype="float32", **kwargs):
        super().__init__(hidden_size, num_layers, layout, dropout, bidirectional, input_size,
                         i2h_weight_initializer, h2h_weight_initializer,
                         i2h_bias_initializer, h2h_bias_initializer, "lstm",
                         projection_size=projection_size,
                         h2r_weight_initializer=h2r_weight_initializer, dtype=dtype,
                         **kwargs)


class GRU(_RNNLayer):
    """Gated recurrent unit (the cuDNN / MXNet / PyTorch variant); states [h]."""

    def __init__(self, hidden_size, num_layers=1, layout="TNC", dropout=0,
                 bidirectional=False, input_size=0, i2h_weight_initializer=None,
                 h2h_weight_initializer=None, i2h_bias_initializer="zeros",
                 h2h_bias_initializer="zeros", dtype="float32", **kwargs):
        super().__init__(hidden_size, num_layers, layout, dropout, bidirectional, input_size,
                         i2h_weight_initializer, h2h_weight_initializer,
                         i2h_bias_initializer, h2h_bias_initializer, "gru", dtype=dtype,
                         **kwargs)
