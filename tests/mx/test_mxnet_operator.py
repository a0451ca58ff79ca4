"""mx.operator: CustomOp/CustomOpProp through nd.Custom, with gradients from backward()."""
import numpy as onp
import pytest

from mx_alias_fixture import mx  # noqa: F401  (the fixture)
from kiln.base import KilnError


def _register(mx):
    class Softmax(mx.operator.CustomOp):
        # MXNet's documented example: a softmax output layer whose gradient is y - onehot
        def forward(self, is_train, req, in_data, out_data, aux):
            x = in_data[0].asnumpy()
            y = onp.exp(x - x.max(axis=1, keepdims=True))
            self.assign(out_data[0], req[0], mx.nd.array(y / y.sum(axis=1, keepdims=True)))

        def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
            label = in_data[1].asnumpy().ravel().astype(int)
            y = out_data[0].asnumpy()
            y[onp.arange(label.shape[0]), label] -= 1.0
            self.assign(in_grad[0], req[0], mx.nd.array(y))

    @mx.operator.register("kiln_test_softmax")
    class SoftmaxProp(mx.operator.CustomOpProp):
        def __init__(self, scale="1"):
            super().__init__(need_top_grad=False)
            assert isinstance(scale, str)          # MXNet passes attributes as strings

        def list_arguments(self):
            return ["data", "label"]

        def infer_shape(self, in_shape):
            return [in_shape[0], (in_shape[0][0],)], [in_shape[0]], []

        def create_operator(self, ctx, shapes, dtypes):
            return Softmax()


def test_custom_op_forward_and_backward(mx):
    from mxnet import autograd, gluon
    _register(mx)
    assert "kiln_test_softmax" in mx.operator.get_all_registered_operators()
    x = mx.nd.array(onp.random.RandomState(0).randn(4, 3).astype(onp.float32))
    label = mx.nd.array([0, 2, 1, 2])
    x.attach_grad()
    with autograd.record():
        y = mx.nd.Custom(x, label, op_type="kiln_test_softmax", scale=2)
    y.backward()
    ref = onp.exp(x.asnumpy())
    ref /= ref.sum(1, keepdims=True)
    onp.testing.assert_allclose(y.asnumpy(), ref, rtol=1e-6)
    ref[onp.arange(4), [0, 2, 1, 2]] -= 1
    onp.testing.assert_allclose(x.grad.asnumpy(), ref, rtol=1e-6, atol=1e-7)
    named = mx.nd.Custom(data=x, label=label, op_type="kiln_test_softmax")
    onp.testing.assert_allclose(named.asnumpy(), y.asnumpy())

    class Net(gluon.HybridBlock):
        def hybrid_forward(self, F, a, b):
            return F.Custom(a, b, op_type="kiln_test_softmax")
    net = Net()
    net.hybridize()
    with pytest.warns(Warning, match="eagerly"):
        onp.testing.assert_allclose(net(x, label).asnumpy(), y.asnumpy())
    s = mx.sym.Custom(data=mx.sym.var("x"), label=mx.sym.var("y"), op_type="kiln_test_softmax",
                      name="sm")
    assert s.list_arguments() == ["x", "y"]
    # a Symbol holding a Custom op runs it eagerly, as MXNet runs it in an executor
    onp.testing.assert_allclose(s.eval(x=x, y=label)[0].asnumpy(), y.asnumpy())
    with pytest.raises(KilnError, match="not registered"):
        mx.nd.Custom(x, op_type="nope")
    with pytest.raises(KilnError, match="CustomOpProp"):
        mx.operator.register("bad")(object)


def test_all_registered_operators_name_mxnets_ops(mx):
    """As MXNet 1.9.1's: a sorted list holding the backend operator names."""
    ops = mx.operator.get_all_registered_operators()
    assert isinstance(ops, list) and ops == sorted(ops)
    for name in ("Activation", "Convolution", "softmax", "CTCLoss", "Custom"):
        assert name in ops


def test_numpy_op_runs_in_a_bound_symbol(mx):
    """MXNet's deprecated NumpyOp: forward/backward fill NumPy arrays in place; the values
    are MXNet 1.9.1's for this op."""
    class SquarePlus(mx.operator.NumpyOp):
        def list_arguments(self):
            return ["a", "b"]

        def infer_shape(self, in_shape):
            return in_shape, [in_shape[0]]

        def forward(self, in_data, out_data):
            out_data[0][:] = in_data[0] ** 2 + in_data[1]

        def backward(self, out_grad, in_data, out_data, in_grad):
            in_grad[0][:] = 2 * in_data[0] * out_grad[0]
            in_grad[1][:] = out_grad[0]

    with pytest.warns(UserWarning, match="deprecated"):
        op = SquarePlus()
    s = op.get_symbol(mx.sym.Variable("a"), mx.sym.Variable("b"), name="sq")
    assert s.list_arguments() == ["a", "b"]
    ga, gb = mx.nd.zeros(3), mx.nd.zeros(3)
    exe = s.bind(mx.cpu(), args={"a": mx.nd.array([1.0, -2.0, 3.0]),
                                 "b": mx.nd.array([0.5, 0.5, 0.5])},
                 args_grad={"a": ga, "b": gb})
    assert exe.forward(is_train=True)[0].asnumpy().tolist() == [1.5, 4.5, 9.5]
    exe.backward(mx.nd.array([1.0, 2.0, 3.0]))
    assert ga.asnumpy().tolist() == [2.0, -8.0, 18.0]
    assert gb.asnumpy().tolist() == [1.0, 2.0, 3.0]
