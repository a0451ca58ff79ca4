"""`scan`: a loop over the leading axis of its sequence operands, and its gradient
`scan_grad`. This is MXNet's `foreach` as one graph op; recurrent layers use it
(kiln/gluon/rnn/time_loop.py) so a compiled program loops over time itself.

Operands: `scan(*carried, *xs, *invariants)`. The body subgraph takes the carried values,
one row of each sequence (x[t]) and the invariants (outer values the body reads), and
returns the next carried values (same shapes and dtypes) and the step outputs y_t.
`reverse` walks t = T-1 .. 0.

The IR has one output per node, and a loop must run its backward once however many of its
results are used. So `scan` returns ONE flat array: every final carried value, then every
stacked output (T, *y_t.shape), each raveled, concatenated (they share one dtype); the
caller slices it apart. Likewise `scan_grad` returns the gradients of all operands of that
dtype in one flat array (operands of other dtypes get none), and scan's gradient rule slices
it. Backward keeps the carried values of every step (T x their size, as PyTorch keeps an
LSTM's states), then runs the body's gradient graph in reverse, writing x[t]'s gradient
into its row and summing the invariants' gradients.
"""
import numpy as _np

from .registry import register, REGISTRY


def _size(shape):
    n = 1
    for d in shape:
        n *= int(d)
    return n


def layout(body, n_carried, length):
    """(shape of each piece of scan's flat result, in order): carried, then stacked ys."""
    outs = body.outputs
    return ([tuple(o.shape) for o in outs[:n_carried]]
            + [(length,) + tuple(o.shape) for o in outs[n_carried:]])


def _length(operands, n_carried):
    return int(operands[n_carried].shape[0])


def _scan_shape(*operands, body, n_carried, n_xs, reverse):
    pieces = layout(body, n_carried, _length(operands, n_carried))
    return (sum(_size(s) for s in pieces),), body.outputs[0].dtype


def grad_dtype(body):
    return body.outputs[0].dtype


def _has_grad(x, dtype):
    return x.dtype == dtype


def _scan_grad(g, out, *operands, body, n_carried, n_xs, reverse):
    from ..np import reshape
    flat = REGISTRY["scan_grad"](*operands, g, body=body, n_carried=n_carried, n_xs=n_xs,
                                 reverse=reverse)
    dtype, grads, offset = grad_dtype(body), [], 0
    for x in operands:
        if not _has_grad(x, dtype):
            grads.append(None)
            continue
        size = _size(x.shape)
        grads.append(reshape(flat[offset:offset + size], tuple(x.shape)))
        offset += size
    return grads


def _steps(length, reverse):
    return range(length - 1, -1, -1) if reverse else range(length)


def _forward(operands, body, n_carried, n_xs, reverse, history=None):
    from ..graph.subgraph import run
    carried = list(operands[:n_carried])
    xs, invariants = operands[n_carried:n_carried + n_xs], list(operands[n_carried + n_xs:])
    length = _length(operands, n_carried)
    ys = [_np.empty((length,) + tuple(o.shape), o.dtype) for o in body.outputs[n_carried:]]
    for t in _steps(length, reverse):
        if history is not None:
            history.append(carried)
        outs = run(body, carried + [x[t] for x in xs] + invariants)
        carried = [_np.array(c) for c in outs[:n_carried]]   # the program reuses its buffers
        for y, value in zip(ys, outs[n_carried:]):
            y[t] = value
    return carried, ys


@register("scan", _scan_shape, _scan_grad)
def scan(*operands, body, n_carried, n_xs, reverse):
    """Final carried values and stacked step outputs of the loop, raveled into one array."""
    carried, ys = _forward(operands, body, n_carried, n_xs, reverse)
    dtype = body.outputs[0].dtype
    return _np.concatenate([_np.ravel(a).astype(dtype, copy=False) for a in carried + ys])


def _scan_grad_shape(*values, body, n_carried, n_xs, reverse):
    dtype = grad_dtype(body)
    size = sum(_size(x.shape) for x in values[:-1] if _has_grad(x, dtype))
    return (size,), dtype


@register("scan_grad", _scan_grad_shape)
def scan_grad(*values, body, n_carried, n_xs, reverse):
    """Gradients of scan's operands (of its dtype) for the incoming flat gradient (last)."""
    from ..graph.subgraph import run, vjp_graph
    operands, g = values[:-1], _np.asarray(values[-1])
    dtype = grad_dtype(body)
    history = []
    _forward(operands, body, n_carried, n_xs, reverse, history)
    length = _length(operands, n_carried)
    xs, invariants = operands[n_carried:n_carried + n_xs], list(operands[n_carried + n_xs:])
    pieces, offset, g_out = layout(body, n_carried, length), 0, []
    for shape in pieces:
        g_out.append(g[offset:offset + _size(shape)].reshape(shape))
        offset += _size(shape)
    g_carried, g_ys = g_out[:n_carried], g_out[n_carried:]
    vjp = vjp_graph(body, tuple(range(len(body.outputs))))
    g_xs = [_np.zeros_like(x) for x in xs]
    g_inv = [_np.zeros_like(v) for v in invariants]
    for t, state in zip(reversed(list(_steps(length, reverse))), reversed(history)):
        res = run(vjp, list(state) + [x[t] for x in xs] + invariants + list(g_carried)
                  + [gy[t] for gy in g_ys])
        g_carried = [_np.array(r) for r in res[:n_carried]]
        for gx, r in zip(g_xs, res[n_carried:n_carried + n_xs]):
            gx[t] = r
        for k, r in enumerate(res[n_carried + n_xs:]):
            g_inv[k] += r
    grads = [a for a, x in zip(g_carried + g_xs + g_inv, operands) if _has_grad(x, dtype)]
    if not grads:
        return _np.zeros(0, dtype)
    return _np.concatenate([_np.ravel(a).astype(dtype, copy=False) for a in grads])
