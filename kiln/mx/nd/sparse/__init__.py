"""`mx.nd.sparse`: MXNet 1.x's sparse storage on SciPy sparse matrices: the arrays
(storage.py), making them (creation.py), operations keeping them sparse where MXNet does
(ops.py) and random ones for tests (generate.py). SciPy is imported on first use.

Any other nd function called here, or given a sparse operand in `mx.nd`, runs on dense
copies and warns once (KilnPerformanceWarning)."""
from .storage import (BaseSparseNDArray, CSRNDArray, RowSparseNDArray,  # noqa: F401
                      IMPLEMENTATIONS)
from .creation import (csr_matrix, row_sparse_array, zeros, empty, array,  # noqa: F401
                       cast_storage, dense_to_sparse)
from . import ops
from .ops import retain, elementwise, call_densified
from .generate import rand_sparse_ndarray  # noqa: F401
from .updates import sparse_update
from ....optimizer.base import ARRAY_UPDATES
from ....io.ndarray_iter import SPARSE as ITER_SPARSE

IMPLEMENTATIONS.update(elementwise=elementwise, zero_preserving=ops.zero_preserving,
                       link_storage=ops.link_storage,
                       retain=retain, dense_to_sparse=dense_to_sparse,
                       row_sparse_array=row_sparse_array)
# optimizers (kiln/optimizer, a floor below) update sparse weights and gradients through this
ARRAY_UPDATES.update({CSRNDArray: sparse_update, RowSparseNDArray: sparse_update})
# NDArrayIter (kiln/io, a floor below) batches csr data as SciPy matrices
ITER_SPARSE.update(is_csr=lambda v: isinstance(v, CSRNDArray), to_scipy=CSRNDArray.asscipy,
                   from_scipy=CSRNDArray)

# nd's name lookup (kiln/mx/nd/namespace.py), appended by kiln/mx/nd/__init__.py
NAME_LOOKUP = []


def dot(lhs, rhs, transpose_a=False, transpose_b=False, **kwargs):
    """Matrix product, sparse-aware (storage as in MXNet: kiln/mx/nd/sparse/ops.py);
    without sparse operands nd.dot."""
    if ops.has_sparse((lhs, rhs), kwargs):
        return ops.dot(lhs, rhs, transpose_a=transpose_a, transpose_b=transpose_b, **kwargs)
    return NAME_LOOKUP[0]("dot")(lhs, rhs, transpose_a=transpose_a, transpose_b=transpose_b,
                                 **kwargs)


def add(lhs, rhs):
    """`lhs + rhs`; csr + csr is csr and row_sparse + row_sparse is row_sparse."""
    return elementwise("add", lhs, rhs)


def subtract(lhs, rhs):
    """`lhs - rhs`; csr - csr is csr and row_sparse - row_sparse is row_sparse."""
    return elementwise("subtract", lhs, rhs)


def multiply(lhs, rhs):
    """`lhs * rhs`; a sparse left operand keeps its storage with a sparse operand of the
    same storage, a dense array or a scalar."""
    return elementwise("multiply", lhs, rhs)


def divide(lhs, rhs):
    """`lhs / rhs`; a sparse array divided by a scalar keeps its storage."""
    return elementwise("divide", lhs, rhs)


elemwise_add, elemwise_sub, elemwise_mul, elemwise_div = add, subtract, multiply, divide


def slice(data, begin=(), end=(), step=(), **kwargs):   # noqa: A001 (MXNet's name)
    """nd.slice (and crop); a csr array sliced with step 1 stays csr, as in MXNet."""
    if isinstance(data, CSRNDArray) and not kwargs:
        sliced = ops.slice_csr(data, begin, end, step)
        if sliced is not None:
            return sliced
    return call_densified("slice", NAME_LOOKUP[0]("slice"), (data, begin, end, step), kwargs)


def square_sum(data, axis=None, keepdims=False, **kwargs):
    """sum(square(data)); of a row_sparse array along axis 1 with keepdims, row_sparse with
    its stored rows (MXNet's kernel), otherwise dense."""
    if isinstance(data, RowSparseNDArray) and axis in (1, -1, (1,), (-1,)) and keepdims \
            and data.ndim == 2 and not kwargs:
        return ops.row_sparse_square_sum(data)
    from ..functions import mx_function       # an underscore op: not in nd's names
    return call_densified("_square_sum", mx_function("_square_sum"), (data,),
                          dict(kwargs, axis=axis, keepdims=keepdims))


def take(a, indices, axis=0, mode="clip", **kwargs):
    """nd.take; rows of a csr array taken with mode 'clip' or 'wrap' are csr, as in MXNet."""
    if isinstance(a, CSRNDArray) and axis == 0 and mode in ("clip", "wrap") and not kwargs:
        return ops.take_csr_rows(a, indices, mode)
    return call_densified("take", NAME_LOOKUP[0]("take"), (a, indices),
                          dict(kwargs, axis=axis, mode=mode))
# names MXNet's sparse namespace shares with the nd namespace: the sparse-aware versions
SPARSE_AWARE = {"dot": dot, "cast_storage": cast_storage, "retain": retain,
                "elemwise_add": add, "elemwise_sub": subtract, "elemwise_mul": multiply,
                "elemwise_div": divide, "slice": slice, "crop": slice, "take": take,
                "_square_sum": square_sum}


def call_sparse(name, dense_fn, args, kwargs):
    """nd.`name` given a sparse operand: the sparse implementation if there is one (with
    MXNet's result storage), else `dense_fn` on dense copies, with one warning."""
    sparse_fn = SPARSE_AWARE.get(name)
    if sparse_fn is not None:
        return sparse_fn(*args, **kwargs)
    return call_densified(name, dense_fn, args, kwargs)


__all__ = ["BaseSparseNDArray", "CSRNDArray", "RowSparseNDArray", "csr_matrix",
           "row_sparse_array", "zeros", "empty", "array", "cast_storage", "dot", "retain",
           "add", "subtract", "multiply", "divide", "elemwise_add", "elemwise_sub",
           "elemwise_mul", "elemwise_div", "rand_sparse_ndarray"]


def __getattr__(name):
    # another nd function, through the sparse namespace: dense copies of sparse operands
    fn = NAME_LOOKUP[0](name) if NAME_LOOKUP and not name.startswith("_") else None
    if fn is None or not callable(fn) or isinstance(fn, type):
        raise AttributeError(f"module 'mx.nd.sparse' has no attribute {name!r}")

    def densified(*args, **kwargs):
        return call_densified(name, fn, args, kwargs)
    densified.__name__ = name
    densified.__doc__ = f"nd.{name} on dense copies of sparse operands."
    return densified
