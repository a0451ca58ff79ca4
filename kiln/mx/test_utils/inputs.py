"""mx.test_utils' test inputs: random shapes, arrays and matrices with known eigenvalues, and
NumPy reference reductions."""
import numpy as _np

from ..._core.ndarray import ndarray
from ..nd.sparse import rand_sparse_ndarray

def rand_shape_nd(num_dim, dim=10, allow_zero_size=False):
    """A random shape of `num_dim` axes, each in [1, dim] ([0, dim] with allow_zero_size)."""
    low = 0 if allow_zero_size else 1
    return tuple(int(v) for v in _np.random.randint(low, dim + 1, size=num_dim))


def rand_shape_2d(dim0=10, dim1=10, allow_zero_size=False):
    """A random 2-D shape, each dimension from 1 (0 with `allow_zero_size`) to `dim0` and `dim1`."""
    low = 0 if allow_zero_size else 1
    return (int(_np.random.randint(low, dim0 + 1)), int(_np.random.randint(low, dim1 + 1)))


def rand_shape_3d(dim0=10, dim1=10, dim2=10, allow_zero_size=False):
    """A random 3-D shape, each dimension from 1 (0 with `allow_zero_size`) to `dim0`, `dim1` and
    `dim2`."""
    return rand_shape_2d(dim0, dim1, allow_zero_size) + rand_shape_nd(1, dim2,
                                                                     allow_zero_size)


def random_arrays(*shapes):
    """NumPy float32 arrays of standard normals, one per shape (a scalar for shape ())."""
    out = [_np.array(_np.random.randn(*s), dtype=_np.float32) for s in shapes]
    return out[0] if len(out) == 1 else out


def rand_ndarray(shape, stype="default", density=None, dtype=None, modifier_func=None,
                 shuffle_csr_indices=False, distribution=None, ctx=None):
    """A random array of uniform [0, 1) values: dense for stype 'default', else a 'csr' or
    'row_sparse' array of `density` (rand_sparse_ndarray)."""
    if stype != "default":
        return rand_sparse_ndarray(shape, stype, density=density, dtype=dtype,
                                   distribution=distribution, modifier_func=modifier_func,
                                   shuffle_csr_indices=shuffle_csr_indices, ctx=ctx)[0]
    values = _np.random.uniform(0, 1, size=shape).astype(dtype or _np.float32)
    if modifier_func is not None:
        values = _np.asarray(modifier_func(values), dtype=values.dtype)
    return ndarray._wrap(values)


def create_sparse_array(shape, stype, data_init=None, rsp_indices=None, dtype=None,
                        modifier_func=None, density=0.5, shuffle_csr_indices=False):
    """A random sparse array (rand_sparse_ndarray); row_sparse indices are sorted first."""
    if stype not in ("row_sparse", "csr"):
        raise AssertionError(f"Unknown storage type: {stype}")
    if stype == "row_sparse" and rsp_indices is not None:
        rsp_indices = _np.sort(_np.asarray(rsp_indices))
    return rand_sparse_ndarray(shape, stype, density=density, data_init=data_init,
                               rsp_indices=rsp_indices if stype == "row_sparse" else None,
                               dtype=dtype, modifier_func=modifier_func,
                               shuffle_csr_indices=shuffle_csr_indices)[0]


def create_sparse_array_zd(shape, stype, density, data_init=None, rsp_indices=None,
                           dtype=None, modifier_func=None, shuffle_csr_indices=False):
    """create_sparse_array where a row_sparse array's stored rows are exactly `rsp_indices`
    (density 0 otherwise)."""
    if stype == "row_sparse":
        density = 0.0
        if rsp_indices is not None and len(rsp_indices) > shape[0]:
            raise AssertionError(f"{len(rsp_indices)} rsp_indices for {shape[0]} rows")
    return create_sparse_array(shape, stype, data_init=data_init, rsp_indices=rsp_indices,
                               dtype=dtype, modifier_func=modifier_func, density=density,
                               shuffle_csr_indices=shuffle_csr_indices)


def random_uniform_arrays(*shapes, low=0.0, high=1.0, dtype=_np.float32):
    """NumPy arrays of uniform [low, high) values, one per shape (always a list)."""
    return [_np.random.uniform(low, high, size=s).astype(dtype) for s in shapes]


def random_sample(population, k):
    """`k` elements of the list `population` in random order."""
    if not 0 <= k <= len(population):
        raise ValueError(f"random_sample: k must be in [0, {len(population)}], got {k}")
    copy = list(population)
    _np.random.shuffle(copy)
    return copy[:k]


def rand_coord_2d(x_low, x_high, y_low, y_high):
    """A random integer point with x in [x_low, x_high) and y in [y_low, y_high)."""
    return (_np.random.randint(x_low, x_high, dtype=_np.int64),
            _np.random.randint(y_low, y_high, dtype=_np.int64))


def np_reduce(dat, axis, keepdims, numpy_reduce_func):
    """`numpy_reduce_func` (np.sum, np.max, ...) over the axes `axis` (an int, a list, or
    None for all) one axis at a time, keeping them as length 1 when `keepdims`."""
    axes = [axis] if isinstance(axis, int) else (list(axis) if axis is not None
                                                 else list(range(dat.ndim)))
    axes = [a % dat.ndim for a in axes] if dat.ndim else axes
    ret = dat
    for a in sorted(axes, reverse=True):
        ret = numpy_reduce_func(ret, axis=a)
    if keepdims:
        ret = _np.reshape(ret, tuple(1 if i in axes else d for i, d in enumerate(dat.shape)))
    return ret


def collapse_sum_like(a, shape):
    """Sum the NumPy array `a` over the axes that broadcasting `shape` to `a.shape` added or
    stretched: the gradient of a broadcast, as the reference of a test."""
    shape = tuple(shape)
    if len(a.shape) < len(shape):
        raise ValueError(f"collapse_sum_like: {shape} has more axes than {a.shape}")
    if _np.prod(shape) == 0 or a.size == 0:
        return _np.zeros(shape, dtype=a.dtype)
    extra = len(a.shape) - len(shape)
    axes = list(range(extra))
    for i, s in enumerate(shape):
        if s != a.shape[i + extra]:
            if s != 1:
                raise ValueError(f"collapse_sum_like: {shape} does not broadcast to {a.shape}")
            axes.append(i + extra)
    return _np.sum(a, axis=tuple(axes)).reshape(shape)


def assign_each(the_input, function):
    """A float64 array of `function(x)` for each element x of `the_input` (a copy when None)."""
    if function is None:
        return _np.array(the_input)
    return _np.array([function(v) for v in _np.asarray(the_input).flat],
                     dtype=_np.float64).reshape(_np.shape(the_input))


def assign_each2(input1, input2, function):
    """A float64 array of `function(x, y)` for each pair of elements of two equal-shape arrays."""
    if function is None:
        return _np.array(input1)
    if _np.shape(input1) != _np.shape(input2):
        raise ValueError(f"assign_each2: shapes differ: {_np.shape(input1)} vs "
                         f"{_np.shape(input2)}")
    pairs = zip(_np.asarray(input1).flat, _np.asarray(input2).flat)
    return _np.array([function(x, y) for x, y in pairs],
                     dtype=_np.float64).reshape(_np.shape(input1))


def create_vector(size, dtype=_np.int64):
    """nd.arange(size) in `dtype` (MXNet's large-tensor tests)."""
    from ..nd import arange
    return arange(0, size, dtype=dtype)


def create_2d_tensor(rows, columns, dtype=_np.int64):
    """A (rows, columns) array whose row i holds i everywhere."""
    from ..nd import arange, broadcast_to
    return broadcast_to(arange(0, rows, dtype=dtype).reshape(rows, 1), shape=(rows, columns))


def get_identity_mat(size):
    """The (size, size) float32 identity as an NDArray."""
    return ndarray._wrap(_np.eye(size, dtype=_np.float32))


def get_identity_mat_batch(size):
    """Two (size, size) float32 identities stacked: shape (2, size, size)."""
    return ndarray._wrap(_np.stack([_np.eye(size, dtype=_np.float32)] * 2))


def new_matrix_with_real_eigvals_2d(n):
    """A NumPy (n, n) matrix with real eigenvalues in [-10, 10], similar to a diagonal by a
    well-conditioned (cond < 3) Householder-times-diagonal matrix."""
    while True:
        d = _np.diag(_np.random.uniform(-1.0, 1.0, n))
        v = _np.random.uniform(-1.0, 1.0, n).reshape(n, 1)
        v = v / _np.linalg.norm(v, axis=-2, keepdims=True)
        q = (_np.eye(n) - 2 * v @ v.T) @ d
        if _np.linalg.cond(q, 2) < 3:
            break
    return _np.linalg.inv(q) @ _np.diag(_np.random.uniform(-10.0, 10.0, n)) @ q


def new_matrix_with_real_eigvals_nd(shape):
    """new_matrix_with_real_eigvals_2d for each matrix of a batch `shape` (..., n, n)."""
    count = int(_np.prod(shape[:-2])) if len(shape) > 2 else 1
    return _np.array([new_matrix_with_real_eigvals_2d(shape[-1])
                      for _ in range(count)]).reshape(shape)


def new_orthonormal_matrix_2d(n):
    """A random NumPy (n, n) orthonormal matrix (Q of a QR decomposition)."""
    x = _np.random.randn(n, n)
    return _np.linalg.qr(x.T @ x)[0]


def new_sym_matrix_with_real_eigvals_2d(n):
    """A random symmetric NumPy (n, n) matrix with eigenvalues in [-10, 10]."""
    q = new_orthonormal_matrix_2d(n)
    return q.T @ _np.diag(_np.random.uniform(-10.0, 10.0, n)) @ q


def new_sym_matrix_with_real_eigvals_nd(shape):
    """new_sym_matrix_with_real_eigvals_2d for each matrix of a batch `shape` (..., n, n)."""
    count = int(_np.prod(shape[:-2])) if len(shape) > 2 else 1
    return _np.array([new_sym_matrix_with_real_eigvals_2d(shape[-1])
                      for _ in range(count)]).reshape(shape)
