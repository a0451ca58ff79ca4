"""Making MXNet 1.x sparse arrays: `csr_matrix`, `row_sparse_array`, `zeros`, `empty`,
`array`, `cast_storage`. As in MXNet, NumPy, SciPy and kiln sources keep their dtype and
everything else (lists, tuples of parts) becomes float32 unless `dtype` is given; indices
are int64."""
import numpy as _np

from ...._core.base import (DEFAULT_FLOAT, KilnError, ShapeError, ValueRangeError,
                            where_in_user_code)
from ...._core.context import check_usable
from ...._core.ndarray import ndarray, SPARSE_STORAGE
from .storage import (BaseSparseNDArray, CSRNDArray, RowSparseNDArray, INDEX_DTYPE,
                      check_csr_dtype, scipy_sparse)
from .tape import link_storage

STYPES = ("csr", "row_sparse")


def _value_dtype(source, dtype):
    if dtype is not None:
        return _np.dtype(dtype)
    if isinstance(source, tuple) and source and not _is_shape(source):
        source = source[0]          # (data, indices[, indptr]): an array's dtype, as MXNet
    if isinstance(source, (_np.ndarray, ndarray, BaseSparseNDArray)):
        return _np.dtype(source.dtype)
    if getattr(source, "dtype", None) is not None and hasattr(source, "tocsr"):
        return _np.dtype(source.dtype)           # a SciPy matrix
    return _np.dtype(DEFAULT_FLOAT)


def _numpy(x, dtype=None):
    value = x.asnumpy() if isinstance(x, (ndarray, BaseSparseNDArray)) else _np.asarray(x)
    return value if dtype is None else value.astype(dtype, copy=False)


def _shape_of(shape, what):
    if shape is None:
        raise KilnError(f"{what}: expected a shape with the parts of a sparse array, got "
                        f"shape=None{where_in_user_code()}")
    return (int(shape),) if isinstance(shape, (int, _np.integer)) else tuple(
        int(d) for d in shape)


def _is_shape(arg):
    return isinstance(arg, tuple) and bool(arg) and all(
        isinstance(d, (int, _np.integer)) for d in arg)


def _same_shape(got, shape, what):
    if shape is not None and tuple(shape) != tuple(got):
        raise ShapeError(f"{what}: shape {tuple(shape)} does not match the array's "
                         f"{tuple(got)}{where_in_user_code()}")


def _placed(arr, ctx):
    """`arr` remembering the context it was made on (MXNet's `.context`)."""
    if ctx is not None:
        arr._ctx = ctx
    return arr


def csr_matrix(arg1, shape=None, ctx=None, dtype=None):
    """A `CSRNDArray` from `(data, indices, indptr)` with `shape`, from `(data, (row, col))`
    coordinates with `shape`, from a 2-D dense array (ndarray, NumPy, list), from a SciPy
    sparse matrix, or from another CSRNDArray (copied)."""
    sp = scipy_sparse()
    check_usable(ctx, "csr_matrix")
    if _is_shape(arg1):                         # an empty array of that shape
        _same_shape(arg1, shape, "csr_matrix")
        return _placed(zeros("csr", arg1, dtype=dtype), ctx)
    value_dtype = check_csr_dtype(_value_dtype(arg1, dtype), "csr_matrix")
    if isinstance(arg1, tuple) and len(arg1) in (2, 3) and not _np.isscalar(arg1[0]):
        if shape is None and len(arg1) == 3:    # MXNet infers it from indptr and indices
            indices, indptr = _numpy(arg1[1]), _numpy(arg1[2])
            if not indices.size:
                raise ShapeError(f"csr_matrix: cannot infer the shape without stored values; "
                                 f"give shape={where_in_user_code()}")
            shape = (indptr.size - 1, int(indices.max()) + 1)
        shape = _shape_of(shape, "csr_matrix")
        if len(shape) != 2:
            raise KilnError(f"csr_matrix: expected a 2-D shape, got {shape}"
                            f"{where_in_user_code()}")
        if len(arg1) == 3:
            data, indices, indptr = (_numpy(p) for p in arg1)
            _check_csr_parts(data, indices, indptr, shape)
            matrix = sp.csr_matrix((data.astype(value_dtype), indices.astype(INDEX_DTYPE),
                                    indptr.astype(INDEX_DTYPE)), shape=shape)
        else:
            data, (row, col) = _numpy(arg1[0]), arg1[1]
            matrix = sp.coo_matrix((data.astype(value_dtype),
                                    (_numpy(row, INDEX_DTYPE), _numpy(col, INDEX_DTYPE))),
                                   shape=shape).tocsr()
        return _placed(CSRNDArray(matrix), ctx)
    if isinstance(arg1, CSRNDArray):
        _same_shape(arg1.shape, shape, "csr_matrix")
        return _placed(arg1.astype(value_dtype), ctx)
    if sp.issparse(arg1):
        _same_shape(arg1.shape, shape, "csr_matrix")
        matrix = sp.csr_matrix(arg1, dtype=value_dtype, copy=True)
        matrix.sum_duplicates()     # MXNet's canonical form: no duplicates, sorted columns
        return _placed(CSRNDArray(matrix), ctx)
    dense = _numpy(arg1, value_dtype)
    if dense.ndim != 2:
        raise KilnError(f"csr_matrix: expected a 2-D array, got shape {dense.shape}"
                        f"{where_in_user_code()}")
    _same_shape(dense.shape, shape, "csr_matrix")
    return _placed(CSRNDArray(sp.csr_matrix(dense)), ctx)


def _check_csr_parts(data, indices, indptr, shape):
    rows, cols = shape
    problem = None
    if data.ndim != 1 or indices.shape != data.shape:
        problem = f"data and indices of one length, got {data.shape} and {indices.shape}"
    elif indptr.shape != (rows + 1,):
        problem = f"indptr of length {rows + 1}, got {indptr.shape}"
    elif indptr[0] != 0 or indptr[-1] != data.size or _np.any(_np.diff(indptr) < 0):
        problem = f"indptr rising from 0 to {data.size}, got {indptr.tolist()}"
    elif indices.size and (indices.min() < 0 or indices.max() >= cols):
        problem = f"column indices in [0, {cols}), got {indices.min()}..{indices.max()}"
    if problem:
        raise KilnError(f"csr_matrix: expected {problem}{where_in_user_code()}")


def row_sparse_array(arg1, shape=None, ctx=None, dtype=None):
    """A `RowSparseNDArray` from `(data, indices)` with `shape` (data[k] is row
    indices[k]; rows come out sorted), from a dense array (its nonzero rows are stored), or
    from another RowSparseNDArray (copied)."""
    check_usable(ctx, "row_sparse_array")
    if _is_shape(arg1):                         # an empty array of that shape
        _same_shape(arg1, shape, "row_sparse_array")
        return _placed(zeros("row_sparse", arg1, dtype=dtype), ctx)
    value_dtype = _value_dtype(arg1, dtype)
    if isinstance(arg1, tuple) and len(arg1) == 2:
        if shape is None:       # MXNet infers it from the largest row index
            rows, indices = _numpy(arg1[0]), _numpy(arg1[1], INDEX_DTYPE).ravel()
            if not indices.size:
                raise ShapeError(f"row_sparse_array: cannot infer the shape without stored "
                                 f"rows; give shape={where_in_user_code()}")
            shape = (int(indices.max()) + 1,) + rows.shape[1:]
        shape = _shape_of(shape, "row_sparse_array")
        rows, indices = _numpy(arg1[0], value_dtype), _numpy(arg1[1], INDEX_DTYPE).ravel()
        if rows.shape != (indices.size,) + shape[1:]:
            raise KilnError(f"row_sparse_array: expected data of shape "
                            f"{(indices.size,) + shape[1:]} for {indices.size} indices and "
                            f"shape {shape}, got {rows.shape}{where_in_user_code()}")
        if indices.size and (indices.min() < 0 or indices.max() >= shape[0]):
            raise KilnError(f"row_sparse_array: expected row indices in [0, {shape[0]}), got "
                            f"{indices.tolist()}{where_in_user_code()}")
        if _np.unique(indices).size != indices.size:
            raise KilnError(f"row_sparse_array: expected unique row indices, got "
                            f"{indices.tolist()}{where_in_user_code()}")
        order = _np.argsort(indices, kind="stable")
        return _placed(RowSparseNDArray(rows[order], indices[order], shape), ctx)
    if isinstance(arg1, RowSparseNDArray):
        _same_shape(arg1.shape, shape, "row_sparse_array")
        return _placed(arg1.astype(value_dtype), ctx)
    dense = _numpy(arg1, value_dtype)
    _same_shape(dense.shape, shape, "row_sparse_array")
    return _placed(dense_to_row_sparse(dense), ctx)


def dense_to_row_sparse(dense):
    """The nonzero rows of a NumPy array as a RowSparseNDArray."""
    if dense.ndim == 0:
        raise KilnError(f"row_sparse: expected an array of at least 1 dimension, got a "
                        f"scalar{where_in_user_code()}")
    keep = _np.flatnonzero(dense.reshape(dense.shape[0], -1).any(axis=1))
    return RowSparseNDArray(dense[keep].copy(), keep.astype(INDEX_DTYPE), dense.shape)


def dense_to_sparse(dense, stype):
    """A NumPy array in storage `stype` ('csr' or 'row_sparse')."""
    if stype == "row_sparse":
        return dense_to_row_sparse(dense)
    if stype == "csr":
        if dense.ndim != 2:
            raise KilnError(f"tostype('csr'): expected a 2-D array, got shape {dense.shape}"
                            f"{where_in_user_code()}")
        check_csr_dtype(dense.dtype, "tostype('csr')")
        return CSRNDArray(scipy_sparse().csr_matrix(dense))
    raise KilnError(f"tostype: expected stype 'default', 'csr' or 'row_sparse', got "
                    f"{stype!r}{where_in_user_code()}")


def zeros(stype, shape, ctx=None, dtype=None, **_):
    """An all-zero array of storage `stype` ('csr', 'row_sparse' or 'default')."""
    check_usable(ctx, "zeros")
    shape = _shape_of(shape, "zeros")
    dtype = _np.dtype(DEFAULT_FLOAT if dtype is None else dtype)
    if stype == "default":
        return ndarray._wrap(_np.zeros(shape, dtype))
    if stype == "csr":
        if len(shape) != 2:
            raise KilnError(f"zeros('csr'): expected a 2-D shape, got {shape}"
                            f"{where_in_user_code()}")
        return CSRNDArray(scipy_sparse().csr_matrix(shape, dtype=check_csr_dtype(
            dtype, "zeros('csr')")))
    if stype == "row_sparse":
        return RowSparseNDArray(_np.zeros((0,) + shape[1:], dtype),
                                _np.zeros(0, INDEX_DTYPE), shape)
    raise ValueRangeError(f"zeros: expected stype 'default', 'csr' or 'row_sparse', got "
                          f"{stype!r}{where_in_user_code()}")


def empty(stype, shape, ctx=None, dtype=None):
    """An array of storage `stype` with nothing stored (all zeros, as in MXNet)."""
    return zeros(stype, shape, ctx=ctx, dtype=dtype)


def array(source_array, ctx=None, dtype=None):
    """A sparse array from a SciPy sparse matrix (CSR) or a sparse array (copied)."""
    if isinstance(source_array, BaseSparseNDArray):
        return source_array.astype(_value_dtype(source_array, dtype))
    if scipy_sparse().issparse(source_array):
        return csr_matrix(source_array, ctx=ctx, dtype=dtype)
    raise KilnError(f"sparse.array: expected a SciPy sparse matrix or a sparse array, got "
                    f"{type(source_array).__name__}; use nd.array for dense data"
                    f"{where_in_user_code()}")


def cast_storage(data, stype, **_):
    """`data` (dense or sparse) in storage `stype` ('default', 'csr' or 'row_sparse')."""
    if stype not in ("default",) + STYPES:
        raise KilnError(f"cast_storage: expected stype 'default', 'csr' or 'row_sparse', got "
                        f"{stype!r}{where_in_user_code()}")
    if not isinstance(data, (ndarray, BaseSparseNDArray)):
        data = ndarray._wrap(_numpy(data))
    return data.tostype(stype)


for _stype in STYPES:     # ndarray.tostype: on the tape inside record() (tape.py)
    SPARSE_STORAGE[_stype] = (lambda s: lambda x: link_storage(x, dense_to_sparse(
        x.asnumpy(), s)))(_stype)


def to_record(arr):
    """A sparse array as the parts MXNet's file format stores (export/mxnet_params.py)."""
    from ....export.mxnet_params import SparseRecord
    if isinstance(arr, CSRNDArray):
        m = arr._csr
        return SparseRecord("csr", arr.shape, m.data,
                            [m.indptr.astype(INDEX_DTYPE), m.indices.astype(INDEX_DTYPE)])
    return SparseRecord("row_sparse", arr.shape, arr._rows, [arr._idx.astype(INDEX_DTYPE)])


def from_record(rec):
    """The sparse array of a file's parts, checked as any parts given to csr_matrix or
    row_sparse_array are (a hostile file gets a KilnError)."""
    if rec.stype == "csr":
        indptr, indices = rec.aux
        return csr_matrix((rec.data, indices, indptr), shape=rec.shape, dtype=rec.data.dtype)
    return row_sparse_array((rec.data, rec.aux[0]), shape=rec.shape, dtype=rec.data.dtype)


def _row_sparse_parts(values, rows, shape):
    return RowSparseNDArray(_np.ascontiguousarray(values), _np.asarray(rows, INDEX_DTYPE).copy(),
                            shape)


def _csr_parts(data, indices, indptr, shape):
    return CSRNDArray(scipy_sparse().csr_matrix((data, indices.copy(), indptr.copy()),
                                                shape=shape))


# how kiln/mx/sym/storage.py makes an executor's sparse outputs
PARTS = {"row_sparse_parts": _row_sparse_parts, "csr_parts": _csr_parts,
         "dense_to_sparse": lambda dense, stype: dense_to_sparse(dense, stype)}
