"""Gluon's recurrent cells called and unrolled on MXNet 1.x Symbols (kiln/mx/rnn/
gluon_symbolic.py): MXNet's node and argument names, shapes left to infer_shape, and the
values of the graph. Names, shapes and the values marked so were printed by MXNet 1.9.1
on the same code."""
import numpy as np
import pytest

import kiln
from kiln import mod, nd, sym
from kiln.gluon import rnn


@pytest.mark.parametrize("cell_class,gates", [(rnn.RNNCell, 1), (rnn.LSTMCell, 4),
                                              (rnn.GRUCell, 3)])
def test_unroll_on_step_variables_names_and_shapes(cell_class, gates):
    cell = cell_class(100, prefix="rnn_")
    outputs, _ = cell.unroll(3, [sym.var(f"rnn_t{i}_data") for i in range(3)])
    group = sym.Group(outputs)
    assert group.list_outputs() == ["rnn_t0_out_output", "rnn_t1_out_output",
                                    "rnn_t2_out_output"]
    assert group.list_arguments() == ["rnn_t0_data", "rnn_i2h_weight", "rnn_i2h_bias",
                                      "rnn_h2h_weight", "rnn_h2h_bias", "rnn_t1_data",
                                      "rnn_t2_data"]
    args, outs, _ = group.infer_shape(rnn_t0_data=(10, 50), rnn_t1_data=(10, 50),
                                      rnn_t2_data=(10, 50))
    assert outs == [(10, 100)] * 3
    assert args[1:5] == [(gates * 100, 50), (gates * 100,), (gates * 100, 100),
                         (gates * 100,)]


def test_bidirectional_outputs_carry_the_output_prefix():
    cell = rnn.BidirectionalCell(rnn.GRUCell(4, prefix="l_"), rnn.GRUCell(4, prefix="r_"),
                                 output_prefix="bi_")
    outputs, _ = cell.unroll(2, sym.var("data"), layout="NTC", merge_outputs=False)
    group = sym.Group(outputs)
    assert group.list_outputs() == ["bi_t0_output", "bi_t1_output"]
    assert group.list_arguments() == ["data", "l_i2h_weight", "l_i2h_bias", "l_h2h_weight",
                                      "l_h2h_bias", "r_i2h_weight", "r_i2h_bias",
                                      "r_h2h_weight", "r_h2h_bias"]
    assert group.infer_shape(data=(3, 2, 5))[1] == [(3, 8), (3, 8)]


def test_stack_with_residual_merged_values_equal_mxnet():
    stack = rnn.SequentialRNNCell()
    stack.add(rnn.LSTMCell(4, prefix="l0_"))
    stack.add(rnn.ResidualCell(rnn.LSTMCell(4, prefix="l1_")))
    out, states = stack.unroll(3, sym.var("data"), merge_outputs=True)
    assert [s.list_outputs() for s in states] == [
        ["l0_t2_out_output"], ["l0_t2_state_output"], ["l1_t2_out_output"],
        ["l1_t2_state_output"]]
    shapes, outs, _ = out.infer_shape(data=(2, 3, 5))
    assert outs == [(2, 3, 4)]
    args = {n: nd.array(np.random.RandomState(0).uniform(-.5, .5, s))
            for n, s in zip(out.list_arguments(), shapes)}
    got = out.eval(**args)[0].asnumpy()[0, 0]
    # MXNet 1.9.1, the same arguments (each drawn from RandomState(0))
    assert np.allclose(got, [0.3750906, -0.21536562, 0.1866302, 0.01480228], atol=1e-6)


def test_symbol_graph_equals_the_eager_unroll():
    cell = rnn.GRUCell(6, prefix="g_")
    cell.initialize(kiln.init.Uniform(0.5))
    x = nd.array(np.random.RandomState(1).uniform(-1, 1, (2, 4, 3)))
    eager, _ = cell.unroll(4, x, merge_outputs=True)
    out, _ = cell.unroll(4, sym.var("data"), merge_outputs=True)
    values = {p.name: p.data() for p in cell.collect_params().values()}
    got = out.eval(data=x, **values)[0]
    assert np.allclose(got.asnumpy(), eager.asnumpy(), atol=1e-6)


def test_module_initializes_cell_weights_from_their_initializers():
    stack = rnn.SequentialRNNCell()
    stack.add(rnn.LSTMCell(5, i2h_bias_initializer=kiln.init.LSTMBias(2.0), prefix="l0_"))
    out, _ = stack.unroll(1, sym.var("data"), merge_outputs=True)
    m = mod.Module(out, label_names=None, context=kiln.cpu())
    m.bind(data_shapes=[("data", (3, 1, 7))], label_shapes=None)
    m.init_params()
    bias = m.get_params()[0]["l0_i2h_bias"].asnumpy()
    assert np.array_equal(bias, np.hstack([np.zeros(5), 2 * np.ones(5), np.zeros(10)]))


def test_valid_length_graph_binds_and_masks():
    cell = rnn.RNNCell(3, prefix="r_", input_size=2)
    outs, states = cell.unroll(4, sym.var("data", shape=(2, 4, 2)),
                               valid_length=sym.var("valid_length", shape=(2,)),
                               merge_outputs=True, layout="NTC")
    cell.initialize(kiln.init.Uniform(0.5))
    x = nd.array(np.random.RandomState(2).uniform(-1, 1, (2, 4, 2)))
    values = {p.name: p.data() for p in cell.collect_params().values()}
    got = outs.eval(data=x, valid_length=nd.array([1, 3]), **values)[0].asnumpy()
    assert np.all(got[0, 1:] == 0) and np.all(got[1, 3:] == 0)
    eager, _ = cell.unroll(3, x[1:2, :3], merge_outputs=True)
    assert np.allclose(got[1:2, :3], eager.asnumpy(), atol=1e-6)
    last = states[0].eval(data=x, valid_length=nd.array([1, 3]), **values)[0].asnumpy()
    assert np.allclose(last[1], eager.asnumpy()[0, 2], atol=1e-6)
