"""infer_shape through MXNet's same-shape ops (elemwise_add, ...): a variable without a shape
takes the shape of the op's other input, as MXNet 1.9.1 answers (checked with real MXNet:
Variable('a', shape=(2, 3)) + Variable('b') infers ([(2, 3), (2, 3)], [(2, 3)], []))."""
from kiln.mx import sym


def test_shapeless_variable_takes_its_partners_shape():
    a = sym.Variable("a", shape=(2, 3))
    b = sym.Variable("b")
    c = sym.elemwise_add(a, b)
    assert c.infer_shape() == ([(2, 3), (2, 3)], [(2, 3)], [])
    assert c.infer_shape(a=(5, 6)) == ([(5, 6), (5, 6)], [(5, 6)], [])


def test_the_known_input_may_come_second_or_from_an_op():
    a = sym.Variable("a")
    x = sym.Variable("x")
    c = sym.elemwise_mul(a, sym.FullyConnected(x, num_hidden=4, name="fc"))
    args, outs, _ = c.infer_shape(x=(3, 7))
    assert dict(zip(c.list_arguments(), args))["a"] == (3, 4) and outs == [(3, 4)]


def test_nothing_known_is_still_unknown():
    c = sym.elemwise_add(sym.Variable("p"), sym.Variable("q"))
    assert c.infer_shape() == (None, None, None)
