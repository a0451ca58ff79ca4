"""Each primitive's C lowering is registered into it (kiln/backend/c/lowering.py), and
steps.build_steps decides every node's step with that one lookup."""
import pytest

import kiln  # noqa: F401  (registers the primitives and, through the backend, their lowerings)
from kiln._core.ir import Graph, Node
from kiln.backend.c import lowering
from kiln.backend.c.steps import build_steps
from kiln.graph.passes import run_pipeline
from kiln.ops.subgraph import CONTROL_OPS
from kiln.ops.registry import REGISTRY


def test_every_primitive_has_a_c_lowering_of_its_kind():
    for name, prim in REGISTRY.items():
        low = prim.lowerings.get("c")
        assert low is not None, name
        assert isinstance(low, lowering.Elementwise) == prim.elementwise, name
        assert (low is lowering.DRAWN) == prim.random, name
        assert isinstance(low, lowering.Control) == (name in CONTROL_OPS), name


def _graph():
    x = Node("input", (), {}, (3, 4), "float32", name="x")
    w = Node("input", (), {}, (5, 4), "float32", name="w")
    wt = Node("transpose", (w,), {"axes": (1, 0)}, (4, 5), "float32")
    y = Node("matmul", (x, wt), {}, (3, 5), "float32")
    z = Node("relu", (Node("exp", (y,), {}, (3, 5), "float32"),), {}, (3, 5), "float32")
    s = Node("sum", (z,), {"axis": 1}, (3,), "float32")
    r = Node("reshape", (s,), {"shape": (3, 1)}, (3, 1), "float32")
    return run_pipeline("generic", Graph([x, w], [], [r], "lowerings"))


def test_each_node_takes_the_step_its_lowering_names():
    steps = build_steps(_graph())
    assert [(s.kind, [n.op for n in s.nodes]) for s in steps] == [
        ("alias", ["transpose"]), ("matmul", ["matmul", "exp", "relu"]), ("op", ["sum"]),
        ("alias", ["reshape"])]
    assert steps[2].lowering is REGISTRY["sum"].lowerings["c"]


def test_an_op_without_a_c_lowering_is_not_lowerable(monkeypatch):
    monkeypatch.delitem(REGISTRY["sum"].lowerings, "c")
    with pytest.raises(lowering.NotLowerable, match="op sum"):
        build_steps(_graph())
