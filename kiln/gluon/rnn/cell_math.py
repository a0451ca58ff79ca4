"""One recurrent step of each kind: the only definition of the cell math in kiln.gluon.rnn.

Layers and cells both call `step`, eagerly in a Python loop or traced once as the body of
a compiled time loop (time_loop.py). The input projection `i2h` = x_t W_i2h^T + b_i2h is
computed by the caller: a layer does it for every time step at once (one big matmul
before the loop), a cell per step.

Gate order and formulas are MXNet's, which are cuDNN's and PyTorch's:
  LSTM  gates = i2h + h W_h2h^T + b_h2h split as (i, f, g, o) along the last axis
        c' = sigmoid(f) * c + sigmoid(i) * tanh(g);   h' = sigmoid(o) * tanh(c')
        (LSTMP: the output and recurrent state is r' = h' W_h2r^T instead of h')
  GRU   i2h split as (i_r, i_z, i_n), h2h = h W_h2h^T + b_h2h split as (h_r, h_z, h_n)
        r = sigmoid(i_r + h_r);  z = sigmoid(i_z + h_z);  n = tanh(i_n + r * h_n)
        h' = (1 - z) * n + z * h       (the reset gate multiplies h2h *after* its bias)
  RNN   h' = act(i2h + h W_h2h^T + b_h2h), act = relu or tanh
"""
from ... import np as knp, npx

GATES = {"rnn_relu": 1, "rnn_tanh": 1, "lstm": 4, "gru": 3}
NUM_STATES = {"rnn_relu": 1, "rnn_tanh": 1, "lstm": 2, "gru": 1}

_ACTIVATIONS = {"tanh": knp.tanh, "sigmoid": npx.sigmoid, "relu": npx.relu,
                "softsign": npx.softsign, "softrelu": npx.softplus}


def activation_fn(act, what):
    """An activation given by MXNet name (or a callable) as a function of one array."""
    if callable(act):
        return act
    try:
        return _ACTIVATIONS[act]
    except KeyError:
        from ..._core.base import KilnError, where_in_user_code
        raise KilnError(f"{what}: unknown activation {act!r}; expected one of "
                        f"{', '.join(sorted(_ACTIVATIONS))} or a function"
                        f"{where_in_user_code()}") from None


def activation_name(act):
    """The MXNet name of an activation given by name or as one of kiln's functions; None
    for another callable."""
    if isinstance(act, str):
        return act
    return next((name for name, fn in _ACTIVATIONS.items() if fn is act), None)


def _gate(x, k, n, hidden):
    """Gate k of n packed along the last axis."""
    return x[..., k * hidden:(k + 1) * hidden]


def step(mode, i2h, states, h2h_weight, h2h_bias, act=None, recurrent_act=None,
         h2r_weight=None):
    """(output, new_states) of one step; states is a list ([h] or [h, c] for LSTM). With
    h2r_weight (LSTMP) the LSTM's output and recurrent state is r = h W_h2r^T."""
    h = states[0]
    hidden = h2h_weight.shape[0] // GATES[mode]
    h2h = npx.fully_connected(h, h2h_weight, h2h_bias, num_hidden=h2h_weight.shape[0],
                              flatten=False)
    if mode in ("rnn_relu", "rnn_tanh"):
        act = act or (npx.relu if mode == "rnn_relu" else knp.tanh)
        out = act(i2h + h2h)
        return out, [out]
    act = act or knp.tanh
    sig = recurrent_act or npx.sigmoid
    if mode == "lstm":
        gates = i2h + h2h
        i, f, g, o = (_gate(gates, k, 4, hidden) for k in range(4))
        c = sig(f) * states[1] + sig(i) * act(g)
        out = sig(o) * act(c)
        if h2r_weight is not None:
            out = npx.fully_connected(out, h2r_weight, None, num_hidden=h2r_weight.shape[0],
                                      no_bias=True, flatten=False)
        return out, [out, c]
    if mode == "gru":
        r = sig(_gate(i2h, 0, 3, hidden) + _gate(h2h, 0, 3, hidden))
        z = sig(_gate(i2h, 1, 3, hidden) + _gate(h2h, 1, 3, hidden))
        n = act(_gate(i2h, 2, 3, hidden) + r * _gate(h2h, 2, 3, hidden))
        out = (1 - z) * n + z * h
        return out, [out]
    raise ValueError(f"unknown recurrent mode {mode!r}")
