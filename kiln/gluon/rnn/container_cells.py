"""Cells built around other cells, with MXNet Gluon's API: BidirectionalCell and the
modifier cells ResidualCell and ZoneoutCell."""
from ... import np as knp, npx
from ..._core import trace
from . import sequence
from .rnn_cell import HybridRecurrentCell


class ModifierCell(HybridRecurrentCell):
    """Wraps base_cell (its parameters stay the base cell's); begin_state goes through
    the modifier."""

    def __init__(self, base_cell):
        if getattr(base_cell, "_modified", False):
            raise ValueError(f"cell {base_cell!r} is already modified; one cell cannot be "
                             f"modified twice")
        super().__init__()
        base_cell._modified = True
        self.base_cell = base_cell

    def state_info(self, batch_size=0):
        return self.base_cell.state_info(batch_size)

    def begin_state(self, batch_size=0, func=None, **kwargs):
        self.base_cell._modified = False
        try:
            return self.base_cell.begin_state(batch_size=batch_size, func=func, **kwargs)
        finally:
            self.base_cell._modified = True

    def __repr__(self):
        return f"{type(self).__name__}({self.base_cell!r})"


class ResidualCell(ModifierCell):
    """output = base_cell(inputs) + inputs."""

    def forward(self, inputs, states):
        output, states = self.base_cell(inputs, states)
        return output + inputs, states

    def unroll(self, length, inputs, begin_state=None, layout="NTC", merge_outputs=None,
               valid_length=None):
        self.reset()
        self.base_cell._modified = False
        try:
            outputs, states = self.base_cell.unroll(length, inputs, begin_state, layout,
                                                    merge_outputs, valid_length)
        finally:
            self.base_cell._modified = True
        seq = sequence.ops_for(inputs)
        steps, axis, _ = seq.as_steps(length, inputs, layout)
        if valid_length is not None:
            steps = seq.mask(steps, valid_length, axis, False)
        if isinstance(outputs, (list, tuple)):
            return [o + x for o, x in zip(outputs, steps)], states
        return outputs + seq.stack(steps, axis), states


class ZoneoutCell(ModifierCell):
    """Zoneout (Krueger et al.): in training, each output and state element keeps its
    previous value with probability zoneout_outputs / zoneout_states."""
    _mx_alias = "zoneout"          # MXNet 1.x's name hint (gluon/naming.py)

    def __init__(self, base_cell, zoneout_outputs=0.0, zoneout_states=0.0):
        if isinstance(base_cell, BidirectionalCell):
            raise ValueError("BidirectionalCell cannot be stepped, so it does not support "
                             "zoneout; apply ZoneoutCell to the cells inside it instead")
        super().__init__(base_cell)
        self.zoneout_outputs, self.zoneout_states = zoneout_outputs, zoneout_states
        self._prev_output = None

    def reset(self):
        super().reset()
        self._prev_output = None

    def forward(self, inputs, states):
        next_output, next_states = self.base_cell(inputs, states)

        def keep_new(p, like):     # nonzero where the new value is kept (always in predict)
            return npx.dropout(knp.ones(like.shape, dtype=like.dtype), p=p)
        # Hybridized, a step is one traced program: its previous output is zeros, as in
        # MXNet, whose cached graph is traced on the first step after reset; a traced value
        # kept on the cell would also leak into the next trace.
        tracing = trace.current() is not None
        prev = None if tracing else self._prev_output
        if prev is None:
            prev = knp.zeros(next_output.shape, dtype=next_output.dtype)
        output = (knp.where(keep_new(self.zoneout_outputs, next_output), next_output, prev)
                  if self.zoneout_outputs != 0 else next_output)
        if self.zoneout_states != 0:
            next_states = [knp.where(keep_new(self.zoneout_states, new), new, old)
                           for new, old in zip(next_states, states)]
        if not tracing:
            self._prev_output = output
        return output, next_states

    def __repr__(self):
        return (f"ZoneoutCell(p_out={self.zoneout_outputs}, p_state={self.zoneout_states}, "
                f"{self.base_cell!r})")


class BidirectionalCell(HybridRecurrentCell):
    """l_cell reads the sequence forwards, r_cell backwards; outputs concatenated along the
    feature axis, states l_cell's then r_cell's. Only `unroll` runs it."""

    def __init__(self, l_cell, r_cell, output_prefix="bi_"):
        super().__init__()
        self._output_prefix = output_prefix     # MXNet's node names on Symbols: bi_t0, ...
        self.register_child(l_cell, "l_cell")
        self.register_child(r_cell, "r_cell")

    def __call__(self, inputs, states):
        raise NotImplementedError("a BidirectionalCell cannot be stepped; use unroll")

    def state_info(self, batch_size=0):
        return [info for c in self._children.values() for info in c.state_info(batch_size)]

    def begin_state(self, **kwargs):
        return [s for c in self._children.values() for s in c.begin_state(**kwargs)]

    def unroll(self, length, inputs, begin_state=None, layout="NTC", merge_outputs=None,
               valid_length=None):
        self.reset()
        seq = sequence.ops_for(inputs)
        steps, axis, batch = seq.as_steps(length, inputs, layout)
        states = seq.begin_state(self, begin_state, batch, steps[0])
        l_cell, r_cell = self._children.values()
        n_left = len(l_cell.state_info(batch))
        l_out, l_states = l_cell.unroll(length, steps, states[:n_left], layout, False,
                                        valid_length)
        r_out, r_states = r_cell.unroll(length, seq.reverse(steps, valid_length),
                                        states[n_left:], layout, False, valid_length)
        r_out = seq.reverse(r_out, valid_length)
        outputs = [seq.concat(a, b, name=f"{self._output_prefix}t{t}")
                   for t, (a, b) in enumerate(zip(l_out, r_out))]
        if valid_length is not None:
            outputs = seq.mask(outputs, valid_length, axis, False)
        return (seq.merge(outputs, axis, merge_outputs, valid_length is not None),
                l_states + r_states)
