"""One eager recurrent layer direction as a single tape entry, its time loop in NumPy.

The op-by-op loop (cell_math.step per time step) puts ~15 primitives per step on the tape;
for a 2-layer bidirectional LSTM over 500 steps that is 30,000 dispatches and tape nodes
forward and as many gradient rules backward, and Python overhead dominates. Here the
forward walks time in NumPy, keeps the gate activations, and the backward is the
hand-derived backpropagation through time of the same formulas (cell_math.py states them);
the weight gradient is one matmul over all steps. tests/gluon/test_gluon_rnn_torch.py checks it
against PyTorch, tests/gluon/test_rnn_fused_eager.py against the op-by-op loop.

Only the eager layers use it (kiln.gluon.rnn layers, float32/float64); cells and the
hybridized scan keep cell_math.step. Like every autograd.Function its backward is not
itself recorded (no create_graph through it).
"""
import numpy as _np

from ..._core import autograd
from ...backend.c import eager_gemm
from ...backend.c.dnnl_dense import _new_op as new_matmul_op
from ...backend.dnnl.library import shim
from ...backend.dnnl.ops import _run as _run_dnnl
from ..._core.base import KilnError
from ..._core.ndarray import ndarray

SUPPORTED_DTYPES = (_np.dtype(_np.float32), _np.dtype(_np.float64))


def _matmul(a, b):
    """a @ b on kiln's eager gemm (NumPy's OpenBLAS threads spin between calls: a
    64 x 100 x 400 product took 0.6-3 ms of CPU there under load, ~65 us here)."""
    c = eager_gemm.matmul(a, b)
    return a @ b if c is None else c


_refused = set()


def _step_matmul(a, b):
    """a @ b for one time step: a one-thread oneDNN op on the calling thread. A step's
    product is small (batch x hidden x gates) and the loop makes thousands in a row; an
    OpenMP team per call makes its second thread wait at every call's barrier, and on a
    shared machine that thread spins while the other core is busy."""
    fa, fb = eager_gemm._operand(a), eager_gemm._operand(b)
    if a.dtype != _np.float32 or b.dtype != _np.float32 or fa is None or fb is None \
            or shim() is None:
        return _matmul(a, b)
    (m, k), n = a.shape, b.shape[1]
    args = (2, (m, k), (1, m) if fa[0] else (k, 1), (k, n), (1, k) if fb[0] else (n, 1), n,
            0, 0, 0, 1, 0)
    key = ("matmul",) + args
    if key in _refused:
        return _matmul(a, b)
    c = _np.empty((m, n), _np.float32)
    try:
        _run_dnnl((key, lambda lib: new_matmul_op(lib, args)), (a, b, c))
    except KilnError:         # only a reference kernel for this shape
        _refused.add(key)
        return _matmul(a, b)
    return c


def _sigmoid(x, out=None):
    """sigmoid(x) = (1 + tanh(x / 2)) / 2: never overflows, one transcendental."""
    out = _np.multiply(x, 0.5, out=out)
    _np.tanh(out, out=out)
    out *= 0.5
    out += 0.5
    return out


class _Direction(autograd.Function):
    """(xs, h0[, c0], h2h_weight, h2h_bias) -> (ys, h_T[, c_T]) for one layer direction.

    xs is the input projection of every step (T, N, G*H); ys the hidden output per step."""

    def __init__(self, mode, reverse):
        super().__init__()
        self.mode, self.reverse = mode, reverse

    def forward(self, xs, *rest):
        lstm = self.mode == "lstm"
        states, (weight, bias) = rest[:-2], rest[-2:]
        xs, w, b = xs._data, weight._data, bias._data
        h = states[0]._data
        c = states[1]._data if lstm else None
        length, batch, gh = xs.shape
        hidden = h.shape[-1]
        wt = w.T
        ys = _np.empty((length, batch, hidden), xs.dtype)
        acts = _np.empty((length, batch, gh), xs.dtype)     # gate activations per step
        extra = _np.empty((length, batch, hidden), xs.dtype)  # tanh(c') (LSTM), h_n (GRU)
        cprev = _np.empty((length, batch, hidden), xs.dtype) if lstm else None
        hprev = _np.empty((length, batch, hidden), xs.dtype)
        order = range(length - 1, -1, -1) if self.reverse else range(length)
        for t in order:
            hprev[t] = h
            hh = _step_matmul(h, wt)
            hh += b
            a = acts[t]
            if lstm:
                _np.add(xs[t], hh, out=a)
                _sigmoid(a[:, :2 * hidden], out=a[:, :2 * hidden])
                _np.tanh(a[:, 2 * hidden:3 * hidden], out=a[:, 2 * hidden:3 * hidden])
                _sigmoid(a[:, 3 * hidden:], out=a[:, 3 * hidden:])
                i, f, g, o = (a[:, k * hidden:(k + 1) * hidden] for k in range(4))
                cprev[t] = c
                c = f * c + i * g
                tc = _np.tanh(c, out=extra[t])
                h = _np.multiply(o, tc, out=ys[t])
            elif self.mode == "gru":
                _np.add(xs[t, :, :2 * hidden], hh[:, :2 * hidden], out=a[:, :2 * hidden])
                _sigmoid(a[:, :2 * hidden], out=a[:, :2 * hidden])
                r, z, n = (a[:, k * hidden:(k + 1) * hidden] for k in range(3))
                extra[t] = hh[:, 2 * hidden:]
                _np.multiply(r, extra[t], out=n)
                n += xs[t, :, 2 * hidden:]
                _np.tanh(n, out=n)
                h = _np.add(n, z * (h - n), out=ys[t])   # (1 - z) * n + z * h
            else:
                _np.add(xs[t], hh, out=a)
                if self.mode == "rnn_relu":
                    _np.maximum(a, 0, out=a)
                else:
                    _np.tanh(a, out=a)
                h = ys[t] = a
        self.saved = (xs.dtype, w, acts, extra, cprev, hprev, order)
        outs = [ys, h] + ([c] if lstm else [])
        return tuple(ndarray._wrap(_np.array(x, copy=True) if x is not ys else x)
                     for x in outs)

    def backward(self, dys, dh_last, *dc_last):
        dtype, w, acts, extra, cprev, hprev, order = self.saved
        self.saved = None
        lstm = self.mode == "lstm"
        length, batch, gh = acts.shape
        hidden = gh // {"lstm": 4, "gru": 3}.get(self.mode, 1)
        dys = dys._data
        dh = _np.array(dh_last._data, dtype=dtype, copy=True)
        dc = _np.array(dc_last[0]._data, dtype=dtype, copy=True) if lstm else None
        dxs = _np.empty((length, batch, gh), dtype)
        dhh = dxs if self.mode != "gru" else _np.empty((length, batch, gh), dtype)
        for t in reversed(order):
            dh += dys[t]
            a, dg = acts[t], dxs[t]
            if lstm:
                i, f, g, o = (a[:, k * hidden:(k + 1) * hidden] for k in range(4))
                di, df, dgg, do = (dg[:, k * hidden:(k + 1) * hidden] for k in range(4))
                tc = extra[t]
                _np.multiply(dh, tc, out=do)
                do *= o * (1 - o)
                dc += dh * o * (1 - tc * tc)
                _np.multiply(dc, g, out=di)
                di *= i * (1 - i)
                _np.multiply(dc, cprev[t], out=df)
                df *= f * (1 - f)
                _np.multiply(dc, i, out=dgg)
                dgg *= 1 - g * g
                dc *= f
                dh = _step_matmul(dg, w)
            elif self.mode == "gru":
                r, z, n = (a[:, k * hidden:(k + 1) * hidden] for k in range(3))
                dr, dz, dn = (dg[:, k * hidden:(k + 1) * hidden] for k in range(3))
                _np.multiply(dh, 1 - z, out=dn)
                dn *= 1 - n * n
                _np.multiply(dh, hprev[t] - n, out=dz)
                dz *= z * (1 - z)
                _np.multiply(dn, extra[t], out=dr)
                dr *= r * (1 - r)
                dhh[t, :, :2 * hidden] = dg[:, :2 * hidden]
                _np.multiply(dn, r, out=dhh[t, :, 2 * hidden:])
                dh = dh * z + _step_matmul(dhh[t], w)
            else:
                if self.mode == "rnn_relu":
                    _np.multiply(dh, a > 0, out=dg)
                else:
                    _np.multiply(dh, 1 - a * a, out=dg)
                dh = _step_matmul(dg, w)
        flat = dhh.reshape(length * batch, gh)
        dw = _matmul(flat.T, hprev.reshape(length * batch, hidden))
        db = flat.sum(axis=0)
        grads = [dxs, dh] + ([dc] if lstm else []) + [dw, db]
        return tuple(ndarray._wrap(x) for x in grads)


def supported(xs, states, weight):
    return xs.dtype in SUPPORTED_DTYPES and weight.dtype == xs.dtype and \
        all(s.dtype == xs.dtype for s in states)


def run(mode, xs, states, h2h_weight, h2h_bias, reverse):
    """(ys, final states) of one direction, as time_loop.run(step, ...) gives them."""
    ys, *finals = _Direction(mode, reverse)(xs, *states, h2h_weight, h2h_bias)
    return ys, finals
