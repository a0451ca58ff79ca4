"""The time loop of a recurrent layer: step(x_t, states) -> (y_t, new_states) along axis 0.

Eagerly it is a Python loop over `step`. While hybridize traces, `step` is traced once as
the body of a `scan` node (kiln/ops/scan.py), so the compiled program loops over time
itself, for any length, and its gradient runs the body's gradient in reverse.
"""
from ..._core import autograd
from ... import np as knp
from ..._core import trace
from ...npx.control_flow import Rows


def run(step, xs, states, reverse=False):
    """(ys stacked along axis 0, final states); reverse walks t = T-1 .. 0."""
    if trace.current() is not None:
        from ...graph.scan_trace import emit_scan
        return emit_scan(step, xs, states, reverse=reverse)
    length = xs.shape[0]
    rows = Rows()(xs) if autograd.is_recording() else [xs[t] for t in range(length)]
    ys = [None] * length
    for t in (range(length - 1, -1, -1) if reverse else range(length)):
        ys[t], states = step(rows[t], states)
    return knp.stack(ys), states
