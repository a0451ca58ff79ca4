"""Executor.get_optimized_symbol: common subexpressions merged at bind unless
MXNET_ELIMINATE_COMMON_EXPR=0. The internals counts and output names are real MXNet
1.9.1's for the same symbols."""
import numpy as np

from kiln.mx import sym


def _bound(symbol, monkeypatch, flag=None):
    if flag is not None:
        monkeypatch.setenv("MXNET_ELIMINATE_COMMON_EXPR", flag)
    return symbol.simple_bind(a=(2, 3), b=(2, 3))


def test_repeated_subexpression_is_computed_once(monkeypatch):
    a, b = sym.var("a"), sym.var("b")
    s = (a + b) * (a + b)
    optimized = _bound(s, monkeypatch).get_optimized_symbol()
    assert len(s.get_internals()) == 5 and len(optimized.get_internals()) == 4
    ex = optimized.simple_bind(a=(2, 3), b=(2, 3))
    out = ex.forward(a=np.full((2, 3), 1.0), b=np.full((2, 3), 2.0))[0]
    assert np.allclose(out.asnumpy(), 9.0)


def test_merged_outputs_get_copies_and_stay_two(monkeypatch):
    a, b = sym.var("a"), sym.var("b")
    product = a * b
    s = sym.Group([product, a * b])
    optimized = _bound(s, monkeypatch).get_optimized_symbol()
    assert len(optimized.get_internals()) == 4
    name = product.name
    assert optimized.list_outputs() == [f"{name}_output", f"{name}_0_copy_output"]


def test_random_ops_and_the_switch_keep_the_graph(monkeypatch):
    a = sym.var("a")
    s = sym.Dropout(a) + sym.Dropout(a)
    assert len(_bound(s, monkeypatch).get_optimized_symbol().get_internals()) == 4
    b = sym.var("b")
    twice = (a + b) + (a + b)
    off = _bound(twice, monkeypatch, "0").get_optimized_symbol()
    assert len(off.get_internals()) == len(twice.get_internals()) == 5
