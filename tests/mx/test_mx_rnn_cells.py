"""mx.rnn's symbolic cells (kiln/mx/rnn/rnn_cell.py): names as MXNet 1.9.1 gives them, and
an unrolled LSTM equal to the LSTM equations (gates i, f, c, o) computed with NumPy."""
import numpy as np

from kiln import mod, nd, sym
from kiln.mx import rnn


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
