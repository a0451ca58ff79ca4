"""The pass that drops absent output gradients from a backward graph (no 0 * inf)."""
import numpy as onp

from kiln._core.ir import Graph, Node
from kiln.graph.passes.zero_cotangents import prune_zero_cotangents
from kiln.backend.numpy_exec import NumpyProgram


def _input(name, shape=(3,)):
    return Node("input", (), {}, shape, "float32", name=name)


def test_absent_cotangent_chain_becomes_zeros():
    g0, g1, r = _input("g0"), _input("g1"), _input("r")
    scaled = Node("multiply", (g1, r), {}, (3,), "float32")       # g1 * inf -> nan
    total = Node("add", (g0, scaled), {}, (3,), "float32")
    only_dead = Node("negative", (g1,), {}, (3,), "float32")
    graph = Graph([g0, g1, r], [], [total, only_dead])
    pruned = prune_zero_cotangents(graph, [g0, g1], [g1])
    assert pruned.inputs == graph.inputs
    ins = [onp.ones(3, "float32"), onp.zeros(3, "float32"),
           onp.full(3, onp.inf, "float32")]
    total_v, dead_v = NumpyProgram(pruned)(ins, [])
    onp.testing.assert_array_equal(total_v, [1, 1, 1])
    onp.testing.assert_array_equal(dead_v, [0, 0, 0])
    # without pruning, the same inputs give NaN: what the pass exists to avoid
    assert onp.isnan(NumpyProgram(graph)(ins, [])[0]).all()


def test_nothing_absent_changes_nothing():
    g0, r = _input("g0"), _input("r")
    out = Node("multiply", (g0, r), {}, (3,), "float32")
    graph = Graph([g0, r], [], [out])
    assert prune_zero_cotangents(graph, [g0], []).outputs[0] is out


def test_a_node_reading_an_absent_and_a_live_gradient_reads_zeros():
    """add(g0, g1) with g1 absent reads a zero constant, not the input: simplification can
    then drop the add (a scan step's gradient of a step output it never reads)."""
    from kiln.graph.passes.pipeline import run_pipeline
    g0, g1 = _input("g0"), _input("g1")
    total = Node("add", (g1, g0), {}, (3,), "float32")
    graph = Graph([g0, g1], [], [total])
    pruned = prune_zero_cotangents(graph, [g0, g1], [g1])
    assert all(g1 not in n.inputs for n in pruned.nodes)
    assert run_pipeline("generic", pruned).outputs[0] is g0
