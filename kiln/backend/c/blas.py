"""Finding a CBLAS sgemm/dgemm for the gemm runtime to call.

Two providers, chosen by KILN_BLAS ('mkl', 'openblas' or 'none'), else the first found:
- Intel MKL from the optional `kiln[mkl]` extra (PyPI's `mkl` wheel puts libmkl_rt in
  the environment's lib/). It is faster than OpenBLAS at the small and medium shapes
  kiln serves. kiln loads its own copy and keeps it single-threaded per call.
- The OpenBLAS that NumPy's wheels bundle, exporting ILP64 CBLAS symbols
  (`scipy_cblas_sgemm64_`). Calling the copy NumPy already loaded avoids a second library.

Both export a per-thread thread-count setter, which the runtime uses to run each BLAS call
on one thread while it does the parallel split itself. Every lookup is defensive; with
nothing found, generated code uses kiln's own loops.
"""
import ctypes
import glob
import os
import sys
from dataclasses import dataclass

from .. import fallbacks

_OPENBLAS_SYMBOLS = (
    ("scipy_cblas_sgemm64_", "scipy_cblas_dgemm64_", 64),
    ("cblas_sgemm64_", "cblas_dgemm64_", 64),
    ("cblas_sgemm", "cblas_dgemm", 32),
)
_MKL_SEQUENTIAL = 1      # MKL_THREADING_SEQUENTIAL in mkl_service.h
_MKL_LP64 = 0            # MKL_INTERFACE_LP64


@dataclass(frozen=True)
class Blas:
    name: str
    sgemm: int
    dgemm: int
    bits: int               # width of the BLAS integer arguments
    threads_local: int      # address of `int f(int)` setting this thread's count, or 0
    # addresses of cblas_sgemm_pack_get_size, cblas_sgemm_pack, cblas_sgemm_compute (MKL
    # only; see packed.py), or ()
    pack: tuple = ()


def _address(lib, name):
    fn = getattr(lib, name, None)
    return ctypes.cast(fn, ctypes.c_void_p).value if fn is not None else 0


def _mkl():
    names = ["libmkl_rt.so*", "libmkl_rt*.dylib", "mkl_rt*.dll"]
    roots = [os.path.join(sys.prefix, "lib"), os.path.join(sys.prefix, "Library", "bin")]
    paths = [p for root in roots for n in names for p in sorted(glob.glob(os.path.join(root, n)))]
    for path in paths:
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        if not (_address(lib, "cblas_sgemm") and _address(lib, "cblas_dgemm")):
            continue
        # 32-bit integers whatever MKL_INTERFACE_LAYER says: the runtime is built for them
        interface = getattr(lib, "MKL_Set_Interface_Layer", None)
        if interface is not None:
            interface.argtypes = [ctypes.c_int]
            if interface(_MKL_LP64) != _MKL_LP64:
                continue
        # sequential MKL: the runtime does the threading, and two OpenMP pools in one
        # process (MKL's and a peer's) would fight over two cores
        setter = getattr(lib, "MKL_Set_Threading_Layer", None)
        if setter is not None:
            setter.argtypes = [ctypes.c_int]
            setter(_MKL_SEQUENTIAL)
        pack = tuple(_address(lib, name) for name in (
            "cblas_sgemm_pack_get_size", "cblas_sgemm_pack", "cblas_sgemm_compute"))
        return Blas("mkl", _address(lib, "cblas_sgemm"), _address(lib, "cblas_dgemm"), 32,
                    _address(lib, "MKL_Set_Num_Threads_Local"), pack if all(pack) else ())
    return None


def _openblas():
    import numpy
    roots = [os.path.join(os.path.dirname(numpy.__file__), os.pardir, "numpy.libs"),
             os.path.join(os.path.dirname(numpy.__file__), ".dylibs")]
    for path in [p for root in roots for p in sorted(glob.glob(os.path.join(root, "*openblas*")))]:
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        for sname, dname, bits in _OPENBLAS_SYMBOLS:
            s, d = _address(lib, sname), _address(lib, dname)
            if s and d:
                return Blas("openblas", s, d, bits, _address(lib, "openblas_set_num_threads_local"))
    return None


_PROVIDERS = {"mkl": _mkl, "openblas": _openblas}
_found = None


def find_blas():
    """The Blas to use, or None (kiln.explain then says why)."""
    global _found
    if _found is None:
        _found = _search() or False
        if not _found:
            fallbacks.record("BLAS", "matmuls run on kiln's own generated loops",
                             f"no BLAS is used: {_why_none()}")
    return _found or None


def _why_none():
    choice = os.environ.get("KILN_BLAS", "").lower()
    if os.environ.get("KILN_NO_BLAS"):
        return "turned off (KILN_NO_BLAS)"
    if choice == "none":
        return "turned off (KILN_BLAS=none)"
    if choice in _PROVIDERS:
        return f"KILN_BLAS={choice}, and it was not found"
    return ("no BLAS found (MKL from `pip install mkl`, or the OpenBLAS inside NumPy's "
            "wheels)")


def _search():
    choice = os.environ.get("KILN_BLAS", "").lower()
    if os.environ.get("KILN_NO_BLAS") or choice == "none":
        return None
    if choice in _PROVIDERS:
        return _PROVIDERS[choice]()
    for find in _PROVIDERS.values():
        blas = find()
        if blas is not None:
            return blas
    return None
