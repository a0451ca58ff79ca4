"""mx.rnn's symbolic cells (kiln/mx/rnn/rnn_cell.py, fused_cell.py): names as MXNet 1.9.1
gives them, an unrolled LSTM equal to the LSTM equations (gates i, f, c, o) computed with
NumPy, and FusedRNNCell equal to its unfused stack with the weights moved by
unpack_weights/pack_weights (values marked so were printed by MXNet 1.9.1)."""
import numpy as np
import pytest

import kiln
from kiln import mod, nd, sym
from kiln.mx import rnn
from kiln.mx.name import NameManager


def _sigmoid(x):
    return 1 / (1 + np.exp(-x))


def test_stacked_lstm_unroll_names_and_values():
    stack = rnn.SequentialRNNCell()
    for i in range(2):
        stack.add(rnn.LSTMCell(num_hidden=4, prefix=f"lstm_l{i}_"))
    outputs, states = stack.unroll(3, inputs=sym.var("data"), merge_outputs=True)
    args = outputs.list_arguments()
    assert args == ["data", "lstm_l0_i2h_weight", "lstm_l0_i2h_bias", "lstm_l0_h2h_weight",
                    "lstm_l0_h2h_bias", "lstm_l1_i2h_weight", "lstm_l1_i2h_bias",
                    "lstm_l1_h2h_weight", "lstm_l1_h2h_bias"]
    assert [s.list_outputs()[0] for s in states] == [
        "lstm_l0_t2_out_output", "lstm_l0_t2_state_output", "lstm_l1_t2_out_output",
        "lstm_l1_t2_state_output"]
    shapes, outs, _ = outputs.infer_shape(data=(2, 3, 5))
    assert outs == [(2, 3, 4)] and dict(zip(args, shapes))["lstm_l0_i2h_weight"] == (16, 5)
    rng = np.random.RandomState(0)
    values = {n: rng.uniform(-0.5, 0.5, s).astype("float32") for n, s in zip(args, shapes)}
    got = outputs.eval(**{n: nd.array(v) for n, v in values.items()})[0].asnumpy()
    x = values["data"]
    for layer in range(2):
        p = {k: values[f"lstm_l{layer}_{k}"] for k in ("i2h_weight", "i2h_bias",
                                                        "h2h_weight", "h2h_bias")}
        h, c, steps = np.zeros((2, 4)), np.zeros((2, 4)), []
        for t in range(3):
            g = x[:, t] @ p["i2h_weight"].T + p["i2h_bias"] + h @ p["h2h_weight"].T \
                + p["h2h_bias"]
            i, f, cc, o = np.split(g, 4, axis=1)
            c = _sigmoid(f) * c + _sigmoid(i) * np.tanh(cc)
            h = _sigmoid(o) * np.tanh(c)
            steps.append(h)
        x = np.stack(steps, axis=1)
    np.testing.assert_allclose(got, x, rtol=1e-5, atol=1e-6)


def test_lstm_bias_starts_the_forget_gate_open():
    cell = rnn.LSTMCell(num_hidden=3, prefix="l_", forget_bias=2.0)
    out, _ = cell.unroll(2, inputs=sym.var("data"), merge_outputs=True)
    module = mod.Module(out, label_names=None)
    module.bind(data_shapes=[("data", (1, 2, 4))])
    module.init_params()
    bias = module.get_params()[0]["l_i2h_bias"].asnumpy()
    assert (bias[3:6] == 2.0).all() and (bias[:3] == 0).all()


def test_fused_cell_names_shapes_and_weight_packing():
    """Names, shapes and the unpacked layout as MXNet 1.9.1 gives them."""
    fused = rnn.FusedRNNCell(3, num_layers=2, mode="lstm", bidirectional=True,
                             get_next_state=True, prefix="f_")
    out, states = fused.unroll(4, sym.var("data"), layout="TNC", merge_outputs=True)
    assert out.list_arguments() == ["data", "f_parameters"]
    assert out.list_outputs() == ["f_rnn_output"]
    assert [s.list_outputs() for s in states] == [["f_rnn_state_output"],
                                                  ["f_rnn_statecell_output"]]
    args, outs, _ = out.infer_shape(data=(4, 2, 5))
    assert args == [(4, 2, 5), (504,)] and outs == [(4, 2, 6)]
    packed = nd.arange(504)
    unpacked = fused.unpack_weights({"f_parameters": packed})
    assert len(unpacked) == 64
    assert unpacked["f_l0_h2h_c_weight"].shape == (3, 3)
    assert unpacked["f_r1_h2h_f_bias"].asnumpy().tolist() == [495, 496, 497]
    assert unpacked["f_l0_i2h_c_weight"].asnumpy()[0].tolist() == [30, 31, 32, 33, 34]
    assert np.array_equal(fused.pack_weights(unpacked)["f_parameters"].asnumpy(),
                          packed.asnumpy())


def test_unfused_cells_node_names():
    gru = rnn.GRUCell(3, prefix="g_")
    with NameManager():                   # automatic names count from 0, as in a new process
        outs, _ = gru.unroll(2, sym.var("x"), merge_outputs=False)
    assert [o.list_outputs() for o in outs] == [["g_t0_out_output"], ["g_t1_out_output"]]
    internals = outs[0].get_internals().list_outputs()
    assert internals[:9] == ["x", "split0_output0", "split0_output1", "g_i2h_weight",
                             "g_i2h_bias", "g_t0__i2h_output", "g_t0__i2h_slice_output0",
                             "g_t0__i2h_slice_output1", "g_t0__i2h_slice_output2"]
    relu = rnn.RNNCell(3, activation="relu", prefix="r_")
    merged, _ = relu.unroll(2, [sym.var("a"), sym.var("b")], merge_outputs=True)
    assert merged.infer_shape(a=(2, 4), b=(2, 4))[1] == [(2, 2, 3)]


def test_fused_initializer_opens_the_forget_gates():
    """init.FusedRNN through the variable's __init__: MXNet 1.9.1 sets both the i2h and the
    h2h forget-gate biases to forget_bias, the other biases to zero."""
    fused = rnn.FusedRNNCell(3, num_layers=1, mode="lstm", forget_bias=2.5, prefix="")
    out, _ = fused.unroll(2, sym.var("data"), layout="TNC", merge_outputs=True)
    m = mod.Module(out, label_names=None, context=kiln.cpu())
    m.bind(data_shapes=[("data", (2, 4, 5))], label_shapes=None)
    m.init_params(kiln.init.Uniform(0.1))
    biases = m.get_params()[0]["parameters"].asnumpy()[-24:]
    assert np.array_equal(biases, np.tile([0] * 3 + [2.5] * 3 + [0] * 6, 2))


def _module(cell, shape, grad_req):
    out, _ = cell.unroll(shape[1], sym.var("data"), layout="NTC", merge_outputs=True)
    m = mod.Module(out, label_names=None, context=kiln.cpu())
    m.bind(data_shapes=[("data", shape)], label_shapes=None, inputs_need_grad=True,
           grad_req=grad_req)
    return m


@pytest.mark.parametrize("mode,bidirectional", [("gru", False), ("rnn_tanh", False),
                                                ("lstm", False), ("gru", True)])
def test_fused_cell_equals_its_unfused_stack(mode, bidirectional):
    """Weights moved with unpack_weights/pack_weights, the fused RNN op and the stack of
    cells compute the same outputs and input gradients (check_rnn_consistency in MXNet)."""
    shape, hidden = (4, 3, 5), 6
    fused = rnn.FusedRNNCell(hidden, num_layers=2, mode=mode, bidirectional=bidirectional,
                             get_next_state=True, prefix="")
    stack = fused.unfuse()
    with pytest.warns(UserWarning, match="NTC"):
        m1 = _module(fused, shape, "write")
    m2 = _module(stack, shape, "write")
    m1.init_params()
    args, auxs = m1.get_params()
    m2.set_params(stack.pack_weights(fused.unpack_weights(args)), auxs)
    x = nd.array(np.random.RandomState(0).uniform(size=shape))
    batch = kiln.io.DataBatch(data=[x])
    for m in (m1, m2):
        m.forward(batch, is_train=True)
    assert np.allclose(m1.get_outputs()[0].asnumpy(), m2.get_outputs()[0].asnumpy(),
                       atol=1e-5)
    dy = nd.array(np.random.RandomState(1).uniform(size=m1.get_outputs()[0].shape))
    for m in (m1, m2):
        m.backward(out_grads=[dy])
    assert np.allclose(m1.get_input_grads()[0].asnumpy(), m2.get_input_grads()[0].asnumpy(),
                       atol=1e-5)


def test_variable_begin_states_bind_in_a_module_over_two_contexts():
    """begin_state(func=sym.Variable) declares shape (0, hidden) and __layout__ 'NC', as in
    MXNet; bound as a Module's states, each context's states get its share of the batch
    (MXNet 1.9.1 gives the same shapes: (2, 20) and (3, 20) for a batch of 5)."""
    stack = rnn.SequentialRNNCell()
    for i in range(2):
        stack.add(rnn.LSTMCell(num_hidden=20, prefix=f"lstm_l{i}_"))
    begin = stack.begin_state(func=sym.Variable)
    assert begin[0].list_attr() == {"__shape__": "(0, 20)", "__layout__": "NC"}
    _, states = stack.unroll(3, begin_state=begin, inputs=sym.Variable("data"))
    m = mod.Module(sym.Group(states), context=[kiln.cpu(0), kiln.cpu(1)], label_names=None,
                   state_names=[s.name for s in begin])
    m.bind(data_shapes=[("data", (5, 3, 10))], label_shapes=None, for_training=False)
    m.init_params()
    batch = kiln.io.DataBatch(data=[nd.zeros((5, 3, 10))], label=[])
    m.set_states(value=1)
    m.forward(batch)
    per_context = m.get_outputs(merge_multi_context=False)
    assert [[o.shape for o in out] for out in per_context] == [[(2, 20), (3, 20)]] * 4
    first = [o.asnumpy() for o in m.get_outputs()]
    m.set_states(states=per_context)
    m.forward(batch)
    assert not any(np.allclose(a, b.asnumpy()) for a, b in zip(first, m.get_outputs()))
