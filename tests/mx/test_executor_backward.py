"""Executor.backward's writes into bound gradient arrays, as MXNet 1.9.1's: an integer
argument (a softmax length, take's indices) has no gradient, and with grad_req 'write'
its gradient array is overwritten with zeros, whatever it held."""
import numpy as np

import kiln
from kiln import nd, sym


def _bind(symbol, args, grads):
    exe = symbol.bind(kiln.cpu(), args, args_grad=grads)
    exe.forward(is_train=True)
    exe.backward([nd.ones(exe.outputs[0].shape)])
    return exe


def test_softmax_length_gradient_is_written_zero():
    s = sym.softmax(data=sym.Variable("data"), length=sym.Variable("length"),
                       use_length=True, axis=1)
    data = nd.array(np.random.RandomState(0).randn(2, 4, 3))
    length = nd.array([[1, 2, 3], [4, 2, 1]], dtype=np.int32)
    exe = _bind(s, {"data": data, "length": length},
                {"data": nd.ones((2, 4, 3)), "length": nd.ones((2, 3), dtype=np.int32)})
    assert (exe.grad_dict["length"].asnumpy() == 0).all()
    assert np.allclose(exe.grad_dict["data"].asnumpy(), 0, atol=1e-6)


def test_take_indices_gradient_is_written_zero():
    s = sym.take(sym.Variable("a"), sym.Variable("i"))
    exe = _bind(s, {"a": nd.ones((3, 2)), "i": nd.array([0, 2], dtype=np.int32)},
                {"a": nd.zeros((3, 2)), "i": nd.array([5, 5], dtype=np.int32)})
    assert exe.grad_dict["i"].asnumpy().tolist() == [0, 0]
    assert exe.grad_dict["a"].asnumpy().tolist() == [[1, 1], [0, 0], [1, 1]]


def test_backward_after_an_inference_forward_differentiates_the_inference_graph():
    """MXNet 1.9.1: backward(is_train=False) after forward(is_train=False) differentiates
    dropout as the identity; after a training forward the gradient is the kept mask."""
    y = sym.Dropout(sym.var("data"), p=0.5)
    exe = y.simple_bind(kiln.cpu(), data=(4, 5))
    exe.arg_arrays[0][:] = 2
    exe.forward(is_train=True)
    exe.backward([nd.ones((4, 5))])
    assert (exe.grad_arrays[0].asnumpy() == exe.outputs[0].asnumpy() / 2).all()
    exe.forward(is_train=False)
    assert (exe.outputs[0].asnumpy() == 2).all()
    exe.backward([nd.ones((4, 5))], is_train=False)
    assert (exe.grad_arrays[0].asnumpy() == 1).all()


def test_dropout_of_everything_is_nan_in_training_as_in_mxnet():
    """MXNet scales kept elements by 1 / (1 - p): p=1 gives 0 * inf, NaN (MXNet 1.9.1)."""
    exe = sym.Dropout(sym.var("data"), p=1.0).simple_bind(kiln.cpu(), data=(2, 2))
    exe.arg_arrays[0][:] = 1
    assert np.isnan(exe.forward(is_train=True)[0].asnumpy()).all()
    assert (exe.forward(is_train=False)[0].asnumpy() == 1).all()
