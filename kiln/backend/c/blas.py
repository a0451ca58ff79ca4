"""Finding a CBLAS sgemm/dgemm to call from generated code.

NumPy's wheels bundle OpenBLAS and export ILP64 CBLAS symbols (`scipy_cblas_sgemm64_`).
Calling the copy NumPy already loaded shares its thread pool; loading a second OpenBLAS
would make two pools fight. Other NumPy builds name things differently, so every lookup is
defensive and the caller falls back to kiln's own loops when nothing is found.
"""
import ctypes
import glob
import os

_CANDIDATES = (
    ("scipy_cblas_sgemm64_", "scipy_cblas_dgemm64_", 64),
    ("cblas_sgemm64_", "cblas_dgemm64_", 64),
    ("cblas_sgemm", "cblas_dgemm", 32),
)

_found = None


def find_gemm():
    """(sgemm address, dgemm address, integer bits) or None."""
    global _found
    if _found is not None:
        return _found or None
    _found = False
    if os.environ.get("KILN_NO_BLAS"):
        return None
    import numpy
    roots = [os.path.join(os.path.dirname(numpy.__file__), os.pardir, "numpy.libs"),
             os.path.join(os.path.dirname(numpy.__file__), ".dylibs")]
    libs = []
    for root in roots:
        libs += sorted(glob.glob(os.path.join(root, "*openblas*")))
    for path in libs:
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        for sname, dname, bits in _CANDIDATES:
            s, d = getattr(lib, sname, None), getattr(lib, dname, None)
            if s is not None and d is not None:
                _found = (ctypes.cast(s, ctypes.c_void_p).value,
                          ctypes.cast(d, ctypes.c_void_p).value, bits)
                return _found
    return None
