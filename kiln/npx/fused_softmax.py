"""Eager softmax and log_softmax on a recorded array: one tape entry with the textbook rule.

As composites (npx/softmax.py) each is 5-6 primitives, and their gradients as many rules again,
each a full pass over the array (a broadcast subtract's rule alone is a negate and a sum).
For BERT's masked-language-model loss, a log_softmax over 5,120 x 20,256 logits, those
passes cost more than the vocabulary matmul. Here the forward runs the composite's own
NumPy kernels call for call (the same bits) and the backward is one rule:
  softmax      dx = y * (g - sum(g * y))
  log_softmax  dx = g - exp(y) * sum(g)
computed in place in NumPy, or with kiln ops while create_graph records the backward (so
second derivatives still flow). Tracing and other dtypes keep the composites.
"""
import numpy as _np

from .._core import autograd
from .._core.ndarray import ndarray
from .. import np as knp

FAST_FLOATS = (_np.dtype(_np.float32), _np.dtype(_np.float64))


def concrete_float(x):
    """An eager float32/64 array with elements, outside any trace."""
    from .._core import trace
    return (x._node is None and x.dtype in FAST_FLOATS and x._data.size > 0
            and trace.current() is None)


CHUNK_BYTES = 1 << 20     # a block of rows stays in a core's L2 between passes


def _by_rows(fn, axis, *arrays):
    """fn(out, scratch, *arrays, axis) over blocks of rows when axis is the last and the
    arrays are C-contiguous: each pass (max, subtract, exp, sum, ...) then reads cache, not
    memory, and the bits are the same (a row's reductions do not depend on other rows).
    Blocks write into one output and reuse one scratch block: fresh blocks would each be
    new pages to fault in."""
    x = arrays[0]
    out = _np.empty(x.shape, x.dtype)
    if axis != x.ndim - 1 or x.nbytes <= 2 * CHUNK_BYTES or \
            not all(a.flags.c_contiguous for a in arrays):
        fn(out, _np.empty(x.shape, x.dtype), *arrays, axis=axis)
        return out
    n = x.shape[-1]
    flat = [a.reshape(-1, n) for a in arrays]
    rows = out.reshape(-1, n)
    step = max(1, CHUNK_BYTES // (n * x.itemsize))
    scratch = _np.empty((step, n), x.dtype)
    for i in range(0, rows.shape[0], step):
        block = rows[i:i + step]
        fn(block, scratch[:block.shape[0]], *(a[i:i + step] for a in flat), axis=-1)
    return out


# The forwards run the composites' kernels (npx/softmax.py) call for call: the same bits.
def _softmax(out, scratch, x, axis):
    _np.subtract(x, _np.max(x, axis=axis, keepdims=True), out=out)
    _np.exp(out, out=out)
    with _np.errstate(divide="ignore", invalid="ignore"):
        _np.true_divide(out, _np.sum(out, axis=axis, keepdims=True), out=out)


def _log_softmax(out, scratch, x, axis):
    _np.subtract(x, _np.max(x, axis=axis, keepdims=True), out=out)
    total = _np.sum(_np.exp(out, out=scratch), axis=axis, keepdims=True)
    with _np.errstate(divide="ignore"):
        _np.subtract(out, _np.log(total), out=out)


def _softmax_grad_block(out, scratch, g, y, axis):
    total = _np.sum(_np.multiply(g, y, out=scratch), axis=axis, keepdims=True)
    _np.subtract(g, total, out=out)
    out *= y


def _log_softmax_grad_block(out, scratch, g, y, axis):
    _np.exp(y, out=scratch)
    scratch *= _np.sum(g, axis=axis, keepdims=True)
    _np.subtract(g, scratch, out=out)


def softmax_values(x, axis):
    return _by_rows(_softmax, axis, x)


def log_softmax_values(x, axis):
    return _by_rows(_log_softmax, axis, x)


def _softmax_grad_np(g, y, axis):
    return _by_rows(_softmax_grad_block, axis, g, y)


def _log_softmax_grad_np(g, y, axis):
    return _by_rows(_log_softmax_grad_block, axis, g, y)


def _softmax_grad(g, y, axis):
    return y * (g - knp.sum(g * y, axis=axis, keepdims=True))


def _log_softmax_grad(g, y, axis):
    return g - knp.exp(y) * knp.sum(g, axis=axis, keepdims=True)


_RULES = {"softmax": (softmax_values, _softmax_grad_np, _softmax_grad),
          "log_softmax": (log_softmax_values, _log_softmax_grad_np, _log_softmax_grad)}


def apply(name, x, axis):
    """softmax or log_softmax of a concrete_float x along axis, on the tape if x is."""
    values, grad_np, grad = _RULES[name]
    out = ndarray._wrap(values(x._data, axis))
    if not (autograd.is_recording() and x._tape is not None):
        return out
    saved = []

    def backward(out_grads):
        g, y = out_grads[0], saved[0]
        if autograd.is_recording() or g._node is not None:    # create_graph
            return [grad(g, y, axis)]
        return [ndarray._wrap(grad_np(g._data, y._data, axis))]

    autograd.record_custom(name, [x], [out], backward)
    saved.append(out._alias())     # on the tape: create_graph differentiates through it
    return out


# ---- softmax cross-entropy on sparse labels: -log_softmax(x)[label] --------------------
# The loss as composed (log_softmax, then pick) materializes log_softmax's output and, in
# the backward, a full-size zero array that pick's gradient scatters into, both as big as
# the logits. Here the forward keeps per row only the max and the log of the sum; the
# backward recomputes exp block by block and writes the gradient once. The arithmetic is
# the composite's, operation for operation, so values and gradients keep their bits.

def cross_entropy_ok(x, label, axis):
    """Can softmax_cross_entropy take x (logits) and label (class per row) along axis?"""
    return (concrete_float(x) and x.ndim >= 2 and axis in (-1, x.ndim - 1)
            and label._node is None and label._tape is None
            and tuple(label.shape) in (tuple(x.shape[:-1]), tuple(x.shape[:-1]) + (1,)))


def _row_stats(out_max, out_log_total, scratch, x):
    m = _np.max(x, axis=-1, keepdims=True)
    _np.subtract(x, m, out=scratch)
    total = _np.sum(_np.exp(scratch, out=scratch), axis=-1, keepdims=True)
    out_max[...] = m
    with _np.errstate(divide="ignore"):
        _np.log(total, out=out_log_total)


def _by_row_blocks(x2d, fn):
    n = x2d.shape[1]
    step = max(1, CHUNK_BYTES // (n * x2d.itemsize))
    scratch = _np.empty((min(step, x2d.shape[0]), n), x2d.dtype)
    for i in range(0, x2d.shape[0], step):
        block = x2d[i:i + step]
        fn(i, block, scratch[:block.shape[0]])


def softmax_cross_entropy(x, label):
    """-log_softmax(x)[..., label] with keepdims (pick's clip mode), on the tape if x is."""
    xd = x._data
    n = xd.shape[-1]
    x2d = xd.reshape(-1, n)
    rows = _np.arange(x2d.shape[0])
    lab = _np.clip(label._data.reshape(-1).astype(_np.int64), 0, n - 1)
    maxes = _np.empty((x2d.shape[0], 1), xd.dtype)
    log_totals = _np.empty((x2d.shape[0], 1), xd.dtype)
    _by_row_blocks(x2d, lambda i, b, s: _row_stats(maxes[i:i + len(b)],
                                                     log_totals[i:i + len(b)], s, b))
    picked = _np.subtract(_np.subtract(x2d[rows, lab][:, None], maxes), log_totals)
    loss = ndarray._wrap(_np.negative(picked).reshape(xd.shape[:-1] + (1,)))
    if not (autograd.is_recording() and x._tape is not None):
        return loss
    saved = x._alias()

    def backward(out_grads):
        g = out_grads[0]
        if autograd.is_recording() or g._node is not None:     # create_graph: composite
            ls = apply("log_softmax", saved, xd.ndim - 1)    # recorded, x's function
            onehot = ndarray._wrap((_np.arange(n) == lab[:, None]).astype(xd.dtype)
                                   .reshape(xd.shape))
            return [-g * onehot + knp.exp(ls) * g]
        neg_g = _np.negative(g._data.reshape(-1, 1))    # the row sum of pick's gradient
        out = _np.empty(x2d.shape, xd.dtype)
        at_label = _np.empty(x2d.shape[0], xd.dtype)

        def block(i, b, scratch):
            j = slice(i, i + len(b))
            _np.subtract(b, maxes[j], out=scratch)
            _np.subtract(scratch, log_totals[j], out=scratch)
            _np.exp(scratch, out=scratch)
            scratch *= neg_g[j]                          # exp(ls) * sum(g)
            at_label[j] = scratch[_np.arange(len(b)), lab[j]]
            _np.subtract(0, scratch, out=out[j])         # pick's zeros elsewhere
        _by_row_blocks(saved._data.reshape(-1, n), block)
        out[rows, lab] = neg_g[:, 0] - at_label
        return [ndarray._wrap(out.reshape(xd.shape))]

    autograd.record_custom("softmax_cross_entropy", [x], [loss], backward)
    return loss
