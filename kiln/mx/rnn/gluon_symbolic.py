"""Gluon's recurrent cells (kiln/gluon/rnn) called and unrolled on MXNet 1.x Symbols.

MXNet 1.x runs a cell's hybrid_forward with F = symbol: every step adds MXNet's nodes to a
graph (`rnn_t0_i2h`, `rnn_t0_out`, ...) over the cell's parameters as variables named like
the parameters (`rnn_i2h_weight`, shared by every step), and shapes stay unknown until
bind / infer_shape. This module is that F = symbol side for kiln's cells:

- STEPS: one step of each cell kind as MXNet's hybrid_forward builds it, registered with
  kiln/mx/sym/layer_symbols.py, so `cell(x_symbol, states)` gives Symbols;
- SymbolSequence: the sequence functions of gluon/rnn/sequence.py built of symbol nodes
  (split, stack, SequenceMask, SequenceLast, SequenceReverse), registered there, so the
  cells' own `unroll` runs unchanged on Symbols.

A default begin state is MXNet's zeros of shape (0, hidden), the 0 a batch that shape
inference fills in. kiln infers shapes forward, so here the zeros take their batch from the
first step's input instead (rnn_cell.zeros_with_batch_of): the same values and shapes, and
no variable is added.
"""
from ...gluon.rnn import container_cells, rnn_cell, sequence
from ...gluon.rnn.cell_math import activation_name
from ..sym.layer_symbols import register_builder
from ..sym.symbol import Symbol, call_op, var
from .rnn_cell import zeros_with_batch_of


def _op(op_name, *args, **kwargs):
    return call_op(op_name, args, kwargs)


def param_var(param):
    """The variable of a Gluon Parameter in a Symbol (MXNet's Parameter.var): named as the
    parameter, one per parameter, carrying its known shape, dtype and initializer. Kept on
    the parameter, not per build as layer_symbols.variable: the steps of one unroll are
    separate calls, and all of them must read the same variable."""
    cached = param.__dict__.get("_symbol_var")
    if cached is None:
        cached = var(param.name, shape=param.shape, dtype=param.dtype, init=param.init)
        param.__dict__["_symbol_var"] = cached
    return cached


def _step_prefix(cell):
    cell._counter += 1
    return f"{cell.prefix}t{cell._counter}_"


def _activation(x, act, name):
    """MXNet's RecurrentCell._get_activation: tanh/relu/sigmoid/softsign ops, Activation for
    other names, else the callable (a block or function) applied to the Symbol."""
    mx_name = activation_name(act)
    if mx_name in ("tanh", "relu", "sigmoid", "softsign"):
        return _op(mx_name, x, name=name)
    if mx_name is not None:
        return _op("Activation", x, act_type=mx_name, name=name)
    return act(x)


def _weights(cell):
    return [param_var(getattr(cell, n))
            for n in ("i2h_weight", "h2h_weight", "i2h_bias", "h2h_bias")]


def _projections(cell, inputs, state, gates, prefix):
    i2h_w, h2h_w, i2h_b, h2h_b = _weights(cell)
    hidden = cell._hidden_size * gates
    i2h = _op("FullyConnected", data=inputs, weight=i2h_w, bias=i2h_b, num_hidden=hidden,
              name=prefix + "i2h")
    h2h = _op("FullyConnected", data=state, weight=h2h_w, bias=h2h_b, num_hidden=hidden,
              name=prefix + "h2h")
    return i2h, h2h


def rnn_step(cell, inputs, states):
    prefix = _step_prefix(cell)
    i2h, h2h = _projections(cell, inputs, states[0], 1, prefix)
    total = _op("elemwise_add", i2h, h2h, name=prefix + "plus0")
    out = _activation(total, cell._activations()[0] or "tanh", prefix + "out")
    return out, [out]


def lstm_step(cell, inputs, states):
    prefix = _step_prefix(cell)
    act, recurrent = cell._activations()
    i2h, h2h = _projections(cell, inputs, states[0], 4, prefix)
    gates = _op("elemwise_add", i2h, h2h, name=prefix + "plus0")
    sliced = _op("SliceChannel", gates, num_outputs=4, name=prefix + "slice")
    in_gate = _activation(sliced[0], recurrent, prefix + "i")
    forget_gate = _activation(sliced[1], recurrent, prefix + "f")
    in_transform = _activation(sliced[2], act, prefix + "c")
    out_gate = _activation(sliced[3], recurrent, prefix + "o")
    next_c = _op("elemwise_add",
                 _op("elemwise_mul", forget_gate, states[1], name=prefix + "mul0"),
                 _op("elemwise_mul", in_gate, in_transform, name=prefix + "mul1"),
                 name=prefix + "state")
    next_h = _op("elemwise_mul", out_gate,
                 _activation(next_c, act, prefix + "activation0"), name=prefix + "out")
    return next_h, [next_h, next_c]


def gru_step(cell, inputs, states):
    prefix = _step_prefix(cell)
    act, recurrent = cell._activations()
    prev_h = states[0]
    i2h, h2h = _projections(cell, inputs, prev_h, 3, prefix)
    i2h_r, i2h_z, i2h = _op("SliceChannel", i2h, num_outputs=3, name=prefix + "i2h_slice")
    h2h_r, h2h_z, h2h = _op("SliceChannel", h2h, num_outputs=3, name=prefix + "h2h_slice")
    reset_gate = _activation(_op("elemwise_add", i2h_r, h2h_r, name=prefix + "plus0"),
                             recurrent, prefix + "r_act")
    update_gate = _activation(_op("elemwise_add", i2h_z, h2h_z, name=prefix + "plus1"),
                              recurrent, prefix + "z_act")
    candidate = _activation(
        _op("elemwise_add", i2h, _op("elemwise_mul", reset_gate, h2h, name=prefix + "mul0"),
            name=prefix + "plus2"), act, prefix + "h_act")
    ones = _op("ones_like", update_gate, name=prefix + "ones_like0")
    next_h = _op("elemwise_add",
                 _op("elemwise_mul",
                     _op("elemwise_sub", ones, update_gate, name=prefix + "minus0"),
                     candidate, name=prefix + "mul1"),
                 _op("elemwise_mul", update_gate, prev_h, name=prefix + "mul20"),
                 name=prefix + "out")
    return next_h, [next_h]


def dropout_step(cell, inputs, states):
    cell._counter += 1
    if cell._rate > 0:
        inputs = _op("Dropout", data=inputs, p=cell._rate, axes=cell._axes,
                     name=f"t{cell._counter}_fwd")
    return inputs, list(states)


def residual_step(cell, inputs, states):
    cell._counter += 1
    output, states = cell.base_cell(inputs, states)
    return _op("elemwise_add", output, inputs, name=f"t{cell._counter}_fwd"), states


def zoneout_step(cell, inputs, states):
    cell._counter += 1
    next_output, next_states = cell.base_cell(inputs, states)

    def keep_new(p, like):     # nonzero where the new value is kept (always in predict)
        return _op("Dropout", _op("ones_like", like), p=p)
    prev = cell._prev_output
    if prev is None:
        prev = _op("zeros_like", next_output)
    output = (_op("where", keep_new(cell.zoneout_outputs, next_output), next_output, prev)
              if cell.zoneout_outputs != 0 else next_output)
    if cell.zoneout_states != 0:
        next_states = [_op("where", keep_new(cell.zoneout_states, new), new, old)
                       for new, old in zip(next_states, states)]
    cell._prev_output = output
    return output, next_states


def sequential_step(cell, inputs, states):
    """A stack's step is its children's steps, each of which builds Symbols itself."""
    cell._counter += 1
    return cell.forward(inputs, states)


STEPS = {rnn_cell.RNNCell: rnn_step, rnn_cell.LSTMCell: lstm_step,
         rnn_cell.GRUCell: gru_step, rnn_cell.DropoutCell: dropout_step,
         rnn_cell.SequentialRNNCell: sequential_step,
         rnn_cell.HybridSequentialRNNCell: sequential_step,
         container_cells.ResidualCell: residual_step,
         container_cells.ZoneoutCell: zoneout_step}


def _as_states(states):
    return list(states) if isinstance(states, (list, tuple)) else [states]


def _register():
    for cell_class, step in STEPS.items():
        register_builder(
            cell_class, lambda cell, inputs, states, step=step: step(cell, inputs,
                                                                     _as_states(states)))


class SymbolSequence:
    """gluon/rnn/sequence.py's functions on Symbols, as MXNet's F = symbol unroll does them."""

    @staticmethod
    def as_steps(length, inputs, layout):
        """MXNet's _format_sequence: a Symbol with a time axis is split into its steps; the
        batch size is unknown (0) until shapes are inferred."""
        axis = layout.find("T")
        if isinstance(inputs, Symbol):
            if len(inputs.list_outputs()) != 1:
                raise ValueError("unroll doesn't allow grouped symbol as input. Please "
                                 "convert to list with list(inputs) first or let unroll "
                                 "handle splitting.")
            steps = list(_op("split", inputs, axis=axis, num_outputs=length, squeeze_axis=1))
            return steps, axis, 0
        if length is not None and len(inputs) != length:
            raise ValueError(f"unroll: got {len(inputs)} steps of input for length {length}")
        return list(inputs), axis, 0

    @staticmethod
    def begin_state(cell, begin, batch_size, first_step=None):
        if begin is not None:
            return list(begin)
        return cell.begin_state(batch_size=0, func=_zeros_batch_of(first_step))

    @staticmethod
    def stack(steps, axis):
        return _op("stack", *steps, axis=axis, num_args=len(steps))

    @staticmethod
    def merge(steps, axis, merge_outputs, masked=False):
        if merge_outputs or (merge_outputs is None and masked):
            return SymbolSequence.stack(steps, axis)
        return list(steps)

    @staticmethod
    def concat(left, right, name=None):
        return _op("Concat", left, right, dim=1, num_args=2, name=name)

    @staticmethod
    def mask(outputs, valid_length, axis, merged):
        data = outputs if merged else SymbolSequence.stack(outputs, axis)
        masked = _op("SequenceMask", data, valid_length, use_sequence_length=True, axis=axis)
        if merged:
            return masked
        return list(_op("split", masked, num_outputs=len(outputs), axis=axis,
                        squeeze_axis=True))

    @staticmethod
    def last_valid(per_step, valid_length):
        return _op("SequenceLast", SymbolSequence.stack(per_step, 0), valid_length,
                   use_sequence_length=True, axis=0)

    @staticmethod
    def reverse(steps, valid_length=None):
        if valid_length is None:
            return list(reversed(steps))
        flipped = _op("SequenceReverse", SymbolSequence.stack(steps, 0), valid_length,
                      use_sequence_length=True)
        return list(_op("split", flipped, axis=0, num_outputs=len(steps), squeeze_axis=True))


def _zeros_batch_of(first_step):
    """The `func` of cell.begin_state on Symbols: zeros of the state's shape whose unknown
    batch (0) is the batch of `first_step` (N, ...)."""
    def zeros(shape, dtype=None, name=None, **_):
        shape = tuple(int(d) for d in shape)
        if list(shape).count(0) == 1:
            return zeros_with_batch_of(first_step, 0, shape, name)
        return _op("_zeros", shape=shape, dtype=dtype or "float32", name=name)
    return zeros


_register()
sequence.register_symbolic(SymbolSequence)
