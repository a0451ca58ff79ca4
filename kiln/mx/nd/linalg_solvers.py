"""MXNet 1.x's linalg factorizations and solves (potrf, potri, trsm, inverse, det, slogdet,
gelqf, syevd): computed eagerly in NumPy on the last two axes (batched over the leading
ones), each with MXNet's backward formula (src/operator/tensor/la_op-inl.h, after
arXiv:1710.08717), so they differentiate under autograd and in a bound Symbol's backward.
"""
import numpy as _np

from ... import np as knp
from ..._core import autograd
from ..._core.base import KilnError
from ..._core.ndarray import ndarray
from ..ops.table import SHAPE_RUN


def _t(x):
    return _np.swapaxes(x, -1, -2)


def _inv_t(x):
    return _t(_np.linalg.inv(x))


def _copy_lower_to_upper(m):
    """The symmetric matrix with m's lower triangle (MXNet's copyLTU)."""
    return _np.tril(m) + _t(_np.tril(m, -1))


def _values(op, *arrays):
    return [knp.asarray(a)._concrete(f"linalg.{op}()") for a in arrays]


class _Eager(autograd.Function):
    """One call of an eager linalg op: forward(*numpy inputs) -> numpy outputs and
    backward(inputs, outputs, output gradients) -> input gradients, both in NumPy."""

    def __init__(self, name, forward, backward, shapes):
        super().__init__()
        self.name, self.fwd, self.bwd, self.shapes = name, forward, backward, shapes

    def forward(self, *arrays):
        inputs = _values(self.name, *arrays)
        if SHAPE_RUN.active:        # shape inference: the values are placeholders
            shapes = self.shapes(*[x.shape for x in inputs])
            outs = [_np.zeros(s, inputs[0].dtype) for s in shapes]
        else:
            outs = self.fwd(*inputs)
        single = not isinstance(outs, (list, tuple))
        outs = [outs] if single else list(outs)
        outs = [_np.asarray(o).astype(inputs[0].dtype, copy=False) for o in outs]
        self.save_for_backward(inputs, outs)
        wrapped = [ndarray._wrap(o) for o in outs]
        return wrapped[0] if single else wrapped

    def backward(self, *out_grads):
        inputs, outs = self.saved_tensors
        grads = [g.asnumpy() for g in out_grads]
        in_grads = self.bwd(inputs, outs, grads)
        return [ndarray._wrap(_np.asarray(g).astype(x.dtype, copy=False))
                for g, x in zip(in_grads, inputs)]


def _same(shape, *_):
    return [shape]


def _run(name, forward, backward, *arrays, shapes=_same):
    """`shapes(*input shapes)`: the output shapes, for shape inference."""
    return _Eager(name, forward, backward, shapes)(*arrays)


def _lower_factor(a):
    try:
        return _np.linalg.cholesky(a)
    except _np.linalg.LinAlgError as exc:
        raise KilnError(f"linalg.potrf: the matrix is not positive definite ({exc})") from None


def potrf(A, lower=True, **_):
    """The Cholesky factor of each symmetric positive-definite matrix: lower `L` with
    A = L L^T (or, lower=False, upper `U` with A = U^T U)."""
    lower = bool(lower)

    def forward(a):
        low = _lower_factor(a)
        return low if lower else _t(low)

    def backward(inputs, outs, grads):
        low = outs[0] if lower else _t(outs[0])
        dlow = grads[0] if lower else _t(grads[0])
        # dA = 0.5 L^-T copyLTU(L^T dL) L^-1
        inner = _copy_lower_to_upper(_t(low) @ dlow)
        return [0.5 * _inv_t(low) @ inner @ _np.linalg.inv(low)]
    return _run("potrf", forward, backward, A)


def potri(A, lower=True, **_):
    """inv(A A^T) from the lower Cholesky factor A (inv(A^T A) from an upper one)."""
    lower = bool(lower)

    def forward(b):
        return _np.linalg.inv(b @ _t(b) if lower else _t(b) @ b)

    def backward(inputs, outs, grads):
        (b,), (a,), (da,) = inputs, outs, grads
        sym = da + _t(da)
        if lower:       # dB = -tril(A (dA + dA^T) B^-T)
            return [-_np.tril(a @ sym @ _inv_t(b))]
        return [-_np.triu(_inv_t(b) @ sym @ a)]
    return _run("potri", forward, backward, A)


def _op(tri, transpose):
    return _t(tri) if transpose else tri


def trsm(A, B, transpose=False, rightside=False, lower=True, alpha=1.0, **_):
    """X with op(A) X = alpha B (or X op(A) = alpha B), A triangular."""
    transpose, rightside, lower, alpha = bool(transpose), bool(rightside), bool(lower), \
        float(alpha)

    def triangle(a):
        return _np.tril(a) if lower else _np.triu(a)

    def solve(a, b, trans):
        tri = _op(triangle(a), trans)
        if rightside:       # X tri = B  <=>  tri^T X^T = B^T
            return _t(_np.linalg.solve(_t(tri), _t(b))) * alpha
        return _np.linalg.solve(tri, b) * alpha

    def forward(a, b):
        return solve(a, b, transpose)

    def backward(inputs, outs, grads):
        (a, _b), (c,), (dc,) = inputs, outs, grads
        db = solve(a, dc, not transpose)
        scale = -1.0 / alpha
        if rightside == transpose:
            da = scale * _op(db, transpose) @ _op(c, not transpose)
        else:
            da = scale * _op(c, not transpose) @ _op(db, transpose)
        return [triangle(da), db]
    return _run("trsm", forward, backward, A, B, shapes=lambda a, b: [b])


def inverse(A, **_):
    """The inverse of each square matrix."""
    def backward(inputs, outs, grads):
        (b,), (db,) = outs, grads
        return [-_t(b) @ db @ _t(b)]
    return _run("inverse", _np.linalg.inv, backward, A)


def _one(x):
    return knp.reshape(x, (1,)) if x.ndim == 0 else x


def det(A, **_):
    """The determinant of each square matrix (a scalar result of one matrix has shape (1,))."""
    def backward(inputs, outs, grads):
        (a,), (d,), (dd,) = inputs, outs, grads
        return [_zero_where_singular((d * dd)[..., None, None] * _safe_inv_t(a, d == 0),
                                     d == 0)]
    return _one(_run("det", _np.linalg.det, backward, A, shapes=lambda a: [a[:-2]]))


def slogdet(A, **_):
    """The sign and the logarithm of the absolute determinant of each square matrix; the
    gradient flows through the logarithm only."""
    def forward(a):
        sign, logdet = _np.linalg.slogdet(a)
        return [sign, logdet]

    def backward(inputs, outs, grads):
        (a,), (_sign, logdet), (_dsign, dlog) = inputs, outs, grads
        singular = _np.isneginf(logdet)
        return [_zero_where_singular(dlog[..., None, None] * _safe_inv_t(a, singular),
                                     singular)]
    sign, logdet = _run("slogdet", forward, backward, A, shapes=lambda a: [a[:-2]] * 2)
    return [_one(sign), _one(logdet)]


def _safe_inv_t(a, singular):
    """inv(a)^T, with identity standing in for the singular matrices (their gradient is 0)."""
    eye = _np.broadcast_to(_np.eye(a.shape[-1], dtype=a.dtype), a.shape)
    return _inv_t(_np.where(_np.asarray(singular)[..., None, None], eye, a))


def _zero_where_singular(grad, singular):
    return _np.where(_np.asarray(singular)[..., None, None], 0, grad)


def gelqf(A, **_):
    """The LQ factorization A = L Q, Q with orthonormal rows: returns (Q, L)."""
    def forward(a):
        q, r = _np.linalg.qr(_t(a))
        return [_t(q), _t(r)]

    def backward(inputs, outs, grads):
        (q, low), (dq, dlow) = outs, grads
        # dA = L^-T (dQ + copyLTU(M) Q), M = L^T dL - dQ Q^T
        m = _t(low) @ dlow - dq @ _t(q)
        return [_inv_t(low) @ (dq + _copy_lower_to_upper(m) @ q)]
    return _run("gelqf", forward, backward, A,
                shapes=lambda a: [a, a[:-1] + (a[-2],)])


def syevd(A, **_):
    """The eigenvectors (rows of U) and ascending eigenvalues L of each symmetric matrix
    (its lower triangle is read); each row's largest entry in magnitude (the first, on a
    tie) is positive, as MXNet makes it."""
    def forward(a):
        w, v = _np.linalg.eigh(a)
        u = _t(v)
        k = _np.argmax(_np.abs(u), axis=-1)[..., None]
        flip = _np.take_along_axis(u, k, axis=-1) < 0
        return [_np.where(flip, -u, u), w]

    def backward(inputs, outs, grads):
        (u, lam), (du, dlam) = outs, grads
        x = du @ _t(u)
        gap = lam[..., :, None] - lam[..., None, :]          # L_i - L_j
        eps = 1e-100 if u.dtype == _np.float64 else 1e-30
        gap = 2 * _np.maximum(_np.abs(gap), eps)
        y = (x - _t(x)) / gap
        y = _np.tril(y, -1) + _t(_np.tril(y, -1))
        idx = _np.arange(u.shape[-1])
        y[..., idx, idx] = dlam
        return [_t(u) @ y @ u]
    return _run("syevd", forward, backward, A, shapes=lambda a: [a, a[:-1]])
