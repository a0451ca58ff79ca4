"""MXNet 1.x's symbolic RNN cells (`mx.rnn.LSTMCell`, `SequentialRNNCell`, ...): each step
adds MXNet's nodes to a Symbol, named as MXNet names them (`lstm_t0_i2h`, `lstm_t0_out`),
with the weights as variables `<prefix>i2h_weight`, ... shared by every step.

A default begin state is zeros of the step's (batch, hidden) shape, taken from the step's
own input projection (MXNet writes zeros of shape (0, hidden) and lets shape inference fill
the batch in; kiln's inference runs forward, so the zeros follow the data instead).
"""
from ..._core.base import KilnError, where_in_user_code
from ... import init as kinit
from ..sym.symbol import Symbol, call_op, var


class RNNParams:
    """The variables of a cell, by name with the cell's prefix (shared between cells)."""

    def __init__(self, prefix=""):
        self._prefix = prefix
        self._params = {}

    def get(self, name, **kwargs):
        name = self._prefix + name
        if name not in self._params:
            self._params[name] = var(name, **kwargs)
        return self._params[name]


class _ZeroState:
    """A default begin state: zeros like the first step's (batch, hidden) projection."""


def _op(op_name, *args, **kwargs):
    return call_op(op_name, args, kwargs)


class BaseRNNCell:
    """The interface of MXNet 1.x's symbolic cells: __call__(inputs, states) for one step,
    begin_state, reset and unroll."""

    def __init__(self, prefix="", params=None):
        self._own_params = params is None
        self._prefix = prefix
        self._params = RNNParams(prefix) if params is None else params
        self._modified = False
        self.reset()

    @property
    def params(self):
        self._own_params = False
        return self._params

    def reset(self):
        self._init_counter, self._counter = -1, -1

    @property
    def state_info(self):
        raise NotImplementedError(f"{type(self).__name__} must define state_info")

    def begin_state(self, func=None, **kwargs):
        """One symbol per state: func(name=..., **kwargs) (e.g. sym.Variable), or zeros."""
        states = []
        for info in self.state_info:
            self._init_counter += 1
            if func is None:
                states.append(_ZeroState())
                continue
            name = f"{self._prefix}begin_state_{self._init_counter}"
            states.append(func(name=name, **kwargs))
        return states

    def unroll(self, length, inputs, begin_state=None, layout="NTC", merge_outputs=None):
        """Run `length` steps; inputs is one Symbol with a time axis or a list of steps."""
        self.reset()
        axis = layout.find("T")
        steps = _steps(length, inputs, axis)
        states = self.begin_state() if begin_state is None else list(begin_state)
        outputs = []
        for x in steps:
            out, states = self(x, states)
            outputs.append(out)
        return _merge(outputs, axis, merge_outputs), states


class LSTMCell(BaseRNNCell):
    """MXNet 1.x's symbolic LSTM step; gates i, f, c, o; the forget gate's bias starts at
    forget_bias (LSTMBias)."""

    def __init__(self, num_hidden, prefix="lstm_", params=None, forget_bias=1.0):
        super().__init__(prefix, params)
        self._num_hidden = num_hidden
        self._iW = self._params.get("i2h_weight")
        self._hW = self._params.get("h2h_weight")
        self._iB = self._params.get("i2h_bias", init=kinit.LSTMBias(forget_bias=forget_bias))
        self._hB = self._params.get("h2h_bias")

    @property
    def state_info(self):
        return [{"shape": (0, self._num_hidden), "__layout__": "NC"}] * 2

    def __call__(self, inputs, states):
        self._counter += 1
        name = f"{self._prefix}t{self._counter}_"
        hidden = self._num_hidden
        i2h = _op("FullyConnected", inputs, self._iW, self._iB, num_hidden=hidden * 4,
                  name=f"{name}i2h")
        states = [_op("zeros_like", _op("slice_axis", i2h, axis=1, begin=0, end=hidden))
                  if isinstance(s, _ZeroState) else s for s in states]
        h2h = _op("FullyConnected", states[0], self._hW, self._hB, num_hidden=hidden * 4,
                  name=f"{name}h2h")
        gates = i2h + h2h
        gate = [_op("slice_axis", gates, axis=1, begin=k * hidden, end=(k + 1) * hidden)
                for k in range(4)]
        in_gate = _op("Activation", gate[0], act_type="sigmoid")
        forget_gate = _op("Activation", gate[1], act_type="sigmoid")
        in_transform = _op("Activation", gate[2], act_type="tanh")
        out_gate = _op("Activation", gate[3], act_type="sigmoid")
        next_c = _op("_plus", forget_gate * states[1], in_gate * in_transform,
                     name=f"{name}state")
        next_h = _op("_mul", out_gate, _op("Activation", next_c, act_type="tanh"),
                     name=f"{name}out")
        return next_h, [next_h, next_c]


class SequentialRNNCell(BaseRNNCell):
    """Cells stacked: each one's output is the next one's input."""

    def __init__(self, params=None):
        super().__init__(prefix="", params=params)
        self._cells = []

    def add(self, cell):
        self._cells.append(cell)

    @property
    def state_info(self):
        return [info for cell in self._cells for info in cell.state_info]

    def begin_state(self, **kwargs):
        return [s for cell in self._cells for s in cell.begin_state(**kwargs)]

    def reset(self):
        super().reset()
        for cell in getattr(self, "_cells", []):
            cell.reset()

    def __call__(self, inputs, states):
        self._counter += 1
        next_states, at = [], 0
        for cell in self._cells:
            n = len(cell.state_info)
            inputs, new = cell(inputs, states[at:at + n])
            next_states.extend(new)
            at += n
        return inputs, next_states

    def unroll(self, length, inputs, begin_state=None, layout="NTC", merge_outputs=None):
        self.reset()
        states = self.begin_state() if begin_state is None else list(begin_state)
        next_states, at = [], 0
        for k, cell in enumerate(self._cells):
            n = len(cell.state_info)
            last = k == len(self._cells) - 1
            inputs, new = cell.unroll(length, inputs, states[at:at + n], layout,
                                      merge_outputs if last else None)
            next_states.extend(new)
            at += n
        return inputs, next_states


def _steps(length, inputs, axis):
    if isinstance(inputs, Symbol):
        return [_op("squeeze", _op("slice_axis", inputs, axis=axis, begin=t, end=t + 1),
                    axis=axis) for t in range(length)]
    inputs = list(inputs)
    if len(inputs) != length:
        raise KilnError(f"unroll: {len(inputs)} input steps for length {length}"
                        + where_in_user_code())
    return inputs


def _merge(outputs, axis, merge_outputs):
    """MXNet's: one Symbol (stacked along the time axis) or the list of steps."""
    if merge_outputs:
        return _op("Concat", *[_op("expand_dims", o, axis=axis) for o in outputs], dim=axis)
    return outputs
