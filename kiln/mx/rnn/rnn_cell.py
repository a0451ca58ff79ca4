"""MXNet 1.x's symbolic RNN cells (`mx.rnn.RNNCell`, `LSTMCell`, `GRUCell`,
`SequentialRNNCell`, `BidirectionalCell`, `DropoutCell`): each step adds MXNet's nodes to a
Symbol, named as MXNet names them (`lstm_t0_i2h`, `lstm_t0_out`), with the weights as
variables `<prefix>i2h_weight`, ... shared by every step; `unpack_weights` /
`pack_weights` split a cell's gate-stacked weights into MXNet's per-gate names and back.
FusedRNNCell (one RNN op for the whole stack) is in fused_cell.py.

A default begin state is MXNet's zeros of shape (0, hidden), the 0 a batch that MXNet's
shape inference fills in. kiln's inference runs forward, so the zeros take their batch from
the data the cell reads (zeros_with_batch_of): the same values and shapes.
"""
from ..._core.base import KilnError, where_in_user_code
from ... import init as kinit
from ..nd import concat as nd_concat
from ..sym import zeros as sym_zeros
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
    """A default begin state (MXNet's zeros with an unknown batch), made concrete by the
    first node that reads it, from that node's data: see zeros_with_batch_of."""

    def __init__(self, info, name):
        self.shape, self.name = tuple(info["shape"]), name
        self.batch_axis = info.get("__layout__", "NC").find("N")


def _op(op_name, *args, **kwargs):
    return call_op(op_name, args, kwargs)


def zeros_with_batch_of(like, like_batch_axis, shape, name=None):
    """Zeros of `shape`, whose one 0 (the unknown batch) is like's size along
    like_batch_axis; no new variable, and no other size of `like` is needed."""
    batch_axis = list(shape).index(0)
    column = _op("zeros_like", _op("sum", like, axis=like_batch_axis, exclude=True))
    column = _op("reshape", column, shape=tuple(-1 if a == batch_axis else 1
                                                 for a in range(len(shape))))
    others = tuple(a for a in range(len(shape)) if a != batch_axis)
    if not others:
        return column
    return _op("broadcast_axis", column, axis=others, size=tuple(shape[a] for a in others),
               name=name)


def concrete_states(states, like, like_batch_axis):
    """States with every default zero state made from `like`'s batch."""
    return [zeros_with_batch_of(like, like_batch_axis, s.shape, s.name)
            if isinstance(s, _ZeroState) else s for s in states]


class BaseRNNCell:
    """The interface of MXNet 1.x's symbolic cells: __call__(inputs, states) for one step,
    begin_state, reset, unroll and the weight (un)packing."""

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
        for cell in getattr(self, "_cells", []):
            cell.reset()

    @property
    def state_info(self):
        raise NotImplementedError(f"{type(self).__name__} must define state_info")

    @property
    def state_shape(self):
        return [info["shape"] for info in self.state_info]

    @property
    def _gate_names(self):
        return ()

    def begin_state(self, func=None, **kwargs):
        """One symbol per state: func(name=..., shape=..., __layout__=..., **kwargs) (e.g.
        sym.Variable), or MXNet's zeros (func None or sym.zeros) with the batch to come."""
        if self._modified:
            raise KilnError("After applying modifier cells (e.g. DropoutCell) the base cell "
                            "cannot be called directly. Call the modifier cell instead."
                            + where_in_user_code())
        states = []
        for info in self.state_info:
            self._init_counter += 1
            name = f"{self._prefix}begin_state_{self._init_counter}"
            if func is None or func is sym_zeros:
                states.append(_ZeroState(info, name))
            else:
                states.append(func(name=name, **dict(kwargs, **info)))
        return states

    def unpack_weights(self, args):
        """{name: array} with this cell's i2h/h2h weights and biases split per gate
        (`<prefix>i2h_i_weight`, ...), as MXNet names them."""
        args = dict(args)
        if not self._gate_names:
            return args
        h = self._num_hidden
        for group in ("i2h", "h2h"):
            weight = args.pop(f"{self._prefix}{group}_weight")
            bias = args.pop(f"{self._prefix}{group}_bias")
            for j, gate in enumerate(self._gate_names):
                args[f"{self._prefix}{group}{gate}_weight"] = weight[j * h:(j + 1) * h].copy()
                args[f"{self._prefix}{group}{gate}_bias"] = bias[j * h:(j + 1) * h].copy()
        return args

    def pack_weights(self, args):
        """The inverse of unpack_weights."""
        args = dict(args)
        if not self._gate_names:
            return args
        for group in ("i2h", "h2h"):
            for kind in ("weight", "bias"):
                parts = [args.pop(f"{self._prefix}{group}{gate}_{kind}")
                         for gate in self._gate_names]
                args[f"{self._prefix}{group}_{kind}"] = nd_concat(*parts, dim=0)
        return args

    def unroll(self, length, inputs, begin_state=None, layout="NTC", merge_outputs=None):
        """Run `length` steps; inputs is one Symbol with a time axis or a list of steps."""
        self.reset()
        steps, _ = normalize_sequence(length, inputs, layout, False)
        states = self.begin_state() if begin_state is None else list(begin_state)
        outputs = []
        for x in steps:
            out, states = self(x, states)
            outputs.append(out)
        outputs, _ = normalize_sequence(length, outputs, layout, merge_outputs)
        return outputs, states

    def _projections(self, inputs, states, gates, name, i2h_name="i2h", h2h_name="h2h"):
        hidden = self._num_hidden * gates
        i2h = _op("FullyConnected", inputs, self._iW, self._iB, num_hidden=hidden,
                  name=f"{name}{i2h_name}")
        states = concrete_states(states, inputs, 0)
        h2h = _op("FullyConnected", states[0], self._hW, self._hB, num_hidden=hidden,
                  name=f"{name}{h2h_name}")
        return i2h, h2h, states

    def _activation(self, inputs, activation, name):
        if isinstance(activation, str):
            return _op("Activation", inputs, act_type=activation, name=name)
        return activation(inputs, name=name)


class _WeightedCell(BaseRNNCell):
    """A cell with MXNet's variables i2h_weight, i2h_bias, h2h_weight, h2h_bias."""

    def __init__(self, num_hidden, prefix, params, i2h_bias_init=None):
        super().__init__(prefix, params)
        self._num_hidden = num_hidden
        self._iW = self._params.get("i2h_weight")
        self._iB = self._params.get("i2h_bias", **({"init": i2h_bias_init}
                                                   if i2h_bias_init else {}))
        self._hW = self._params.get("h2h_weight")
        self._hB = self._params.get("h2h_bias")

    @property
    def state_info(self):
        return [{"shape": (0, self._num_hidden), "__layout__": "NC"}]


class RNNCell(_WeightedCell):
    """MXNet 1.x's symbolic Elman step: activation(i2h + h2h)."""

    def __init__(self, num_hidden, activation="tanh", prefix="rnn_", params=None):
        super().__init__(num_hidden, prefix, params)
        self._activation_kind = activation

    @property
    def _gate_names(self):
        return ("",)

    def __call__(self, inputs, states):
        self._counter += 1
        name = f"{self._prefix}t{self._counter}_"
        i2h, h2h, _ = self._projections(inputs, states, 1, name)
        output = self._activation(i2h + h2h, self._activation_kind, f"{name}out")
        return output, [output]


class LSTMCell(_WeightedCell):
    """MXNet 1.x's symbolic LSTM step; gates i, f, c, o; the forget gate's bias starts at
    forget_bias (LSTMBias)."""

    def __init__(self, num_hidden, prefix="lstm_", params=None, forget_bias=1.0):
        super().__init__(num_hidden, prefix, params,
                         kinit.LSTMBias(forget_bias=forget_bias))

    @property
    def state_info(self):
        return [{"shape": (0, self._num_hidden), "__layout__": "NC"}] * 2

    @property
    def _gate_names(self):
        return ("_i", "_f", "_c", "_o")

    def __call__(self, inputs, states):
        self._counter += 1
        name = f"{self._prefix}t{self._counter}_"
        hidden = self._num_hidden
        i2h, h2h, states = self._projections(inputs, states, 4, name)
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


class GRUCell(_WeightedCell):
    """MXNet 1.x's symbolic GRU step (cuDNN's variant); gates r, z, o. Its node names are
    MXNet's, double underscore included (`gru_t0__i2h`)."""

    def __init__(self, num_hidden, prefix="gru_", params=None):
        super().__init__(num_hidden, prefix, params)

    @property
    def _gate_names(self):
        return ("_r", "_z", "_o")

    def __call__(self, inputs, states):
        self._counter += 1
        name = f"{self._prefix}t{self._counter}_"
        i2h, h2h, states = self._projections(inputs, states, 3, name, "_i2h", "_h2h")
        prev_h = states[0]
        i2h_r, i2h_z, i2h = _op("SliceChannel", i2h, num_outputs=3, name=f"{name}_i2h_slice")
        h2h_r, h2h_z, h2h = _op("SliceChannel", h2h, num_outputs=3, name=f"{name}_h2h_slice")
        reset_gate = _op("Activation", i2h_r + h2h_r, act_type="sigmoid",
                         name=f"{name}_r_act")
        update_gate = _op("Activation", i2h_z + h2h_z, act_type="sigmoid",
                          name=f"{name}_z_act")
        next_h_tmp = _op("Activation", i2h + reset_gate * h2h, act_type="tanh",
                         name=f"{name}_h_act")
        next_h = _op("_plus", (1. - update_gate) * next_h_tmp, update_gate * prev_h,
                     name=f"{name}out")
        return next_h, [next_h]


class _ContainerCell(BaseRNNCell):
    """Cells made of other cells: states and weight (un)packing are the children's."""

    @property
    def state_info(self):
        return [info for cell in self._cells for info in cell.state_info]

    def begin_state(self, **kwargs):
        if self._modified:
            raise KilnError("After applying modifier cells the base cell cannot be called "
                            "directly. Call the modifier cell instead." + where_in_user_code())
        return [s for cell in self._cells for s in cell.begin_state(**kwargs)]

    def unpack_weights(self, args):
        for cell in self._cells:
            args = cell.unpack_weights(args)
        return args

    def pack_weights(self, args):
        for cell in self._cells:
            args = cell.pack_weights(args)
        return args


class SequentialRNNCell(_ContainerCell):
    """Cells stacked: each one's output is the next one's input."""

    def __init__(self, params=None):
        self._cells = []
        super().__init__(prefix="", params=params)

    def add(self, cell):
        self._cells.append(cell)
        self._params._params.update(cell.params._params)

    def __call__(self, inputs, states):
        self._counter += 1
        next_states, at = [], 0
        for cell in self._cells:
            if isinstance(cell, BidirectionalCell):
                raise KilnError("a BidirectionalCell cannot be stepped; use unroll"
                                + where_in_user_code())
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


class DropoutCell(BaseRNNCell):
    """Dropout on the inputs; no states."""

    def __init__(self, dropout, prefix="dropout_", params=None):
        super().__init__(prefix, params)
        self.dropout = dropout

    @property
    def state_info(self):
        return []

    def __call__(self, inputs, states):
        if self.dropout > 0:
            inputs = _op("Dropout", data=inputs, p=self.dropout)
        return inputs, states

    def unroll(self, length, inputs, begin_state=None, layout="NTC", merge_outputs=None):
        self.reset()
        inputs, _ = normalize_sequence(length, inputs, layout, merge_outputs)
        if isinstance(inputs, Symbol):
            return self(inputs, [])
        return super().unroll(length, inputs, begin_state, layout, merge_outputs)


class BidirectionalCell(_ContainerCell):
    """l_cell reads the sequence forwards, r_cell backwards; outputs concatenated
    (`<output_prefix>t0`, ... or `<output_prefix>out` merged); only unroll runs it."""

    def __init__(self, l_cell, r_cell, params=None, output_prefix="bi_"):
        self._cells = [l_cell, r_cell]
        super().__init__("", params)
        self._output_prefix = output_prefix
        for cell in self._cells:
            self._params._params.update(cell.params._params)

    def __call__(self, inputs, states):
        raise NotImplementedError("Bidirectional cannot be stepped. Please use unroll")

    def unroll(self, length, inputs, begin_state=None, layout="NTC", merge_outputs=None):
        self.reset()
        inputs, axis = normalize_sequence(length, inputs, layout, False)
        states = self.begin_state() if begin_state is None else list(begin_state)
        l_cell, r_cell = self._cells
        n_left = len(l_cell.state_info)
        l_out, l_states = l_cell.unroll(length, inputs, states[:n_left], layout,
                                        merge_outputs)
        r_out, r_states = r_cell.unroll(length, list(reversed(inputs)), states[n_left:],
                                        layout, merge_outputs)
        if merge_outputs is None:
            merge_outputs = isinstance(l_out, Symbol) and isinstance(r_out, Symbol)
            if not merge_outputs:
                l_out, r_out = (list(_op("SliceChannel", o, axis=axis, num_outputs=length,
                                         squeeze_axis=1)) if isinstance(o, Symbol) else o
                                for o in (l_out, r_out))
        if merge_outputs:
            pairs = [(l_out, _op("reverse", r_out, axis=axis))]
        else:
            pairs = list(zip(l_out, reversed(r_out)))
        outputs = [_op("Concat", left, right, dim=1 + bool(merge_outputs),
                       name=(f"{self._output_prefix}out" if merge_outputs
                             else f"{self._output_prefix}t{t}"))
                   for t, (left, right) in enumerate(pairs)]
        return (outputs[0] if merge_outputs else outputs), [l_states, r_states]


def normalize_sequence(length, inputs, layout, merge):
    """MXNet's _normalize_sequence: (inputs as a list of steps, or one Symbol with the time
    axis when merge is True, time axis)."""
    axis = layout.find("T")
    if isinstance(inputs, Symbol):
        if merge is False:
            if len(inputs.list_outputs()) != 1:
                raise KilnError("unroll doesn't allow grouped symbol as input. Please convert "
                                "to list with list(inputs) first or let unroll handle "
                                "splitting." + where_in_user_code())
            inputs = list(_op("split", inputs, axis=axis, num_outputs=length,
                              squeeze_axis=1))
        return inputs, axis
    inputs = list(inputs)
    if length is not None and len(inputs) != length:
        raise KilnError(f"unroll: {len(inputs)} input steps for length {length}"
                        + where_in_user_code())
    if merge is True:
        inputs = _op("Concat", *[_op("expand_dims", i, axis=axis) for i in inputs],
                     dim=axis, num_args=len(inputs))
    return inputs, axis
