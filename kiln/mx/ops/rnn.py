"""MXNet's fused RNN operator (`nd.RNN`, `sym.RNN`): a stack of rnn_relu/rnn_tanh/lstm/gru
layers (an LSTM optionally with a projection, LSTMP), one or two directions, with every
weight in one flat `parameters` vector.

The vector is MXNet's (and cuDNN's) packing: all weights, then all biases; within each,
layer by layer, direction by direction (left then right), i2h before h2h. The cell math
and the time loop are gluon.rnn's (cell_math.step, time_loop.run: a compiled loop when
hybridized), so this op and the gluon layers compute the same thing.
"""
import numpy as _np

from ... import np as knp, npx as knpx
from ..._core.base import KilnError
from .table import _op
from ...gluon.rnn import time_loop
from ...gluon.rnn.cell_math import GATES, step


def _unpack(parameters, mode, num_layers, dirs, input_size, hidden, projection=0):
    """{(layer, direction): (i2h_w, h2h_w, i2h_b, h2h_b, h2r_w or None)} from the flat
    vector (with a projection, each direction's weights end with h2r (P, H))."""
    gates, out = GATES[mode], projection or hidden
    shapes, k = [], 0
    for kind in ("weight", "bias"):
        for layer in range(num_layers):
            width = input_size if layer == 0 else out * dirs
            for d in range(dirs):
                parts = ("i2h", "h2h", "h2r") if projection and kind == "weight" else \
                    ("i2h", "h2h")
                for part in parts:
                    shape = {"i2h": (gates * hidden, width), "h2h": (gates * hidden, out),
                             "h2r": (projection, hidden)}[part]
                    shape = shape if kind == "weight" else shape[:1]
                    shapes.append(((layer, d, part, kind), shape, k))
                    k += int(_np.prod(shape))
    if parameters.shape != (k,):
        raise KilnError(f"RNN: parameters must be a vector of {k} values for mode={mode!r}, "
                        f"{num_layers} layer(s), {dirs} direction(s), input size {input_size} "
                        f"and state size {hidden}; got shape {tuple(parameters.shape)}")
    found = {key: knp.reshape(parameters[start:start + int(_np.prod(shape))], shape)
             for key, shape, start in shapes}
    return {(layer, d): tuple(found[(layer, d, p, kind)] for kind in ("weight", "bias")
                              for p in ("i2h", "h2h")) + (found.get((layer, d, "h2r", "weight")),)
            for layer in range(num_layers) for d in range(dirs)}


def param_count(mode, num_layers, dirs, input_size, hidden, projection=0):
    """The length of MXNet's flat `parameters` vector (its packing, projection included)."""
    gates, out = GATES[mode] * hidden, projection or hidden
    total = 0
    for layer in range(num_layers):
        width = input_size if layer == 0 else out * dirs
        per_direction = gates * (width + out + 2) + (projection * hidden if projection else 0)
        total += per_direction * dirs
    return total


def _rnn_shapes(attrs, data):
    """MXNet infers the parameters vector and the begin states from the data (T, N, C)."""
    mode, hidden = attrs.get("mode", "lstm"), int(attrs["state_size"])
    layers = int(attrs.get("num_layers", 1))
    dirs = 2 if _flag(attrs.get("bidirectional", False)) else 1
    projection = int(attrs.get("projection_size") or 0)
    state = (layers * dirs, data[1], projection or hidden)
    return {"parameters": (param_count(mode, layers, dirs, data[2], hidden, projection),),
            "state": state, "state_cell": (layers * dirs, data[1], hidden)}


def _flag(value):
    return value in (True, 1) or str(value).lower() in ("true", "1")


def _outputs(attrs):
    """The output, then with state_outputs the final states (h, and c for an LSTM)."""
    if not _flag(attrs.get("state_outputs", False)):
        return 1
    return 3 if attrs.get("mode", "lstm") == "lstm" else 2


@_op("RNN", ("data", "parameters", "state", "state_cell", "sequence_length"),
     param_shapes=_rnn_shapes, num_outputs=_outputs,
     output_names=lambda attrs: ["output", "state_output", "statecell_output"])
def RNN(data, parameters, state, state_cell=None, sequence_length=None, state_size=0,
        num_layers=1, bidirectional=False, mode="lstm", p=0.0, state_outputs=False,
        use_sequence_length=False, projection_size=None, **_):
    if mode not in GATES:
        raise KilnError(f"RNN: mode must be one of {', '.join(GATES)}, got {mode!r}")
    if use_sequence_length:
        raise KilnError("RNN: use_sequence_length is not supported")
    projection = int(projection_size or 0)
    if projection and mode != "lstm":
        raise KilnError(f"RNN: projection_size is for mode='lstm' (LSTMP), got {mode!r}")
    if mode == "lstm" and state_cell is None:
        raise KilnError("RNN: mode='lstm' needs state_cell")
    dirs, hidden, layers = 2 if bidirectional else 1, int(state_size), int(num_layers)
    weights = _unpack(parameters, mode, layers, dirs, data.shape[2], hidden, projection)
    x, h_out, c_out = data, [], []
    for layer in range(layers):
        outs = []
        for d in range(dirs):
            k = layer * dirs + d
            i2h_w, h2h_w, i2h_b, h2h_b, h2r_w = weights[(layer, d)]
            steps, batch, features = x.shape
            xs = knpx.fully_connected(knp.reshape(x, (steps * batch, features)), i2h_w, i2h_b,
                                      num_hidden=i2h_w.shape[0])
            xs = knp.reshape(xs, (steps, batch, i2h_w.shape[0]))
            states = [state[k]] + ([state_cell[k]] if mode == "lstm" else [])
            y, last = time_loop.run(
                lambda x_t, s, w=h2h_w, b=h2h_b, r=h2r_w: step(mode, x_t, s, w, b,
                                                               h2r_weight=r),
                xs, states, reverse=d == 1)
            outs.append(y)
            h_out.append(last[0])
            if mode == "lstm":
                c_out.append(last[1])
        x = outs[0] if dirs == 1 else knp.concatenate(outs, axis=-1)
        if p and layer < layers - 1:
            x = knpx.dropout(x, p=float(p))
    if not state_outputs:
        return x
    result = [x, knp.stack(h_out)]
    return result + [knp.stack(c_out)] if mode == "lstm" else result
