"""Eager float32 matmuls on the C runtime's gemm: the kernel compiled programs use.

NumPy's matmul runs on OpenBLAS's own thread pool, whose threads spin for a long while
after each call. In eager mode its calls alternate with oneDNN's OpenMP threads (conv,
pooling) and kiln's pool, and on two cores the spinning threads take the core the next
call needs: a LeNet training step ran 187 ms eagerly with OpenBLAS threaded against 99 ms
with it single-threaded. kiln's pool sleeps soon after a job, and its idle workers never
hold a call up, so eager matmuls go there too: one pool at a time.
"""
import ctypes
import threading

import numpy as _np

from .kernels import GEMM_BLAS_MIN_FLOPS

_fn = []
_lock = threading.Lock()     # one eager gemm at a time on the shared runtime


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
    """(transposed?, leading dimension) of a 2-D float32 array, or None if neither it nor
    its transpose is C-contiguous."""
    if x.flags.c_contiguous:
        return 0, x.shape[1]
    if x.flags.f_contiguous:
        return 1, x.shape[0]
    return None


def matmul(a, b):
    """a @ b for 2-D float32 arrays big enough to pay for the call, else None."""
    if a.ndim != 2 or b.ndim != 2 or a.dtype != _np.float32 or b.dtype != _np.float32:
        return None
    m, k = a.shape
    n = b.shape[1]
    if m * n * k < GEMM_BLAS_MIN_FLOPS:
        return None
    fa, fb = _operand(a), _operand(b)
    if fa is None or fb is None:
        return None
    fn = _sgemm()
    if fn is None:
        return None
    c = _np.empty((m, n), _np.float32)
    with _lock:
        fn(fa[0], fb[0], m, n, k, 1.0, a.ctypes.data, fa[1], b.ctypes.data, fb[1], 0.0,
           c.ctypes.data)
    return c
