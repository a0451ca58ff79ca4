"""`scan`: a loop over the leading axis of its sequence operands, and its gradient
`scan_grad`. This is MXNet's `foreach` as one graph op; recurrent layers use it
(kiln/gluon/rnn/time_loop.py) so a compiled program loops over time itself.

Operands: `scan(*carried, *xs, *invariants)`. The body subgraph takes the carried values,
one row of each sequence (x[t]) and the invariants (outer values the body reads), and
returns the next carried values (same shapes and dtypes) and the step outputs y_t.
`reverse` walks t = T-1 .. 0.

The IR has one output per node, and a loop must run its backward once however many of its
results are used. So `scan` returns ONE flat array: every final carried value, then every
stacked output (T, *y_t.shape), then every carried value's history (T, *shape: its value
before each step, in the order the steps ran), each raveled, concatenated (they share one
dtype); the caller slices out what it needs. The history is what backward needs (PyTorch
keeps an LSTM's states the same way), so `scan_grad(*operands, out, g)` reads it from the
forward result instead of running the loop again. It returns the gradients of all operands
of that dtype in one flat array (operands of other dtypes get none), and scan's gradient
rule slices it. It runs the body's gradient graph in reverse, writing x[t]'s gradient into
its row and summing the invariants' gradients.

The last `n_saved` step outputs are intermediate values of the body that backward would
otherwise recompute (the products of the body's matmuls, see graph/scan_trace.py): the
gradient graph takes them as given inputs, so a step's matmul runs once, not twice.
"""
import numpy as _np

from . import compose
from .._core.symdim import SymInt, concrete_value, is_symbolic
from .registry import register, REGISTRY
from .subgraph import run, vjp_graph


def _size(shape):
    """Elements of a shape; a run-time length (a symbolic size) stays an expression."""
    n = 1
    for d in shape:
        n = n * d
    return n


def layout(body, n_carried, length):
    """Shapes of the pieces of scan's flat result, in order: final carried values, stacked
    step outputs, carried histories."""
    outs = body.outputs
    return ([tuple(o.shape) for o in outs[:n_carried]]
            + [(length,) + tuple(o.shape) for o in outs[n_carried:]]
            + [(length,) + tuple(o.shape) for o in outs[:n_carried]])


def unpack(flat, body, n_carried, length, bindings=None):
    """The pieces of a flat scan result (or of a gradient of one), shaped; bindings: the
    values of the body's symbolic sizes in this call (_bindings), if it has any."""
    shapes = layout(body, n_carried, length)
    pieces, offset = [], 0
    for shape in concrete_value(shapes, bindings) if bindings else shapes:
        end = offset + _size(shape)
        if is_symbolic(flat.shape[0]):     # a run-time length: no window needs its value
            piece = REGISTRY["slice"](flat, begin=(offset,), end=(end,), step=(1,))
        else:
            piece = flat[offset:end]
        pieces.append(piece.reshape(shape))
        offset = end
    return pieces


def saved_nodes(body, n_saved):
    """The body's nodes whose values the forward keeps for backward (its last outputs)."""
    return tuple(body.outputs[len(body.outputs) - n_saved:]) if n_saved else ()


def _length(operands, n_carried):
    return operands[n_carried].shape[0]


def _bindings(body, n_carried, n_xs, operands):
    """{symbol: size} of the body's symbolic sizes (a program of run-time sizes runs its
    body as traced) from what a call gives it: carried values, rows of the sequences,
    invariants."""
    shapes = ([_np.shape(c) for c in operands[:n_carried]]
              + [_np.shape(x)[1:] for x in operands[n_carried:n_carried + n_xs]]
              + [_np.shape(v) for v in operands[n_carried + n_xs:]])
    bindings = {}
    for node, shape in zip(body.inputs, shapes):
        for dim, size in zip(node.shape, shape):
            if isinstance(dim, SymInt) and dim.expr[0] == "sym":
                bindings[dim.expr[1]] = size
    return bindings


def _scan_shape(*operands, body, n_carried, n_xs, reverse, n_saved):
    pieces = layout(body, n_carried, _length(operands, n_carried))
    return (sum(_size(s) for s in pieces),), body.outputs[0].dtype


def grad_dtype(body):
    return body.outputs[0].dtype


def _has_grad(x, dtype):
    return x.dtype == dtype


def _scan_grad(g, out, *operands, body, n_carried, n_xs, reverse, n_saved):
    flat = REGISTRY["scan_grad"](*operands, out, g, body=body, n_carried=n_carried, n_xs=n_xs,
                                 reverse=reverse, n_saved=n_saved)
    dtype, grads, offset = grad_dtype(body), [], 0
    for x in operands:
        if not _has_grad(x, dtype):
            grads.append(None)
            continue
        size = _size(x.shape)
        grads.append(compose.reshape(flat[offset:offset + size], tuple(x.shape)))
        offset += size
    return grads


def _steps(length, reverse):
    return range(length - 1, -1, -1) if reverse else range(length)


def _forward(operands, body, n_carried, n_xs, reverse):
    carried = list(operands[:n_carried])
    xs, invariants = operands[n_carried:n_carried + n_xs], list(operands[n_carried + n_xs:])
    length = _length(operands, n_carried)
    bindings = _bindings(body, n_carried, n_xs, operands)
    ys = [_np.empty((length,) + tuple(concrete_value(o.shape, bindings)), o.dtype)
          for o in body.outputs[n_carried:]]
    history = [_np.empty((length,) + _np.shape(c), c.dtype) for c in carried]
    for i, t in enumerate(_steps(length, reverse)):
        for h, c in zip(history, carried):
            h[i] = c
        outs = run(body, carried + [x[t] for x in xs] + invariants)
        carried = [_np.array(c) for c in outs[:n_carried]]   # the program reuses its buffers
        for y, value in zip(ys, outs[n_carried:]):
            y[t] = value
    return carried, ys, history


@register("scan", _scan_shape, _scan_grad)
def scan(*operands, body, n_carried, n_xs, reverse, n_saved):
    """Final carried values, stacked step outputs and carried histories, as one array."""
    carried, ys, history = _forward(operands, body, n_carried, n_xs, reverse)
    dtype = body.outputs[0].dtype
    return _np.concatenate([_np.ravel(a).astype(dtype, copy=False)
                            for a in carried + ys + history])


def _scan_grad_shape(*values, body, n_carried, n_xs, reverse, n_saved, g_window=None):
    dtype = grad_dtype(body)
    size = sum(_size(x.shape) for x in values[:-2] if _has_grad(x, dtype))
    return (size,), dtype


@register("scan_grad", _scan_grad_shape)
def scan_grad(*values, body, n_carried, n_xs, reverse, n_saved, g_window=None):
    """Gradients of scan's operands (of its dtype), given scan's result and the incoming
    gradient of it (the last two values). With g_window=(begin, end), the last value is
    only g[begin:end] and the rest of g is zero (see graph/passes/scan_grad_window.py)."""
    operands, out, g = values[:-2], _np.asarray(values[-2]), _np.asarray(values[-1])
    if g_window is not None:
        full = _np.zeros(out.shape, g.dtype)
        full[g_window[0]:g_window[1]] = g
        g = full
    dtype = grad_dtype(body)
    length = _length(operands, n_carried)
    xs, invariants = operands[n_carried:n_carried + n_xs], list(operands[n_carried + n_xs:])
    n_ys = len(body.outputs) - n_carried
    bindings = _bindings(body, n_carried, n_xs, operands)
    g_pieces = unpack(g, body, n_carried, length, bindings)
    g_carried, g_ys = g_pieces[:n_carried], g_pieces[n_carried:n_carried + n_ys]
    g_history = g_pieces[n_carried + n_ys:]
    pieces = unpack(out, body, n_carried, length, bindings)
    history = pieces[n_carried + n_ys:]
    saved = pieces[len(body.outputs) - n_saved:len(body.outputs)] if n_saved else []
    vjp = vjp_graph(body, tuple(range(len(body.outputs))), saved_nodes(body, n_saved))
    g_xs = [_np.zeros_like(x) for x in xs]
    g_inv = [_np.zeros_like(v) for v in invariants]
    for i, t in reversed(list(enumerate(_steps(length, reverse)))):
        res = run(vjp, [h[i] for h in history] + [x[t] for x in xs] + invariants
                  + [v[t] for v in saved] + list(g_carried) + [gy[t] for gy in g_ys])
        # the history row i is the state before step i, so its gradient joins here
        g_carried = [r + gh[i] for r, gh in zip(res[:n_carried], g_history)]
        for gx, r in zip(g_xs, res[n_carried:n_carried + n_xs]):
            gx[t] = r
        for k, r in enumerate(res[n_carried + n_xs:]):
            g_inv[k] += r
    grads = [a for a, x in zip(g_carried + g_xs + g_inv, operands) if _has_grad(x, dtype)]
    if not grads:
        return _np.zeros(0, dtype)
    return _np.concatenate([_np.ravel(a).astype(dtype, copy=False) for a in grads])
