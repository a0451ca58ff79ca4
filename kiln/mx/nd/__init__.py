"""`kiln.nd` / `kiln.ndarray`: MXNet 1.x's NDArray namespace, and the eager `F` of
hybrid_forward(F, x).

The array class is MXNet 1.x's NDArray (legacy_array.py), a subclass of kiln's array type
(kiln/_core/ndarray.py) with 1.x semantics. Names resolve on first
use (kiln/mx/f_namespace.py): MXNet 1.x's functions and operator names (functions.py, the op table
in kiln/mx/ops), then npx and np, so F.relu, F.np.sum and F.FullyConnected all work.
"""
from ..._core.ndarray import as_array  # noqa: F401
from ..f_namespace import namespace_attr as _namespace_attr
from . import legacy_array
# MXNet 1.x's class (kiln.np's is the core's); kiln.nd.ndarray names it too (MXNet's module
# path mxnet.ndarray.ndarray resolves to this package: kiln/mx/alias.py)
from .legacy_array import NDArray, NDArray as ndarray  # noqa: F401
from . import contrib, linalg, random, utils, optimizer_ops  # noqa: F401  (mx.nd.random, ...)
from . import functions, methods, namespace, sparse
from ..ops.table import RESOLVERS as OP_RESOLVERS
from .sparse import cast_storage  # noqa: F401  (makes sparse arrays too; F's is the op's)
from .cached_op import CachedOp  # noqa: F401

# nd functions given a sparse array dispatch to kiln/mx/nd/sparse; its namespace falls
# back to nd's functions on dense copies
functions.SPARSE.update(types=(sparse.BaseSparseNDArray,), call=sparse.call_sparse,
                        zeros=sparse.zeros, array=sparse.array,
                        to_record=sparse.creation.to_record,
                        from_record=sparse.creation.from_record)
sparse.NAME_LOOKUP.append(namespace.lookup)
methods.install()       # MXNet 1.x's NDArray methods (x.slice, x.take, ...) on the one array
legacy_array.install(lambda name: _namespace_attr(__name__, name))   # NDArray's 1.x forms
for _space in (contrib, linalg, random, utils, optimizer_ops):
    legacy_array.legacy_module(_space)      # nd.random.uniform(...) is an NDArray too
# symbol nodes of ops kiln computes with nd's sub-namespaces (_linalg_gemm2, ...)
OP_RESOLVERS.append(namespace.resolve_op)

# module-level names of MXNet's ndarray/ndarray.py that code imports from it
py_slice = slice
_STORAGE_TYPE_STR_TO_ID = {"undefined": -1, "default": 0, "row_sparse": 1, "csr": 2}
_STORAGE_TYPE_ID_TO_STR = {v: k for k, v in _STORAGE_TYPE_STR_TO_ID.items()}


def __getattr__(name):
    return _namespace_attr(__name__, name)
