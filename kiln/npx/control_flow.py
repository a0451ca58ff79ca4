"""npx.cond / npx.while_loop / npx.foreach with MXNet's signatures.

Eagerly (or with a Python-valued condition) they are plain Python. While hybridize traces
and the condition is a symbol, cond and while_loop become graph ops with subgraphs
(kiln/ops/control.py); foreach becomes a `scan` node (kiln/npx/_foreach_scan.py).
"""
from .._core import autograd
from .._core.base import KilnError, where_in_user_code
from ..graph.convert_runtime import symbolic


def _as_list(value):
    if value is None:
        return [], True
    if isinstance(value, (list, tuple)):
        return list(value), False
    return [value], True


def cond(pred, then_func, else_func, inputs=None):
    """then_func(*inputs) if pred else else_func(*inputs); pred a scalar array or bool."""
    args, _ = _as_list(inputs)
    if not symbolic(pred):
        return then_func(*args) if bool(pred) else else_func(*args)
    from ..graph.control_trace import emit_cond
    return emit_cond(pred, then_func, else_func, tuple(args), what="npx.cond")


def while_loop(cond, func, loop_vars, max_iterations=None):
    """Run `func` while `cond(*loop_vars)` holds; returns (outputs, states).

    func(*loop_vars) returns (step_output, new_loop_vars). The step outputs are stacked
    along a new first axis of length max_iterations (rows after the last step are zeros),
    as in MXNet; without max_iterations, eagerly, only the steps taken are stacked."""
    from .. import np
    states, single_state = _as_list(loop_vars)

    def split(result):
        if not (isinstance(result, (list, tuple)) and len(result) == 2):
            raise KilnError("npx.while_loop: func must return (step_output, new_loop_vars)"
                            f"{where_in_user_code()}")
        outs, _ = _as_list(result[0])
        new, _ = _as_list(result[1])
        if len(new) != len(states):
            raise KilnError(f"npx.while_loop: func returned {len(new)} loop variables for "
                            f"{len(states)}{where_in_user_code()}")
        return outs, new

    first = cond(*states)
    if not symbolic(first) and not any(symbolic(s) for s in states):
        return _eager_while(cond, func, states, max_iterations, split, single_state)
    if max_iterations is None:
        raise KilnError("npx.while_loop: max_iterations is required while hybridize traces "
                        f"(it fixes the shape of the stacked outputs){where_in_user_code()}")
    return _traced_while(cond, func, states, int(max_iterations), split, single_state, np)


def _eager_while(cond, func, states, max_iterations, split, single_state):
    from .. import np
    steps, outputs = 0, []
    while (max_iterations is None or steps < max_iterations) and bool(cond(*states)):
        outs, states = split(func(*states))
        outputs.append(outs)
        steps += 1
    stacked = []
    if not outputs and max_iterations:
        # no step ran: one probe step (discarded) gives the shapes of the zero outputs
        from .._core import autograd
        with autograd.pause():
            probe, _ = split(func(*states))
        stacked = [np.zeros((max_iterations,) + tuple(o.shape), dtype=o.dtype) for o in probe]
    if outputs:
        for k in range(len(outputs[0])):
            rows = [o[k] for o in outputs]
            if max_iterations is not None and steps < max_iterations:
                rows += [np.zeros_like(rows[0])] * (max_iterations - steps)
            stacked.append(np.stack(rows))
    return _pack(stacked, states, single_state)


def _pack(outputs, states, single_state):
    outs = outputs[0] if len(outputs) == 1 else outputs
    return outs, (states[0] if single_state else states)


def _traced_while(cond, func, states, max_iterations, split, single_state, np):
    from ..graph.control_trace import emit_while
    from ..graph.subgraph import trace_in_subcontext
    n = len(states)
    # trace one step to learn the step outputs' shapes (the subtrace is thrown away)
    _, probe = trace_in_subcontext(lambda *s: split(func(*s))[0], states, "probe")
    buffers = [np.zeros((max_iterations,) + tuple(o.shape), dtype=o.dtype) for o in probe]
    rows = np.arange(max_iterations)

    def loop_cond(t, *rest):
        return np.logical_and(t < max_iterations, cond(*rest[:n]))

    def loop_body(t, *rest):
        outs, new = split(func(*rest[:n]))
        bufs = []
        for o, buf in zip(outs, rest[n:]):
            mask = (rows == t).reshape((max_iterations,) + (1,) * o.ndim)
            bufs.append(np.where(mask, np.expand_dims(o, 0), buf))
        return (t + 1,) + tuple(new) + tuple(bufs)

    t0 = np.array(0, dtype="int64")
    out = emit_while(loop_cond, loop_body, (t0,) + tuple(states) + tuple(buffers),
                     what="npx.while_loop")
    return _pack(list(out[1 + n:]), list(out[1:1 + n]), single_state)


def foreach(body, data, init_states):
    """Apply body(data[i], states) -> (outputs, new_states) along data's first axis;
    returns (stacked outputs, final states).

    While hybridize traces, body is traced once as the body of a `scan` node, so the
    compiled program loops itself and its gradient runs the body's gradient in reverse.
    That needs the states and outputs to share one dtype, the data arrays another, and no
    random op in the body; otherwise (and eagerly) the loop runs step by step."""
    from .._core import trace
    datas, single_data = _as_list(data)
    states, single_state = _as_list(init_states)
    if not datas:
        raise KilnError(f"npx.foreach: data must be an array or a list of arrays, got none"
                        f"{where_in_user_code()}")
    length = datas[0].shape[0]
    if any(d.shape[:1] != (length,) for d in datas):
        raise KilnError(f"npx.foreach: the data arrays must share their first axis, got "
                        f"shapes {[tuple(d.shape) for d in datas]}{where_in_user_code()}")
    if length and trace.current() is not None:
        from ._foreach_scan import foreach_as_scan
        lowered = foreach_as_scan(body, datas, single_data, states, single_state)
        if lowered is not None:
            outputs, states = lowered
            return _pack(outputs, states, single_state)
    return _foreach_steps(body, datas, single_data, states, single_state)


class Rows(autograd.Function):
    """xs -> its rows xs[0], xs[1], ...: one tape entry whose backward stacks the rows'
    gradients (indexing row by row would give each row a full-size gradient: T^2 work)."""

    def forward(self, xs):
        return [xs[t] for t in range(xs.shape[0])]

    def backward(self, *grads):
        from .. import np as knp
        return knp.stack(grads)


def _foreach_steps(body, datas, single_data, states, single_state):
    from .._core import autograd
    from .. import np
    length = datas[0].shape[0]
    # one tape entry per data array for all its rows (row by row would be T^2 work)
    rows = [Rows()(d) if autograd.is_recording() else [d[i] for i in range(length)]
            for d in datas]
    outputs = []
    for i in range(length):
        item = rows[0][i] if single_data else [r[i] for r in rows]
        outs, new = body(item, states[0] if single_state else states)
        outs, _ = _as_list(outs)
        states, _ = _as_list(new)
        outputs.append(outs)
    stacked = [np.stack([o[k] for o in outputs]) for k in range(len(outputs[0]))] \
        if outputs else []
    return _pack(stacked, states, single_state)
