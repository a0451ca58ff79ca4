"""sym.RNN, MXNet's fused recurrent op, in a Symbol: the packed `parameters` vector and the
begin states get their shapes from the data as MXNet infers them, and state_outputs=True
gives the final states as outputs. The expected shapes were printed by MXNet 1.9.1's
infer_shape on the same symbols."""
import numpy as np
import pytest

import kiln
from kiln import mx

# (mode, bidirectional, projection_size) -> MXNet 1.9.1's parameters length for
# 3 layers (2 with a projection), state size 7, input (4, 2, 5)
MXNET_PARAMS = {("lstm", False, 0): 1288, ("lstm", True, 0): 3360, ("gru", False, 0): 966,
                ("gru", True, 0): 2520, ("rnn_tanh", False, 0): 322,
                ("rnn_tanh", True, 0): 840, ("lstm", False, 3): 546}


def _rnn(mode, bidirectional, projection):
    cell = mx.sym.var("sc") if mode == "lstm" else None
    kw = {"projection_size": projection} if projection else {}
    return mx.sym.RNN(data=mx.sym.var("x"), parameters=mx.sym.var("params"),
                      state=mx.sym.var("state"), state_cell=cell, state_size=7,
                      num_layers=2 if projection else 3, mode=mode,
                      bidirectional=bidirectional, state_outputs=True, name="R", **kw)


@pytest.mark.parametrize("mode,bidirectional,projection", sorted(MXNET_PARAMS))
def test_parameters_and_states_are_inferred_from_the_data(mode, bidirectional, projection):
    sym = _rnn(mode, bidirectional, projection)
    args, outs, _ = sym.infer_shape(x=(4, 2, 5))
    layers = (2 if projection else 3) * (2 if bidirectional else 1)
    out = projection or 7
    states = [(layers, 2, out)] + ([(layers, 2, 7)] if mode == "lstm" else [])
    assert args == [(4, 2, 5), (MXNET_PARAMS[mode, bidirectional, projection],)] + states
    assert outs == [(4, 2, out * (2 if bidirectional else 1))] + states
    assert sym.list_outputs() == ["R_output", "R_state_output", "R_statecell_output"][
        :len(outs)]


def test_simple_bind_with_only_the_data_shape_runs():
    sym = _rnn("gru", False, 0)
    exe = sym.simple_bind(ctx=kiln.cpu(), x=(4, 2, 5))
    outs = exe.forward(is_train=True)
    assert [o.shape for o in outs] == [(4, 2, 7), (3, 2, 7)]


def test_lstm_with_a_projection_equals_mxnet():
    """LSTMP in the fused op: each direction's weights end with h2r (P, H); the output and
    the h state have P features. Values from MXNet 1.9.1 for the same arguments (each
    drawn from RandomState(k), k its position among the arguments)."""
    sym = mx.sym.RNN(data=mx.sym.var("x"), parameters=mx.sym.var("params"),
                     state=mx.sym.var("state"), state_cell=mx.sym.var("sc"), state_size=7,
                     num_layers=2, mode="lstm", projection_size=3, bidirectional=True,
                     state_outputs=True, name="R")
    shapes = sym.infer_shape(x=(4, 2, 5))[0]
    assert shapes == [(4, 2, 5), (1260,), (4, 2, 3), (4, 2, 7)]
    values = {n: mx.nd.array(np.random.RandomState(k).uniform(-.5, .5, s))
              for k, (n, s) in enumerate(zip(sym.list_arguments(), shapes))}
    outs = [o.asnumpy().ravel()[:3] for o in sym.eval(**values)]
    assert np.allclose(outs[0], [0.02619943, 0.02621597, 0.02794545], atol=1e-6)
    assert np.allclose(outs[1], [0.14094956, 0.10016549, 0.04722393], atol=1e-6)
    assert np.allclose(outs[2], [-0.08636271, 0.5789083, 0.09404215], atol=1e-6)
