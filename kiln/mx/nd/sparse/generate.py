"""Random sparse arrays for tests (`mxnet.test_utils.rand_sparse_ndarray`), drawn from
NumPy's global generator as MXNet's test_utils does, so `np.random.seed` repeats them."""
import numpy as _np

from ...._core.base import DEFAULT_FLOAT, KilnError, where_in_user_code
from .creation import csr_matrix, row_sparse_array, zeros
from .storage import INDEX_DTYPE, scipy_sparse


def rand_sparse_ndarray(shape, stype, density=None, dtype=None, distribution=None,
                        data_init=None, rsp_indices=None, modifier_func=None,
                        shuffle_csr_indices=False, ctx=None):
    """A random sparse array and its parts: `(csr, (indptr, indices, data))` for 'csr' and
    `(row_sparse, (data, indices))` (NumPy arrays) for 'row_sparse'. `density` (the share
    of stored rows or values; random in [0, 1) by default), values uniform in [0, 1)
    (`data_init` fills them with one value, `modifier_func` maps each), `rsp_indices` the
    stored rows of a row_sparse array; `distribution` is 'uniform' (the only one kiln has)."""
    density = _np.random.rand() if density is None else float(density)
    dtype = _np.dtype(DEFAULT_FLOAT if dtype is None else dtype)
    if distribution not in (None, "uniform", "powerlaw") or (
            distribution == "powerlaw" and stype != "csr"):
        raise KilnError(f"rand_sparse_ndarray: expected distribution 'uniform' (or "
                        f"'powerlaw' for csr), got {distribution!r}{where_in_user_code()}")
    if not 0.0 <= density <= 1.0:
        raise KilnError(f"rand_sparse_ndarray: expected a density in [0, 1], got {density}"
                        f"{where_in_user_code()}")
    shape = tuple(int(d) for d in shape)
    if stype == "row_sparse":
        return _rand_row_sparse(shape, density, dtype, data_init, rsp_indices,
                                modifier_func, ctx)
    if stype == "csr":
        if len(shape) != 2:
            raise KilnError(f"rand_sparse_ndarray: csr needs a 2-D shape, got {shape}"
                            f"{where_in_user_code()}")
        if distribution == "powerlaw":
            arr = csr_matrix(_powerlaw(shape, density, dtype), ctx=ctx, dtype=dtype)
            return arr, (arr.indptr, arr.indices, arr.data)
        matrix = scipy_sparse().random(shape[0], shape[1], density=density, format="csr",
                                       dtype=dtype, random_state=_np.random.mtrand._rand)
        if data_init is not None:
            matrix.data.fill(data_init)
        if modifier_func is not None:
            matrix.data[:] = [modifier_func(v) for v in matrix.data]
        if shuffle_csr_indices:
            for row in range(shape[0]):
                _np.random.shuffle(matrix.indices[matrix.indptr[row]:matrix.indptr[row + 1]])
        arr = csr_matrix(matrix, ctx=ctx, dtype=dtype)
        return arr, (arr.indptr, arr.indices, arr.data)
    raise KilnError(f"rand_sparse_ndarray: expected stype 'csr' or 'row_sparse', got "
                    f"{stype!r}{where_in_user_code()}")


def _rand_row_sparse(shape, density, dtype, data_init, rsp_indices, modifier_func, ctx):
    if rsp_indices is not None:
        indices = _np.asarray(rsp_indices, dtype=INDEX_DTYPE).ravel()
        if indices.size > shape[0]:
            raise KilnError(f"rand_sparse_ndarray: {indices.size} rsp_indices for "
                            f"{shape[0]} rows{where_in_user_code()}")
    else:
        indices = _np.flatnonzero(_np.random.rand(shape[0]) < density).astype(INDEX_DTYPE)
    if indices.size == 0:
        return (zeros("row_sparse", shape, ctx=ctx, dtype=dtype),
                (_np.array([], dtype=dtype), _np.array([], dtype=INDEX_DTYPE)))
    values = _np.random.rand(indices.size, *shape[1:]).astype(dtype)
    if data_init is not None:
        values.fill(data_init)
    if modifier_func is not None:
        values = _np.vectorize(modifier_func, otypes=[dtype])(values)
    arr = row_sparse_array((values, indices), shape=shape, ctx=ctx, dtype=dtype)
    return arr, (values, indices)


def _powerlaw(shape, density, dtype):
    """MXNet's 'powerlaw' test layout, dense: rows * cols * density values in [1.001, 3),
    first one at the start of every row, then row i takes up to 2**(i+1) leading columns
    (a whole row once that reaches the width) until they are all placed."""
    rows, cols = shape
    budget = int(rows * cols * density)
    out = _np.zeros(shape, dtype)

    def value():
        return 1 + _np.random.uniform(0.001, 2)
    for r in range(rows):
        out[r, 0] = value()
        budget -= 1
        if budget <= 0:
            return out
    width = 2
    for r in range(rows):
        limit = min(cols, width)
        if limit == cols and budget > limit:
            out[r] = value()
            budget -= limit - 1
            if budget <= 0:
                return out
            continue
        for c in range(1, limit):
            out[r, c] = value()
            budget -= 1
            if budget <= 0:
                return out
        width *= 2
    if budget > 0:
        raise KilnError(f"rand_sparse_ndarray: density {density} is too high for the "
                        f"'powerlaw' layout of shape {shape}{where_in_user_code()}")
    return out
