"""Operations on MXNet 1.x sparse arrays, with the result storage MXNet 1.9 gives:
elementwise arithmetic (`elementwise`), `dot`, `retain`, and the dense fallback of every
other nd function given a sparse operand (`call_densified`)."""
import numpy as _np

from .... import np as knp
from ...._core.base import KilnError, where_in_user_code
from ...._core.ndarray import ndarray
from .storage import (BaseSparseNDArray, CSRNDArray, RowSparseNDArray, INDEX_DTYPE,
                      IMPLEMENTATIONS, as_dense_value, densify, scipy_sparse)
from .tape import link_replica, link_storage

_NUMPY = {"add": _np.add, "subtract": _np.subtract, "multiply": _np.multiply,
          "divide": _np.true_divide}


def _is_scalar(x):
    return isinstance(x, (int, float, _np.number, bool))


def _is_dense(x):
    return isinstance(x, (ndarray, _np.ndarray)) and not isinstance(x, BaseSparseNDArray)


def _dense(value, dtype):
    return ndarray._wrap(_np.asarray(value).astype(dtype, copy=False))


def elementwise(op, lhs, rhs):
    """`lhs op rhs` for op in add, subtract, multiply, divide. Sparse results as in MXNet:
    csr with csr and row_sparse with row_sparse stay sparse for all but divide; a sparse
    left operand times (or divided by) a scalar, and times a dense array, keeps its storage;
    everything else (a scalar added, a dense left operand, mixed storages) is dense."""
    if not has_sparse((lhs, rhs), {}):
        return getattr(knp, op)(lhs, rhs)
    return link_replica(_sparse_elementwise(op, lhs, rhs), (lhs, rhs),
                        lambda: getattr(knp, op)(lhs, rhs))


def _sparse_elementwise(op, lhs, rhs):
    dtype = (lhs if isinstance(lhs, BaseSparseNDArray) else rhs).dtype
    shapes = {tuple(x.shape) for x in (lhs, rhs) if not _is_scalar(x)}
    if len(shapes) > 1:     # broadcasting: MXNet's dense fallback (broadcast_*)
        try:
            _np.broadcast_shapes(*shapes)
        except ValueError:
            raise KilnError(f"{op}: the operands have neither equal shapes nor shapes that "
                            f"broadcast: {lhs.shape} and {rhs.shape}{where_in_user_code()}"
                            ) from None
        densify(f"broadcast {op}", (lhs if isinstance(lhs, BaseSparseNDArray) else rhs).stype)
        return _dense(_NUMPY[op](as_dense_value(lhs), as_dense_value(rhs)), dtype)
    if isinstance(lhs, CSRNDArray):
        result = _csr_elementwise(op, lhs._csr, rhs)
        if result is not None:
            return CSRNDArray(result.astype(dtype, copy=False))
    if isinstance(lhs, RowSparseNDArray):
        result = _row_sparse_elementwise(op, lhs, rhs)
        if result is not None:
            return result
    return _dense(_NUMPY[op](as_dense_value(lhs), as_dense_value(rhs)), dtype)


def _csr_elementwise(op, a, rhs):
    if isinstance(rhs, CSRNDArray):
        b = rhs._csr
        if op == "add":
            return (a + b).tocsr()
        if op == "subtract":
            return (a - b).tocsr()
        if op == "multiply":
            return a.multiply(b).tocsr()
        return None
    if _is_scalar(rhs) and op in ("multiply", "divide"):
        return a * rhs if op == "multiply" else a / rhs
    if op == "multiply" and _is_dense(rhs):
        return scipy_sparse().csr_matrix(a.multiply(as_dense_value(rhs)))
    return None


def _row_sparse_elementwise(op, a, rhs):
    if isinstance(rhs, RowSparseNDArray) and op != "divide":
        if op == "multiply":
            both, ia, ib = _np.intersect1d(a._idx, rhs._idx, return_indices=True)
            return RowSparseNDArray(a._rows[ia] * rhs._rows[ib], both, a.shape)
        union = _np.union1d(a._idx, rhs._idx).astype(INDEX_DTYPE)
        rows = _np.zeros((union.size,) + a.shape[1:], a.dtype)
        rows[_np.searchsorted(union, a._idx)] += a._rows
        position = _np.searchsorted(union, rhs._idx)
        rows[position] = _NUMPY[op](rows[position], rhs._rows)
        return RowSparseNDArray(rows, union, a.shape)
    if _is_scalar(rhs) and op in ("multiply", "divide"):
        rows = _NUMPY[op](a._rows, rhs).astype(a.dtype, copy=False)
        return RowSparseNDArray(rows, a._idx.copy(), a.shape)
    if op == "multiply" and _is_dense(rhs):
        rows = (a._rows * as_dense_value(rhs)[a._idx]).astype(a.dtype, copy=False)
        return RowSparseNDArray(rows, a._idx.copy(), a.shape)
    return None


def _matrix(x, transpose):
    value = as_dense_value(x)
    return value.T if transpose else value


def dot(lhs, rhs, transpose_a=False, transpose_b=False, **_):
    """Matrix product with sparse operands, storage as in MXNet: csr·dense and
    row_sparse·dense are dense, csrᵀ·dense and csrᵀ·row_sparse (transpose_a=True) are
    row_sparse, dense·csr (and dense·csrᵀ) is csr. Other sparse combinations run densely
    (with a warning). One operand at least is sparse."""
    return link_replica(_sparse_dot(lhs, rhs, transpose_a, transpose_b), (lhs, rhs),
                        lambda: knp.dot(lhs.T if transpose_a else lhs,
                                        rhs.T if transpose_b else rhs))


def _sparse_dot(lhs, rhs, transpose_a, transpose_b):
    dtype = (lhs if isinstance(lhs, BaseSparseNDArray) else rhs).dtype
    _check_dot_shapes(lhs, rhs, transpose_a, transpose_b)
    if isinstance(lhs, CSRNDArray) and not isinstance(rhs, BaseSparseNDArray):
        if not transpose_a:
            return _dense(lhs._csr @ _matrix(rhs, transpose_b), dtype)
        if not transpose_b:
            return _csr_transposed_product(lhs, as_dense_value(rhs), dtype)
    if isinstance(lhs, CSRNDArray) and isinstance(rhs, RowSparseNDArray) and transpose_a \
            and not transpose_b:
        return _csr_transposed_product(lhs, rhs.asnumpy(), dtype)
    if isinstance(rhs, CSRNDArray) and not isinstance(lhs, BaseSparseNDArray) \
            and not transpose_a:
        b = rhs._csr.T if transpose_b else rhs._csr
        product = (b.T @ _matrix(lhs, False).T).T        # dense·sparse via sparse·dense
        return CSRNDArray(scipy_sparse().csr_matrix(product.astype(dtype, copy=False)))
    if isinstance(lhs, RowSparseNDArray) and not isinstance(rhs, BaseSparseNDArray) \
            and not transpose_a and lhs.ndim == 2:
        rhs_value = _matrix(rhs, transpose_b)
        out = _np.zeros((lhs.shape[0], rhs_value.shape[1]), dtype)
        out[lhs._idx] = lhs._rows @ rhs_value
        return ndarray._wrap(out)
    densify("dot", "/".join(getattr(x, "stype", "default") for x in (lhs, rhs)))
    return _dense(_np.dot(_matrix(lhs, transpose_a), _matrix(rhs, transpose_b)), dtype)


def _csr_transposed_product(lhs, rhs_value, dtype):
    # (csrᵀ·B) has a row for each column the csr array stores: those rows are its storage
    rows_present = _np.unique(lhs._csr.indices).astype(INDEX_DTYPE)
    product = _np.asarray(lhs._csr.T @ rhs_value)
    return RowSparseNDArray(product[rows_present].astype(dtype, copy=False), rows_present,
                            product.shape)


def _check_dot_shapes(lhs, rhs, transpose_a, transpose_b):
    a, b = tuple(lhs.shape), tuple(rhs.shape)
    if len(a) != 2 or len(b) != 2:
        raise KilnError(f"dot: sparse operands need 2-D arrays, got shapes {a} and {b}"
                        f"{where_in_user_code()}")
    inner_a = a[0] if transpose_a else a[1]
    inner_b = b[1] if transpose_b else b[0]
    if inner_a != inner_b:
        raise KilnError(f"dot: expected matching inner dimensions, got shapes {a} and {b} "
                        f"(transpose_a={transpose_a}, transpose_b={transpose_b})"
                        f"{where_in_user_code()}")


def retain(data, indices=None, **unknown):
    """A row_sparse array keeping only the stored rows of `data` listed in `indices`."""
    if unknown or indices is None:
        raise KilnError(f"retain: expected data and indices, got the arguments "
                        f"{sorted(unknown)}{where_in_user_code()}")
    if not isinstance(data, RowSparseNDArray):
        raise KilnError(f"retain: expected a RowSparseNDArray, got "
                        f"{type(data).__name__}{where_in_user_code()}")
    wanted = as_dense_value(indices).astype(INDEX_DTYPE).ravel()
    keep = _np.isin(data._idx, wanted)
    return RowSparseNDArray(data._rows[keep].copy(), data._idx[keep].copy(), data.shape)


def slice_csr(data, begin, end, step):
    """The csr array's rows (and columns) begin:end, or None when a step is not 1."""
    def listed(v):
        return [v] if v is None or isinstance(v, (int, _np.integer)) else list(v)
    begin, end, step = listed(begin), listed(end), listed(step)
    if len(begin) != len(end) or len(begin) > 2 or any(s not in (None, 1) for s in step):
        return None
    keys = [slice(None if b is None else int(b), None if e is None else int(e))
            for b, e in zip(begin, end)]
    keys += [slice(None)] * (2 - len(keys))
    return CSRNDArray(data._csr[keys[0], keys[1]].tocsr())


def take_csr_rows(data, indices, mode):
    """The csr array's rows `indices` (float indices truncated), clipped or wrapped."""
    rows = as_dense_value(indices).astype(INDEX_DTYPE).ravel()
    n = data.shape[0]
    rows = _np.clip(rows, 0, n - 1) if mode == "clip" else _np.mod(rows, n)
    return CSRNDArray(data._csr[rows].tocsr())


def row_sparse_square_sum(data):
    """Per stored row, the sum of its squares: a (rows, 1) row_sparse array."""
    sums = (data._rows * data._rows).sum(axis=1, keepdims=True).astype(data.dtype, copy=False)
    return RowSparseNDArray(sums, data._idx.copy(), (data.shape[0], 1))


def has_sparse(args, kwargs):
    """Whether any positional or keyword argument is a sparse array."""
    return any(isinstance(a, BaseSparseNDArray) for a in args) or any(
        isinstance(v, BaseSparseNDArray) for v in kwargs.values())


def call_densified(name, fn, args, kwargs):
    """`fn(*args, **kwargs)` with sparse operands replaced by dense copies, warning once
    per (function, storage type) that `name` has no sparse implementation."""
    stypes = sorted({a.stype for a in list(args) + list(kwargs.values())
                     if isinstance(a, BaseSparseNDArray)})
    densify(f"nd.{name}", "/".join(stypes))

    def dense(x):
        return x.todense() if isinstance(x, BaseSparseNDArray) else x
    out = kwargs.pop("out", None)       # a sparse out= takes the result in its own storage
    dense_args = [dense(a) for a in args]
    dense_kwargs = {k: dense(v) for k, v in kwargs.items()}
    result = fn(*dense_args, **dense_kwargs)
    if out is None:
        if _keeps_zeros(fn, args, dense_args, dense_kwargs, result):
            return link_storage(result, IMPLEMENTATIONS["dense_to_sparse"](
                as_dense_value(result), args[0].stype))
        return result
    if isinstance(out, BaseSparseNDArray):
        out._assign(result.tostype(out.stype).astype(out.dtype))
    else:
        out[...] = result
    return out


def _keeps_zeros(fn, args, dense_args, dense_kwargs, result):
    """Whether an elementwise function of one sparse array maps zeros to zeros, so its result
    keeps the array's storage (MXNet's sparse kernels of sqrt, abs, relu, quadratic with
    c=0, ...): the result has the input's shape and the function gives 0 on zeros."""
    if not args or not isinstance(args[0], BaseSparseNDArray) or any(
            isinstance(a, (BaseSparseNDArray, ndarray, _np.ndarray)) for a in args[1:]):
        return False
    if not isinstance(result, ndarray) or tuple(result.shape) != tuple(args[0].shape):
        return False
    zeros = ndarray._wrap(_np.zeros(args[0].shape, dense_args[0].dtype))
    try:
        probe = fn(zeros, *dense_args[1:], **dense_kwargs)
    except Exception:
        return False
    return isinstance(probe, ndarray) and not _np.any(as_dense_value(probe))


_SCALAR_RULE_OPS = {"equal": _np.equal, "not_equal": _np.not_equal, "greater": _np.greater,
                    "greater_equal": _np.greater_equal, "less": _np.less,
                    "less_equal": _np.less_equal, "power": _np.power, "mod": _np.mod}


def zero_preserving(op, lhs, rhs):
    """`lhs op rhs` (comparisons, power, mod) with a sparse operand, computed densely. As in
    MXNet, a sparse array and a scalar give a sparse result (of the array's storage) when
    the op maps the array's zeros to zero (`y > 0`, `y ** 2`), else a dense one (`y >= 0`);
    comparisons give 0/1 in the array's dtype."""
    return link_replica(_zero_preserving_value(op, lhs, rhs), (lhs, rhs),
                        lambda: getattr(knp, op)(lhs, rhs))


def _zero_preserving_value(op, lhs, rhs):
    sparse = lhs if isinstance(lhs, BaseSparseNDArray) else rhs
    other = rhs if sparse is lhs else lhs
    fn = _SCALAR_RULE_OPS[op]
    value = fn(as_dense_value(lhs), as_dense_value(rhs)).astype(sparse.dtype)
    if _is_scalar(other):
        zero = fn(0, other) if sparse is lhs else fn(other, 0)
        if not zero:
            return IMPLEMENTATIONS["dense_to_sparse"](value, sparse.stype)
    return _dense(value, sparse.dtype)


def getnnz(data, axis=None):
    """Stored values of a csr array: their count (axis=None, shape (1,)) or per row (axis=1)."""
    if not isinstance(data, CSRNDArray) or axis not in (None, 1):
        raise KilnError(f"getnnz: expected a CSRNDArray and axis None or 1, got "
                        f"{type(data).__name__} and axis={axis!r}{where_in_user_code()}")
    counts = data._csr.getnnz(axis=axis)
    return ndarray._wrap(_np.atleast_1d(_np.asarray(counts, dtype=INDEX_DTYPE)))
