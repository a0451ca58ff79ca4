"""MXNet 1.x's sparse arrays: `CSRNDArray` (a SciPy CSR matrix) and `RowSparseNDArray` (the
stored rows and their sorted int64 row indices). Both are eager only (MXNet's are too: a
hybridized graph sees dense arrays). What has no sparse implementation runs on a dense copy,
with one KilnPerformanceWarning per operation (`densify`)."""
import numpy as _np

from ...._core.base import KilnError, where_in_user_code
from ...._core.context import check_usable, cpu
from ...._core.ndarray import ndarray, as_array
from ....backend.fallbacks import warn_once

INDEX_DTYPE = _np.int64

# what the arrays' methods call in creation.py and ops.py (which build these arrays), set
# by kiln/mx/nd/sparse/__init__.py: elementwise, zero_preserving, retain, dense_to_sparse,
# row_sparse_array
IMPLEMENTATIONS = {}


def scipy_sparse():
    """scipy.sparse, imported on first use: SciPy is optional for kiln, required for sparse."""
    try:
        import scipy.sparse as sp
    except ImportError as exc:
        raise KilnError("sparse storage (csr, row_sparse) needs SciPy, which is not "
                        "installed: pip install scipy") from exc
    return sp


def check_csr_dtype(dtype, what):
    """Refuse value dtypes SciPy's CSR matrices cannot hold (float16, bfloat16)."""
    dtype = _np.dtype(dtype)
    if dtype.kind not in "biuf" or dtype.itemsize < 4 and dtype.kind == "f":
        raise KilnError(f"{what}: csr storage holds bool, integer, float32 or float64 values "
                        f"(SciPy sparse), got {dtype}{where_in_user_code()}")
    return dtype


def densify(what, stype):
    """Warn once per (operation, storage type) that `what` runs on a dense copy."""
    warn_once(("sparse-fallback", what, stype),
              f"{what} has no {stype} implementation; it runs on a dense copy of the sparse "
              f"operand(s) and returns a dense array")


class BaseSparseNDArray(ndarray):
    """What MXNet's two sparse arrays share: shape, dtype, context, conversions, copies,
    operators (sparse where MXNet keeps them sparse, kiln/mx/nd/sparse/ops.py).

    As in MXNet (`BaseSparseNDArray(NDArray)`), a sparse array is an array: it has a
    gradient (`attach_grad`, of its own storage unless told otherwise), takes part in
    `autograd.record()` (kiln/mx/nd/sparse/tape.py) and, given to a dense operation or
    method, is read as its dense value (`_data` below), with the dense gradient."""
    __array_priority__ = 200.0      # NumPy defers mixed operators to these classes

    stype = None
    ndim = 2
    # the array's slots, for an object made without ndarray's constructor: an eager value
    # (never a graph node), no tape entry, no gradient, a view of nothing
    _node = None
    _tape = None
    _tidx = 0
    _grad = None
    _grad_req = None
    _view = None

    @property
    def _data(self):
        # what a dense operation reads: the dense value (a copy: writes into it are lost,
        # so the writing paths, __setitem__ and the in-place operators, are this class's)
        return self.asnumpy()

    @property
    def size(self):
        return int(_np.prod(self.shape))

    _ctx = None     # the context it was made on (creation.py sets it); kiln computes on cpu

    @property
    def ctx(self):
        return self._ctx or cpu()

    context = ctx

    def check_format(self, full_check=True):
        """Raise a KilnError unless the parts make a valid array of this storage (MXNet's
        check_format). kiln checks the parts when an array is made, so this finds an array
        valid unless its buffers were changed in place."""
        problem = self._format_problem(full_check)
        if problem:
            raise KilnError(f"check_format: {problem}{where_in_user_code()}")

    def __len__(self):
        return self.shape[0]

    def asnumpy(self):
        """The dense value as a NumPy array."""
        raise NotImplementedError

    def todense(self):
        """A dense copy (kiln's ndarray); inside autograd.record() on the tape as the
        identity, as MXNet's cast_storage."""
        return IMPLEMENTATIONS["link_storage"](self, ndarray._wrap(self.asnumpy()))

    def tostype(self, stype):
        """This array in storage `stype` ('default', 'csr' or 'row_sparse')."""
        if stype == self.stype:
            return self
        if stype == "default":
            return self.todense()
        return IMPLEMENTATIONS["link_storage"](
            self, IMPLEMENTATIONS["dense_to_sparse"](self.asnumpy(), stype))

    def detach(self):
        """The same value in the same storage, off the tape (MXNet's detach)."""
        return self._parts_copy(copy=False)

    def copyto(self, other):
        """A copy on `other` (a context), or written into `other` (an array), which must
        have the same shape; a sparse target takes this array's storage."""
        if isinstance(other, BaseSparseNDArray):
            if other.shape != self.shape:
                raise KilnError(f"copyto: expected a target of shape {self.shape}, got "
                                f"{other.shape}{where_in_user_code()}")
            other._assign(self.tostype(other.stype).astype(other.dtype))
            return other
        if isinstance(other, ndarray):
            other[...] = self.asnumpy()
            return other
        check_usable(other, "copyto")
        return self.copy()

    def as_in_context(self, ctx):
        """This array (kiln runs on the CPU only)."""
        check_usable(ctx, "as_in_context")
        return self

    def wait_to_read(self):
        """Nothing to wait for: kiln's sparse arrays are computed eagerly."""

    def __array__(self, dtype=None, copy=None):
        value = self.asnumpy()
        return value if dtype is None else value.astype(dtype)

    def __repr__(self):
        shape = "x".join(str(d) for d in self.shape)
        return f"\n{self.asnumpy()}\n<{type(self).__name__} {shape} @cpu(0)>"

    def __getattribute__(self, name):
        # a public dense array method or property these classes do not define: on a dense
        # copy, with one warning per name (its result is dense, as MXNet's fallback's)
        if name[0] == "_" or name in ARRAY_PROTOCOL:
            return object.__getattribute__(self, name)
        klass = type(self)
        dense = _DENSE_ONLY.get((klass, name))
        if dense is None:
            dense = _DENSE_ONLY[(klass, name)] = _defined_by_dense_class(klass, name)
        if not dense:
            return object.__getattribute__(self, name)
        densify(f"{klass.__name__}.{name}", self.stype)
        return getattr(self.todense(), name)

    # operators: kiln/mx/nd/sparse/ops.py decides the result's storage as MXNet does
    def __add__(self, other):
        return _elementwise("add", self, other)

    def __radd__(self, other):
        return _elementwise("add", other, self)

    def __sub__(self, other):
        return _elementwise("subtract", self, other)

    def __rsub__(self, other):
        return _elementwise("subtract", other, self)

    def __mul__(self, other):
        return _elementwise("multiply", self, other)

    def __rmul__(self, other):
        # a scalar times a sparse array keeps its storage, as the array times the scalar
        if isinstance(other, (int, float, _np.number)):
            return _elementwise("multiply", self, other)
        return _elementwise("multiply", other, self)

    def __truediv__(self, other):
        return _elementwise("divide", self, other)

    def __rtruediv__(self, other):
        return _elementwise("divide", other, self)

    def __neg__(self):
        return _elementwise("multiply", self, -1)

    # `x op= y` writes the result into x, in x's storage, as MXNet does (ndarray's in-place
    # operators would write into the dense value, which for a sparse array is a copy)
    def _in_place(self, result):
        self._assign(result if result.stype == self.stype else result.tostype(self.stype))
        return self

    def __iadd__(self, other):
        return self._in_place(self.__add__(other))

    def __isub__(self, other):
        return self._in_place(self.__sub__(other))

    def __imul__(self, other):
        return self._in_place(self.__mul__(other))

    def __itruediv__(self, other):
        return self._in_place(self.__truediv__(other))

    # comparisons, ** and %: sparse when zeros stay zero (kiln/mx/nd/sparse/ops.py)
    def __eq__(self, other):
        return _zero_preserving("equal", self, other)

    def __ne__(self, other):
        return _zero_preserving("not_equal", self, other)

    def __gt__(self, other):
        return _zero_preserving("greater", self, other)

    def __ge__(self, other):
        return _zero_preserving("greater_equal", self, other)

    def __lt__(self, other):
        return _zero_preserving("less", self, other)

    def __le__(self, other):
        return _zero_preserving("less_equal", self, other)

    def __pow__(self, other):
        return _zero_preserving("power", self, other)

    def __rpow__(self, other):
        return _zero_preserving("power", other, self)

    def __mod__(self, other):
        return _zero_preserving("mod", self, other)

    def __rmod__(self, other):
        return _zero_preserving("mod", other, self)

    __hash__ = object.__hash__


# what a sparse array has as an array, not as a dense copy: its shape, type, storage, device
# and autograd (attach_grad, grad, backward)
ARRAY_PROTOCOL = frozenset({"shape", "dtype", "ndim", "size", "stype", "ctx", "context",
                            "device", "is_symbolic", "attach_grad", "grad", "backward"})
_DENSE_ONLY = {}        # (class, name) -> does the name come from the dense array class?


def _defined_by_dense_class(klass, name):
    for k in klass.__mro__:
        if name in k.__dict__:
            return not issubclass(k, BaseSparseNDArray)
    return False


def _elementwise(op, lhs, rhs):
    return IMPLEMENTATIONS["elementwise"](op, lhs, rhs)


def _zero_preserving(op, lhs, rhs):
    return IMPLEMENTATIONS["zero_preserving"](op, lhs, rhs)


class CSRNDArray(BaseSparseNDArray):
    """A 2-D array in compressed sparse row storage (MXNet's `CSRNDArray`): `data` holds the
    stored values row after row, `indices` their column indices and `indptr[i]:indptr[i+1]`
    the stored range of row i. Holds a SciPy `csr_matrix` (`asscipy()`)."""
    stype = "csr"
    _num_aux = 2        # indptr and indices (MXNet's count of auxiliary arrays)

    def __init__(self, matrix):
        self._csr = matrix

    def _assign(self, other):
        self._csr = other._csr.copy()

    @property
    def shape(self):
        return tuple(self._csr.shape)

    @property
    def dtype(self):
        return self._csr.dtype

    @property
    def data(self):
        """The stored values (a dense 1-D array)."""
        return ndarray._wrap(self._csr.data.copy())

    @property
    def indices(self):
        """The column index of each stored value (int64)."""
        return ndarray._wrap(self._csr.indices.astype(INDEX_DTYPE))

    @property
    def indptr(self):
        """Row i's values are data[indptr[i]:indptr[i+1]] (int64, length rows + 1)."""
        return ndarray._wrap(self._csr.indptr.astype(INDEX_DTYPE))

    def asnumpy(self):
        """The dense value as a NumPy array."""
        return self._csr.toarray()

    def asscipy(self):
        """A copy as a `scipy.sparse.csr_matrix`."""
        return self._csr.copy()

    def copy(self):
        """A copy with its own buffers."""
        return self._parts_copy(copy=True)

    def _parts_copy(self, copy):
        return CSRNDArray(self._csr.copy() if copy else self._csr)

    def __reduce__(self):       # its parts (ndarray's own reduce would pickle it dense)
        return CSRNDArray, (self._csr,)

    def astype(self, dtype, copy=True):
        """A copy with values of `dtype`, still in CSR storage."""
        if not copy and _np.dtype(dtype) == self.dtype:
            return self
        return CSRNDArray(self._csr.astype(check_csr_dtype(dtype, "CSRNDArray.astype")))

    def __getitem__(self, key):
        # MXNet slices CSR arrays by rows only: an int is the one-row slice key:key+1
        rows = self.shape[0]
        if isinstance(key, (int, _np.integer)):
            if not -rows <= key < rows:
                raise KilnError(f"CSRNDArray[{key}]: row index out of range for {rows} rows"
                                f"{where_in_user_code()}")
            key = int(key) % rows
            key = slice(key, key + 1)
        if not isinstance(key, slice) or key.step not in (None, 1):
            raise KilnError(f"CSRNDArray[...]: expected an int or a row slice with step 1, "
                            f"got {key!r}{where_in_user_code()}")
        return CSRNDArray(self._csr[key])

    def _format_problem(self, full_check):
        m = self._csr
        indptr, indices = m.indptr, m.indices
        if indptr.size != m.shape[0] + 1 or indptr[0] != 0 or indptr[-1] != indices.size \
                or _np.any(_np.diff(indptr) < 0):
            return f"indptr must rise from 0 to {indices.size}, got {indptr.tolist()}"
        if indices.size and (indices.min() < 0 or indices.max() >= m.shape[1]):
            return f"column indices must be in [0, {m.shape[1]})"
        if full_check and not m.has_sorted_indices:
            return "column indices must be sorted within each row"
        return None

    def __setitem__(self, key, value):
        if key is not Ellipsis and key != slice(None):     # the whole array only
            raise KilnError(f"CSRNDArray[...] = v: only [:] is supported (as in MXNet), got "
                            f"{key!r}{where_in_user_code()}")
        dense = as_dense_value(value)
        self._assign(IMPLEMENTATIONS["dense_to_sparse"](
            _np.broadcast_to(dense, self.shape).astype(self.dtype), "csr"))


class RowSparseNDArray(BaseSparseNDArray):
    """An array whose stored rows (its first axis) are listed (MXNet's `RowSparseNDArray`):
    `data[k]` is row `indices[k]`; absent rows are zero. Indices are sorted and unique. The
    layout of embedding and sparse gradients."""
    stype = "row_sparse"
    _num_aux = 1        # indices

    def __init__(self, rows, indices, shape):
        self._rows = rows
        self._idx = indices
        self._shape = tuple(int(d) for d in shape)

    def _assign(self, other):
        self._rows, self._idx = other._rows.copy(), other._idx.copy()

    @property
    def shape(self):
        return self._shape

    @property
    def ndim(self):
        return len(self._shape)

    @property
    def dtype(self):
        return self._rows.dtype

    @property
    def data(self):
        """The stored rows, shape (len(indices),) + shape[1:]."""
        return ndarray._wrap(self._rows.copy())

    @property
    def indices(self):
        """The sorted row index of each stored row (int64)."""
        return ndarray._wrap(self._idx.copy())

    def asnumpy(self):
        """The dense value as a NumPy array."""
        out = _np.zeros(self._shape, dtype=self.dtype)
        out[self._idx] = self._rows
        return out

    def copy(self):
        """A copy with its own buffers."""
        return self._parts_copy(copy=True)

    def _parts_copy(self, copy):
        if copy:
            return RowSparseNDArray(self._rows.copy(), self._idx.copy(), self._shape)
        return RowSparseNDArray(self._rows, self._idx, self._shape)

    def __reduce__(self):       # its parts (ndarray's own reduce would pickle it dense)
        return RowSparseNDArray, (self._rows, self._idx, self._shape)

    def astype(self, dtype, copy=True):
        """A copy with values of `dtype`, still in row_sparse storage."""
        if not copy and _np.dtype(dtype) == self.dtype:
            return self
        return RowSparseNDArray(self._rows.astype(dtype), self._idx.copy(), self._shape)

    def _format_problem(self, full_check):
        idx = self._idx
        if idx.size and (idx.min() < 0 or idx.max() >= self._shape[0]):
            return f"row indices must be in [0, {self._shape[0]}), got {idx.tolist()}"
        if _np.any(_np.diff(idx) <= 0):
            return f"row indices must be sorted and unique, got {idx.tolist()}"
        return None

    def retain(self, indices):
        """A row_sparse array keeping only the stored rows listed in `indices`."""
        return IMPLEMENTATIONS["retain"](self, indices)

    def __getitem__(self, key):
        if key == slice(None):
            return self
        raise KilnError(f"RowSparseNDArray[...]: only [:] is supported (as in MXNet), got "
                        f"{key!r}; use .tostype('default') first{where_in_user_code()}")

    def __setitem__(self, key, value):
        if key is not Ellipsis and key != slice(None):     # the whole array only
            raise KilnError(f"RowSparseNDArray[...] = v: only [:] is supported, got {key!r}"
                            f"{where_in_user_code()}")
        if not isinstance(value, BaseSparseNDArray):     # a scalar or a dense array fills it
            value = _np.broadcast_to(as_dense_value(value), self._shape)
        self._assign(IMPLEMENTATIONS["row_sparse_array"](value, shape=self._shape,
                                                         dtype=self.dtype))


def as_dense_value(x):
    """A NumPy value of `x` (sparse, ndarray, NumPy array, list or scalar)."""
    if isinstance(x, BaseSparseNDArray):
        return x.asnumpy()
    if isinstance(x, ndarray):
        return x.asnumpy()
    if isinstance(x, _np.ndarray):
        return x
    return as_array(x).asnumpy()
