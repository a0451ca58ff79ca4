"""The gather_pieces pass (kiln/graph/passes/gather_pieces.py) on hand-built graphs: a sum of
slice gradients placed into zeros becomes one concatenation with the same value, and sums
it cannot gather (overlaps, broadcasting terms, pieces on different axes) stay as they are."""
import numpy as onp

from kiln._core.ir import Graph
from kiln.graph.passes.gather_pieces import gather_pieces
from test_graph_passes import F32, inp, op, run


def zeros(shape):
    from test_graph_passes import const
    return const(onp.zeros(shape, F32))


def place(piece, shape, axis, begin):
    b = [0] * len(shape)
    e = list(shape)
    b[axis], e[axis] = begin, begin + piece.shape[axis]
    return op("slice_assign", zeros(shape), piece, out=shape, begin=tuple(b), end=tuple(e),
              step=(1,) * len(shape))


def values(*shapes, seed=0):
    rng = onp.random.default_rng(seed)
    return [rng.normal(size=s).astype(F32) for s in shapes]


def test_gate_gradients_become_one_concatenation():
    shape = (3, 8)
    a, b, c, d = (inp((3, 2), n) for n in "abcd")
    g = inp(shape, "g")
    total = g
    for k, piece in enumerate((c, a, d, b)):     # added in any order
        total = op("add", total, place(piece, shape, 1, [4, 0, 6, 2][k]), out=shape)
    graph = Graph([a, b, c, d, g], [], [total])
    gathered = gather_pieces(graph)
    assert "slice_assign" not in gathered.ops and gathered.ops.count("concatenate") == 1
    assert gathered.ops.count("add") == 1
    xs = values((3, 2), (3, 2), (3, 2), (3, 2), shape)
    onp.testing.assert_array_equal(run(gathered, *xs)[0], run(graph, *xs)[0])
    onp.testing.assert_array_equal(run(gathered, *xs)[0],
                                   xs[4] + onp.concatenate(xs[:4], axis=1))


def test_gaps_between_pieces_are_zeros():
    shape = (5, 4)
    a, b = inp((1, 4), "a"), inp((2, 4), "b")
    graph = Graph([a, b], [], [op("add", place(a, shape, 0, 1), place(b, shape, 0, 3),
                                  out=shape)])
    gathered = gather_pieces(graph)
    assert gathered.ops == ["concatenate"]
    xs = values((1, 4), (2, 4))
    expected = onp.zeros(shape, F32)
    expected[1:2], expected[3:5] = xs
    onp.testing.assert_array_equal(run(gathered, *xs)[0], expected)


def test_sums_it_cannot_gather_are_left_alone():
    shape = (4, 4)
    a, b = inp((2, 4), "a"), inp((4, 2), "b")
    overlap = op("add", place(a, shape, 0, 0), place(a, shape, 0, 1), out=shape)
    other_axes = op("add", place(a, shape, 0, 0), place(b, shape, 1, 2), out=shape)
    bias = inp((4,), "bias")
    broadcast = op("add", op("add", place(a, shape, 0, 0), place(a, shape, 0, 2), out=shape),
                   bias, out=shape)
    for out in (overlap, other_axes, broadcast):
        graph = Graph([a, b, bias], [], [out])
        gathered = gather_pieces(graph)
        xs = values((2, 4), (4, 2), (4,))
        onp.testing.assert_array_equal(run(gathered, *xs)[0], run(graph, *xs)[0])
        if out is not broadcast:
            assert "concatenate" not in gathered.ops


def test_a_shared_partial_sum_is_not_folded_into_its_users():
    shape = (2, 4)
    a, b = inp((2, 2), "a"), inp((2, 2), "b")
    part = op("add", place(a, shape, 1, 0), place(b, shape, 1, 2), out=shape)
    twice = op("add", part, part, out=shape)        # `part` has two uses
    graph = Graph([a, b], [], [twice, part])
    gathered = gather_pieces(graph)
    xs = values((2, 2), (2, 2))
    for got, want in zip(run(gathered, *xs), run(graph, *xs)):
        onp.testing.assert_array_equal(got, want)


def test_a_large_gap_is_filled_when_the_program_runs(monkeypatch):
    import importlib
    module = importlib.import_module("kiln.graph.passes.gather_pieces")
    monkeypatch.setattr(module, "MAX_FOLDED_ELEMENTS", 4)
    shape = (6, 2)
    a, b = inp((1, 2), "a"), inp((1, 2), "b")
    graph = Graph([a, b], [], [op("add", place(a, shape, 0, 0), place(b, shape, 0, 5),
                                  out=shape)])
    gathered = module.gather_pieces(graph)
    assert "full" in gathered.ops
    xs = values((1, 2), (1, 2))
    onp.testing.assert_array_equal(run(gathered, *xs)[0], run(graph, *xs)[0])
