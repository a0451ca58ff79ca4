"""autograd.get_symbol (kiln/mx/sym/recorded.py): the recorded computation as a Symbol, with
MXNet 1.9.1's argument and output names (printed by real MXNet on the same code)."""
import numpy as np

from kiln import autograd, nd


def test_recorded_computation_as_a_symbol_with_mxnet_names():
    x = nd.ones((1,))
    x.attach_grad()
    c = nd.ones((1,)) * 3           # an array without attach_grad: a variable too
    with autograd.record():
        w = nd.exp(x * c + 2 * x - 1)
    sym = autograd.get_symbol(w)
    assert sym.list_arguments() == ["var0", "null1"]                 # MXNet 1.9.1
    assert sym.list_outputs() == ["node_4_output"]                   # MXNet 1.9.1
    # the scalars are kept: the symbol computes what was recorded
    out = sym.eval(var0=nd.array([1.0]), null1=nd.array([3.0]))[0]
    np.testing.assert_allclose(out.asnumpy(), w.asnumpy(), rtol=1e-6)


def test_each_array_with_a_gradient_is_one_variable():
    x, z = nd.ones((1,)), nd.ones((1,))
    x.attach_grad()
    z.attach_grad()
    with autograd.record():
        y = x * x + 2 * x - 1
        v = x * x + 2 * z - 1
    assert len(autograd.get_symbol(y).list_arguments()) == 1
    assert len(autograd.get_symbol(v).list_arguments()) == 2
