"""Symbol shape inference through elementwise operators, as MXNet 1.9.1's: the operands of
elemwise_add (`a + b`), add_n, ... have one shape, so a variable operand without a shape
takes the other's (the values below are MXNet 1.9.1's infer_shape answers)."""
import kiln
from kiln import nd, sym


def test_a_variable_added_to_a_layer_output_takes_its_shape():
    s, a = sym.Variable("s"), sym.Variable("a")
    y = sym.FullyConnected(a, num_hidden=4)
    assert (s + y).infer_shape(a=(2, 3)) == ([(2, 4), (2, 3), (4, 3), (4,)], [(2, 4)], [])
    assert (y + s).infer_shape(a=(2, 3))[0][-1] == (2, 4)


def test_add_n_operands_take_the_known_shape():
    p, q = sym.Variable("p"), sym.Variable("q")
    y = sym.FullyConnected(sym.Variable("a"), num_hidden=4)
    assert sym.add_n(p, y, q).infer_shape(a=(2, 3)) == (
        [(2, 4), (2, 3), (4, 3), (4,), (2, 4)], [(2, 4)], [])


def test_simple_bind_allocates_the_inferred_operand():
    s = sym.Variable("s")
    y = sym.FullyConnected(sym.Variable("a"), num_hidden=4) + s
    exe = y.simple_bind(kiln.cpu(), a=(2, 3))
    assert exe.arg_dict["s"].shape == (2, 4)
    exe.arg_dict["s"][:] = nd.ones((2, 4))
    assert exe.forward()[0].shape == (2, 4)


def test_broadcasting_operators_do_not_guess_a_shape():
    s = sym.Variable("s")
    y = sym.broadcast_add(s, sym.FullyConnected(sym.Variable("a"), num_hidden=4))
    assert y.infer_shape(a=(2, 3)) == (None, None, None)
