"""Registry cases for the control-flow primitives (cond, while_loop, while_loop_grad, scan),
used by test_grad_registry.CASES: their attributes are subgraphs, built here by tracing."""
import numpy as onp

from kiln._core.ir import Node
from kiln.graph.subgraph import trace_in_subcontext
from kiln.ops.subgraph import Subgraph
from kiln.ndarray import ndarray


def subgraph(fn, *avals):
    """Trace fn on symbolic inputs with these (shape, dtype) pairs into a Subgraph."""
    ins = [Node("input", (), {}, s, onp.dtype(d), name=f"in{k}") for k, (s, d) in enumerate(avals)]
    ctx, out = trace_in_subcontext(fn, [ndarray._from_node(n) for n in ins], "case", ins)
    outs = list(out) if isinstance(out, (list, tuple)) else [out]
    return Subgraph(ins, [], [ctx.node_of(o) for o in outs], "case")


def control_cases(C):
    f3 = ((3,), "float64")
    then_g = subgraph(lambda a, b: (a * b, a - 1.0), f3, f3)
    else_g = subgraph(lambda a, b: (a + b, b * b), f3, f3)
    cond_g = subgraph(lambda y, w: (y * y).sum() < 4.0, f3, f3)
    body_g = subgraph(lambda y, w: y * w + 0.25, f3, f3)
    y0 = onp.array([0.1, 0.2, 0.3])
    w = onp.array([1.1, 1.25, 1.4])
    loop = dict(cond_graph=cond_g, body_graph=body_g, n_carried=1, max_iterations=None)
    return {
        "cond": [C(onp.array(True), y0, w, then_graph=then_g, else_graph=else_g, index=0),
                 C(onp.array(False), y0, w, then_graph=then_g, else_graph=else_g, index=1)],
        "while_loop": [C(y0, w, index=0, **loop),
                       C(y0, w, index=0, **dict(loop, max_iterations=2))],
        "while_loop_grad": [C(y0, w, onp.ones(3), out_index=0, in_index=1, fd=False, **loop)],
        **scan_cases(C),
    }


def scan_cases(C):
    """A tiny recurrence h' = tanh(h * w + x_t), y_t = h' * x_t, forward and reversed."""
    f3 = ((3,), "float64")
    body = subgraph(lambda h, x, w: ((h * w + x).tanh(), (h * w + x).tanh() * x), f3, f3, f3)
    h0 = onp.array([0.1, -0.2, 0.3])
    xs = onp.array([[0.5, -0.4, 0.2], [0.1, 0.3, -0.6], [-0.2, 0.7, 0.4], [0.3, 0.1, 0.2]])
    w = onp.array([1.1, -0.8, 0.6])
    attrs = dict(body=body, n_carried=1, n_xs=1, n_saved=0)
    from kiln.ops import REGISTRY
    out = REGISTRY["scan"].impl(h0, xs, w, reverse=True, **attrs)
    g = onp.linspace(-1, 1, out.size)
    return {"scan": [C(h0, xs, w, reverse=False, **attrs), C(h0, xs, w, reverse=True, **attrs)],
            "scan_grad": [C(h0, xs, w, out, g, reverse=True, fd=False, **attrs)]}
