"""MXNet's gluon.contrib.rnn: LSTMPCell (an LSTM with a projected recurrent state) and
VariationalDropoutCell (dropout masks drawn once per sequence, shared by every step)."""
from ... import np as knp, npx
from ..parameter import Parameter
from ..rnn.container_cells import ModifierCell, BidirectionalCell
from ..rnn.rnn_cell import HybridRecurrentCell
from ..._core.base import KilnError


class LSTMPCell(HybridRecurrentCell):
    """LSTM whose output and recurrent state r = h2r_weight @ (o * tanh(c)) has
    `projection_size` units; states [r, c]; gates i, f, g, o as LSTMCell's."""
    _mx_alias = "lstmp"          # MXNet 1.x's name hint (gluon/naming.py)

    def __init__(self, hidden_size, projection_size, i2h_weight_initializer=None,
                 h2h_weight_initializer=None, h2r_weight_initializer=None,
                 i2h_bias_initializer="zeros", h2h_bias_initializer="zeros", input_size=0,
                 **kwargs):
        super().__init__(**kwargs)
        self._hidden_size, self._projection_size = hidden_size, projection_size
        rows = 4 * hidden_size
        for name, shape, init in (
                ("i2h_weight", (rows, input_size), i2h_weight_initializer),
                ("h2h_weight", (rows, projection_size), h2h_weight_initializer),
                ("h2r_weight", (projection_size, hidden_size), h2r_weight_initializer),
                ("i2h_bias", (rows,), i2h_bias_initializer),
                ("h2h_bias", (rows,), h2h_bias_initializer)):
            setattr(self, name, Parameter(name, shape=shape, init=init,
                                          allow_deferred_init=True))

    def infer_shape(self, inputs, *args):
        self.i2h_weight.shape = (self.i2h_weight.shape[0], inputs.shape[-1])

    def state_info(self, batch_size=0):
        return [{"shape": (batch_size, self._projection_size), "__layout__": "NC"},
                {"shape": (batch_size, self._hidden_size), "__layout__": "NC"}]

    def forward(self, inputs, states):
        rows = 4 * self._hidden_size
        gates = (npx.fully_connected(inputs, self.i2h_weight.data(), self.i2h_bias.data(),
                                     num_hidden=rows)
                 + npx.fully_connected(states[0], self.h2h_weight.data(),
                                       self.h2h_bias.data(), num_hidden=rows))
        i, f, g, o = knp.split(gates, 4, axis=-1)
        next_c = npx.sigmoid(f) * states[1] + npx.sigmoid(i) * knp.tanh(g)
        hidden = npx.sigmoid(o) * knp.tanh(next_c)
        next_r = npx.fully_connected(hidden, self.h2r_weight.data(), None,
                                     num_hidden=self._projection_size, no_bias=True)
        return next_r, [next_r, next_c]

    def __repr__(self):
        return (f"LSTMPCell({self.i2h_weight.shape[1] or None} -> {4 * self._hidden_size} "
                f"-> {self._projection_size})")


class VariationalDropoutCell(ModifierCell):
    """Dropout on the inputs, the first state and the outputs of base_cell, each with one
    mask per sequence (drawn at its first step, reused until reset/unroll). In predict mode
    nothing is dropped."""
    _mx_alias = "vardrop"          # MXNet 1.x's name hint (gluon/naming.py)

    def __init__(self, base_cell, drop_inputs=0.0, drop_states=0.0, drop_outputs=0.0):
        if drop_states and isinstance(base_cell, BidirectionalCell):
            raise KilnError("VariationalDropoutCell: a BidirectionalCell does not support "
                            "state dropout; wrap the cells underneath instead")
        super().__init__(base_cell)
        self.drop_inputs, self.drop_states, self.drop_outputs = (drop_inputs, drop_states,
                                                                 drop_outputs)
        self._masks = {}

    def reset(self):
        super().reset()
        self._masks = {}

    def _masked(self, which, rate, x):
        if not rate:
            return x
        if which not in self._masks:
            self._masks[which] = npx.dropout(knp.ones_like(x), p=rate)
        return x * self._masks[which]

    def forward(self, inputs, states):
        states = list(states)
        states[0] = self._masked("states", self.drop_states, states[0])
        inputs = self._masked("inputs", self.drop_inputs, inputs)
        output, next_states = self.base_cell(inputs, states)
        return self._masked("outputs", self.drop_outputs, output), next_states

    def __repr__(self):
        return (f"VariationalDropoutCell(p_out = {self.drop_outputs}, p_state = "
                f"{self.drop_states})")


from .conv_rnn import (Conv1DRNNCell, Conv2DRNNCell, Conv3DRNNCell,  # noqa: F401,E402
                       Conv1DLSTMCell, Conv2DLSTMCell, Conv3DLSTMCell, Conv1DGRUCell,
                       Conv2DGRUCell, Conv3DGRUCell)


def dynamic_unroll(cell, inputs, begin_state, drop_inputs=0, drop_outputs=0, layout="TNC",
                   valid_length=None):
    """Run `cell` over the time axis of `inputs` with npx.foreach (one compiled loop when
    hybridized); returns (outputs, states). With valid_length, a sequence's states stop
    changing after its length and its later outputs are zero, as in MXNet."""
    axis = layout.find("T")
    if axis < 0:
        raise KilnError(f"dynamic_unroll: layout must contain 'T', got {layout!r}")
    if axis != 0:
        inputs = knp.swapaxes(inputs, 0, axis)
    if drop_inputs:
        inputs = npx.dropout(inputs, p=drop_inputs, axes=(0,))
    states = list(begin_state)
    if valid_length is None:
        outputs, states = npx.foreach(lambda x, s: cell(x, s), inputs, states)
    else:
        lengths = knp.reshape(valid_length, (-1, 1)).astype(states[0].dtype)

        def body(x, carried):
            step = carried[-1]
            out, new = cell(x, carried[:-1])
            live = lengths > step
            return out, [knp.where(live, n, s) for n, s in zip(new, carried[:-1])] + [
                step + 1]
        outputs, states = npx.foreach(body, inputs,
                                      states + [knp.zeros((1, 1), dtype=states[0].dtype)])
        states = states[:-1]
    if drop_outputs:
        outputs = npx.dropout(outputs, p=drop_outputs, axes=(0,))
    if valid_length is not None:
        outputs = npx.sequence_mask(outputs, sequence_length=valid_length,
                                    use_sequence_length=True, axis=0)
    if axis != 0:
        outputs = knp.swapaxes(outputs, 0, axis)
    return outputs, states
