"""mx.sym behaviour MXNet 1.9.1 has and its unit tests check (values checked with it):
composing a symbol by calling it, ops called with no input at all, partial type inference,
shape inference that waits for the layer shaping a weight, BlockGrad in bind/backward,
abs() and bool() of a Symbol."""
import numpy as np
import pytest

from kiln import nd, sym
from kiln.mx.base import NotImplementedForSymbol


def test_an_op_without_inputs_makes_its_variables_and_composes():
    net2 = sym.FullyConnected(name="fc3", num_hidden=10)
    assert net2.list_arguments() == ["fc3_data", "fc3_weight", "fc3_bias"]
    x, w = sym.var("x"), sym.var("w")
    doubled = (x * 2)(x=w, name="dbl")
    assert doubled.list_arguments() == ["w"] and doubled.list_outputs() == ["dbl_output"]
    net1 = sym.FullyConnected(data=sym.var("data"), name="fc1", num_hidden=4)
    composed = net2(fc3_data=net1, name="composed")
    assert composed.list_arguments() == ["data", "fc1_weight", "fc1_bias", "fc3_weight",
                                         "fc3_bias"]
    assert composed.infer_shape(data=(2, 3))[1] == [(2, 10)]
    assert len(sym.Group([composed, net1]).list_outputs()) == 2


def test_partial_type_inference_leaves_the_unknown_as_none():
    f32 = sym.Cast(data=sym.var("data"), dtype="float32")
    mlp = sym.SoftmaxOutput(data=sym.FullyConnected(data=f32, name="fc1", num_hidden=8),
                            name="softmax")
    arg, out, aux = mlp.infer_type_partial()
    assert arg == [None, np.float32, np.float32, np.float32] and out == [np.float32]
    arg, _, _ = mlp.infer_type(data=np.float16)
    assert arg == [np.float16, np.float32, np.float32, np.float32]


def test_a_weight_read_before_its_layer_gets_the_layers_shape():
    fc = sym.FullyConnected(data=sym.var("data"), num_hidden=1, no_bias=True, name="fc")
    net = sym.sum(sym.abs(fc.get_internals()["fc_weight"])) + sym.sum(fc)
    args, outs, _ = net.infer_shape(data=(5, 13))
    assert dict(zip(net.list_arguments(), args)) == {"fc_weight": (1, 13), "data": (5, 13)}
    net.simple_bind(data=(5, 13))


def test_block_grad_in_bind_and_backward():
    x, idx = sym.var("x"), sym.var("idx")
    taken = sym.batch_take(x, idx)
    types = {"x": np.float32, "idx": np.int32}
    exe = sym.stop_gradient(taken).simple_bind(x=(10, 10), idx=(10,), type_dict=types)
    exe.forward()                        # not is_train: backward still runs, as in MXNet
    exe.backward()
    assert not exe.grad_dict["x"].asnumpy().any()
    with pytest.raises(Exception, match="batch_take is non-differentiable"):
        taken.simple_bind(x=(10, 10), idx=(10,), type_dict=types)     # as MXNet 1.9.1 raises


def test_abs_and_bool_of_a_symbol():
    data = sym.var("data")
    out = abs(data).eval(data=nd.array([-1.0, 2.0]))[0]
    assert out.asnumpy().tolist() == [1.0, 2.0]
    with pytest.raises(NotImplementedForSymbol):
        bool(data)
    assert data._gen_atomic_symbol().list_arguments() == ["data"]
    rnn = sym.RNN(sym.var("d"), sym.var("p"), sym.var("h0"), sym.var("h1"), state_size=4,
                  num_layers=1, state_outputs=True, mode="lstm")
    assert len(rnn._gen_atomic_symbol().list_arguments()) == 4
