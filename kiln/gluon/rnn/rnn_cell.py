"""Recurrent cells (one step at a time) with MXNet Gluon's API: RNNCell, LSTMCell, GRUCell,
SequentialRNNCell and DropoutCell; `unroll` runs a cell over a sequence with a Python loop
(as MXNet does; the layers in rnn_layer.py compile their time loop instead). The step math
is cell_math.step, the same function the layers use, so a cell unrolled with a layer's
weights gives the layer's result."""
from ... import np as knp, npx
from ..block import Block, HybridBlock
from ..parameter import Parameter
from . import sequence
from .cell_math import activation_fn, step
from .sequence import zeros_state


class _CellMixin:
    """What every cell has: state_info, begin_state, reset and unroll."""
    _modified = False

    def reset(self):
        self._init_counter, self._counter = -1, -1
        for cell in self._children.values():
            if hasattr(cell, "reset"):
                cell.reset()

    def state_info(self, batch_size=0):
        raise NotImplementedError(f"{type(self).__name__} must define state_info")

    def begin_state(self, batch_size=0, func=None, **kwargs):
        """Initial states: func(shape=..., **kwargs) per state (np.zeros by default)."""
        if self._modified:
            raise RuntimeError(f"{type(self).__name__}: after applying a modifier cell, call "
                               f"begin_state on the modifier cell instead")
        func = knp.zeros if func is None else func
        return [zeros_state(func, info["shape"], info.get("dtype", "float32"), kwargs)
                for info in self.state_info(batch_size)]

    def unroll(self, length, inputs, begin_state=None, layout="NTC", merge_outputs=None,
               valid_length=None):
        """Run the cell for `length` steps; returns (outputs, final states)."""
        self.reset()
        seq = sequence.ops_for(inputs)
        steps, axis, batch = seq.as_steps(length, inputs, layout)
        states = seq.begin_state(self, begin_state, batch, steps[0])
        outputs, history = [], []
        for x in steps:
            out, states = self(x, states)
            outputs.append(out)
            if valid_length is not None:
                history.append(states)
        if valid_length is not None:
            states = [seq.last_valid(list(per), valid_length) for per in zip(*history)]
            outputs = seq.mask(outputs, valid_length, axis, False)
        return seq.merge(outputs, axis, merge_outputs, valid_length is not None), states

    def forward(self, inputs, states):
        raise NotImplementedError(f"{type(self).__name__} must define forward")


class RecurrentCell(_CellMixin, Block):
    """The base class of recurrent cells: one time step (`cell(x, states)` gives the output and the
    new states), `begin_state`, and `unroll` over a sequence."""
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.reset()


class HybridRecurrentCell(_CellMixin, HybridBlock):
    """The base class of hybridizable recurrent cells (RNNCell, LSTMCell, GRUCell, ...); see
    RecurrentCell."""
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.reset()


class _GatedCell(HybridRecurrentCell):
    """A cell with MXNet's four parameters i2h_weight, h2h_weight, i2h_bias, h2h_bias."""
    _mode = None

    def __init__(self, hidden_size, i2h_weight_initializer=None, h2h_weight_initializer=None,
                 i2h_bias_initializer="zeros", h2h_bias_initializer="zeros", input_size=0,
                 dtype="float32", **kwargs):
        super().__init__(**kwargs)
        from .cell_math import GATES
        self._hidden_size, self._input_size, self._dtype = hidden_size, input_size, dtype
        rows = GATES[self._mode] * hidden_size
        for name, shape, init in (("i2h_weight", (rows, input_size), i2h_weight_initializer),
                                  ("h2h_weight", (rows, hidden_size), h2h_weight_initializer),
                                  ("i2h_bias", (rows,), i2h_bias_initializer),
                                  ("h2h_bias", (rows,), h2h_bias_initializer)):
            setattr(self, name, Parameter(name, shape=shape, init=init, dtype=dtype,
                                          allow_deferred_init=True))

    def infer_shape(self, inputs, *args):
        self.i2h_weight.shape = (self.i2h_weight.shape[0], inputs.shape[-1])

    def state_info(self, batch_size=0):
        from .cell_math import NUM_STATES
        return [{"shape": (batch_size, self._hidden_size), "__layout__": "NC",
                 "dtype": self._dtype} for _ in range(NUM_STATES[self._mode])]

    def _activations(self):
        return None, None

    def forward(self, inputs, states):
        if not isinstance(states, (list, tuple)):
            states = [states]
        i2h = npx.fully_connected(inputs, self.i2h_weight.data(), self.i2h_bias.data(),
                                  num_hidden=self.i2h_weight.shape[0])
        act, recurrent = self._activations()
        return step(self._mode, i2h, list(states), self.h2h_weight.data(),
                    self.h2h_bias.data(), act, recurrent)

    def __repr__(self):
        shape = self.i2h_weight.shape
        return f"{type(self).__name__}({shape[1] or None} -> {self._hidden_size})"


class RNNCell(_GatedCell):
    """Elman cell: h' = activation(x W_i2h^T + b_i2h + h W_h2h^T + b_h2h)."""
    _mx_alias = "rnn"          # MXNet 1.x's name hint (gluon/naming.py)
    _mode = "rnn_tanh"

    def __init__(self, hidden_size, activation="tanh", i2h_weight_initializer=None,
                 h2h_weight_initializer=None, i2h_bias_initializer="zeros",
                 h2h_bias_initializer="zeros", input_size=0, dtype="float32", **kwargs):
        super().__init__(hidden_size, i2h_weight_initializer, h2h_weight_initializer,
                         i2h_bias_initializer, h2h_bias_initializer, input_size, dtype,
                         **kwargs)
        self._activation = activation_fn(activation, "RNNCell")

    def _activations(self):
        return self._activation, None


class _GateActivationsCell(_GatedCell):
    """LSTM and GRU cells: an activation and a recurrent (gate) activation, as MXNet's."""

    def __init__(self, hidden_size, i2h_weight_initializer=None, h2h_weight_initializer=None,
                 i2h_bias_initializer="zeros", h2h_bias_initializer="zeros", input_size=0,
                 activation="tanh", recurrent_activation="sigmoid", dtype="float32",
                 **kwargs):
        super().__init__(hidden_size, i2h_weight_initializer, h2h_weight_initializer,
                         i2h_bias_initializer, h2h_bias_initializer, input_size, dtype,
                         **kwargs)
        name = type(self).__name__
        self._acts = (activation_fn(activation, name),
                      activation_fn(recurrent_activation, name))

    def _activations(self):
        return self._acts


class LSTMCell(_GateActivationsCell):
    """LSTM cell; states [h, c]; gates i, f, g, o (cell_math.py)."""
    _mx_alias = "lstm"          # MXNet 1.x's name hint (gluon/naming.py)
    _mode = "lstm"


class GRUCell(_GateActivationsCell):
    """GRU cell (cuDNN / MXNet / PyTorch variant); gates r, z, n (cell_math.py)."""
    _mx_alias = "gru"          # MXNet 1.x's name hint (gluon/naming.py)
    _mode = "gru"


class _SequentialMixin:
    """Cells stacked: each one's output is the next one's input; states concatenated."""

    def add(self, cell):
        self.register_child(cell)

    def __getitem__(self, i):
        return list(self._children.values())[i]

    def __len__(self):
        return len(self._children)

    def state_info(self, batch_size=0):
        return [info for c in self._children.values() for info in c.state_info(batch_size)]

    def begin_state(self, **kwargs):
        if self._modified:
            raise RuntimeError(f"{type(self).__name__}: after applying a modifier cell, call "
                               f"begin_state on the modifier cell instead")
        return [s for c in self._children.values() for s in c.begin_state(**kwargs)]

    def _split(self, states):
        p = 0
        for cell in self._children.values():
            n = len(cell.state_info())
            yield cell, list(states[p:p + n])
            p += n

    def forward(self, inputs, states):
        new = []
        for cell, state in self._split(states):
            inputs, state = cell(inputs, state)     # a BidirectionalCell raises: it only unrolls
            new += list(state)
        return inputs, new

    def unroll(self, length, inputs, begin_state=None, layout="NTC", merge_outputs=None,
               valid_length=None):
        self.reset()
        seq = sequence.ops_for(inputs)
        steps, _, batch = seq.as_steps(length, inputs, layout)
        states = seq.begin_state(self, begin_state, batch, steps[0])
        new, n = [], len(self._children)
        x = steps
        for k, (cell, state) in enumerate(self._split(states)):
            x, state = cell.unroll(length, x, begin_state=state, layout=layout,
                                   merge_outputs=None if k < n - 1 else merge_outputs,
                                   valid_length=valid_length)
            new += list(state)
        return x, new


class SequentialRNNCell(_SequentialMixin, RecurrentCell):
    """A stack of recurrent cells run one after another at each time step, their states
    concatenated in order."""
    pass


class HybridSequentialRNNCell(_SequentialMixin, HybridRecurrentCell):
    """A hybridizable stack of recurrent cells run one after another at each time step."""
    pass


class DropoutCell(HybridRecurrentCell):
    """Dropout on the inputs (training only); no states."""
    _mx_alias = "dropout"          # MXNet 1.x's name hint (gluon/naming.py)

    def __init__(self, rate, axes=(), **kwargs):
        super().__init__(**kwargs)
        self._rate, self._axes = rate, tuple(axes)

    def state_info(self, batch_size=0):
        return []

    def forward(self, inputs, states):
        if self._rate > 0:
            inputs = npx.dropout(inputs, p=self._rate, axes=self._axes)
        return inputs, states

    def unroll(self, length, inputs, begin_state=None, layout="NTC", merge_outputs=None,
               valid_length=None):
        self.reset()
        if not isinstance(inputs, (list, tuple)) and merge_outputs is not False:
            # one step over the whole sequence; on Symbols through the symbol-call hook
            run = self.forward if sequence.ops_for(inputs) is sequence else self
            return run(inputs, list(begin_state or []))
        return super().unroll(length, inputs, begin_state, layout, merge_outputs, None)

    def __repr__(self):
        return f"DropoutCell(rate={self._rate}, axes={self._axes})"
