"""Eager float32 matmuls on the C runtime's gemm: the kernel compiled programs use.

NumPy's matmul runs on OpenBLAS's own thread pool, whose threads spin for a long while
after each call. In eager mode its calls alternate with oneDNN's OpenMP threads (conv,
pooling) and kiln's pool, and on two cores the spinning threads take the core the next
call needs: a LeNet training step ran 187 ms eagerly with OpenBLAS threaded against 99 ms
with it single-threaded. kiln's pool sleeps soon after a job, and its idle workers never
hold a call up, so eager matmuls go there too: one pool at a time.

With oneDNN loaded, matmuls of at least DNNL_MIN_ROWS rows run on its matmul primitive
instead (one op per shape, as the conv ops, reading the weight as it lies: an eager array
has no version kiln could key a packed copy on). Measured here side by side under load,
64 x 512 x 256 took 263-367 us on oneDNN against 551-556 on MKL in kiln's pool, and
1024 x 512 x 256 5.4-5.5 ms against 7.1-7.8.

The module registers itself as the eager kernel of the matmul primitive on import.
"""
import ctypes
import sys
import threading

import numpy as _np

from ..._core.base import KilnError
from ...ops.registry import REGISTRY
from .dnnl_dense import DNNL_MIN_ROWS
from . import build, vector_math
from .kernels import GEMM_BLAS_MIN_FLOPS, GEMM_BLAS_MIN_ROWS, gemm_prelude
from .loops import prelude

_fn = []
_lock = threading.Lock()     # one eager gemm at a time on the shared runtime
_refused = set()             # shapes oneDNN has only a reference kernel for
_dnnl = []                   # the oneDNN layer's functions this module calls


def _sgemm():
    if not _fn:
        from .runtime import runtime
        rt = runtime()
        fn = None
        if rt is not None and rt.sgemm:
            I64, F, P = ctypes.c_int64, ctypes.c_float, ctypes.c_void_p
            fn = ctypes.CFUNCTYPE(None, ctypes.c_int, ctypes.c_int, I64, I64, I64, F, P, I64,
                                  P, I64, F, P)(rt.sgemm)
        _fn.append(fn)
    return _fn[0]


def _operand(x):
    """(transposed?, leading dimension) of a 2-D float32 array whose rows (or columns) are
    contiguous, at any distance from each other; None otherwise. A row of a 3-D array
    (`for X in inputs` over a one-hot sequence laid out batch-major) is such a matrix, and
    NumPy's matmul of it on two busy cores waited milliseconds for OpenBLAS's threads."""
    (rows, cols), item = x.shape, x.itemsize
    if x.strides[0] % item or x.strides[1] % item:
        return None
    along_row, along_col = x.strides[0] // item, x.strides[1] // item
    if (cols == 1 or along_col == 1) and (rows == 1 or along_row >= cols):
        return 0, along_row if rows > 1 else cols
    if (rows == 1 or along_row == 1) and (cols == 1 or along_col >= rows):
        return 1, along_col if cols > 1 else rows
    return None


def matmul(a, b):
    """a @ b for 2-D float32 arrays whose rows (or columns) are contiguous, else None."""
    if a.ndim != 2 or b.ndim != 2 or a.dtype != _np.float32 or b.dtype != _np.float32:
        return None
    m, k = a.shape
    n = b.shape[1]
    fa, fb = _operand(a), _operand(b)
    if fa is None or fb is None:
        return None
    if m < GEMM_BLAS_MIN_ROWS or m * n * k < GEMM_BLAS_MIN_FLOPS:
        return _on_kiln_loops(a, b, fa, fb)
    if m >= DNNL_MIN_ROWS:
        c = _on_dnnl(a, b, fa, fb)
        if c is not None:
            return c
    fn = _sgemm()
    if fn is None:
        return None
    c = _np.empty((m, n), _np.float32)
    with _lock:
        fn(fa[0], fb[0], m, n, k, 1.0, a.ctypes.data, fa[1], b.ctypes.data, fb[1], 0.0,
           c.ctypes.data)
    return c


# Few rows or few multiply-adds: compiled programs run kiln's own loops (kernels.py's
# kiln_gemm_float, a dot product per output), so eager code runs the same loops, compiled
# once from the same source: compiled equals eager to the bit (a Dense layer on a batch of
# 4 summed 65536 products in another order on the BLAS and differed by 2e-5).
_EAGER_ENTRY = """
void kiln_eager_gemm_float(int ta, int tb, int64_t M, int64_t N, int64_t K, const float *A,
                           int64_t lda, const float *B, int64_t ldb, float *C) {
  kiln_gemm_float(ta, tb, M, N, K, 1.0f, A, lda, B, ldb, 0.0f, C);
}
"""
_loops = []


def _kiln_loops():
    if not _loops:
        fn = None
        try:
            lib = build.load(prelude() + gemm_prelude() + _EAGER_ENTRY,
                             extra_flags=vector_math.flags())
            from .runtime import runtime
            rt = runtime()
            if rt is not None:
                lib.kiln_set_runtime(ctypes.c_void_p(rt.sgemm or None),
                                     ctypes.c_void_p(rt.dgemm or None),
                                     ctypes.c_void_p(rt.parallel), None)
            I64, P = ctypes.c_int64, ctypes.c_void_p
            fn = ctypes.CFUNCTYPE(None, ctypes.c_int, ctypes.c_int, I64, I64, I64, P, I64, P,
                                  I64, P)(ctypes.cast(lib.kiln_eager_gemm_float, P).value)
        except KilnError:        # no C compiler: NumPy's matmul
            fn = None
        _loops.append(fn)
    return _loops[0]


def _on_kiln_loops(a, b, operand_a, operand_b):
    fn = _kiln_loops()
    if fn is None:
        return None
    (m, k), n = a.shape, b.shape[1]
    c = _np.empty((m, n), _np.float32)
    fn(operand_a[0], operand_b[0], m, n, k, a.ctypes.data, operand_a[1], b.ctypes.data,
       operand_b[1], c.ctypes.data)
    return c


def _on_dnnl(a, b, operand_a, operand_b):
    """a @ b on oneDNN's matmul, or None without the library; operand_*: (stored
    transposed?, leading dimension) as _operand gives them."""
    if not _dnnl:      # imported once: an import statement costs a microsecond a call
        from ..dnnl.library import shim
        from ..dnnl.ops import _run
        from .dnnl_dense import _new_op
        _dnnl.append((shim, _run, _new_op))
    shim, _run, _new_op = _dnnl[0]
    if shim() is None:
        return None
    (m, k), n = a.shape, b.shape[1]
    (ta, lda), (tb, ldb) = operand_a, operand_b
    args = (2, (m, k), (1, lda) if ta else (lda, 1), (k, n), (1, ldb) if tb else (ldb, 1), n,
            0, 0, 0, 0, 0)
    key = ("matmul",) + args
    if key in _refused:
        return None
    c = _np.empty((m, n), _np.float32)
    try:
        _run((key, lambda lib: _new_op(lib, args)), (a, b, c))
    except KilnError:       # only a reference kernel for this shape: the runtime's gemm
        _refused.add(key)
        return None
    return c


# matmul's eager kernel: kiln/ops/linalg.py calls this module's `matmul` on 2-D arrays
REGISTRY["matmul"].lowerings["eager"] = sys.modules[__name__]
