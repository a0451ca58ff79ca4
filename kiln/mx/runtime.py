"""MXNet's `mx.runtime`: which features this build has, as `Features()['MKLDNN'].enabled`.

The names are MXNet 1.9.1's, answered for kiln on this machine: the CPU_* flags come from
the running CPU (kiln detects the instruction set at run time rather than at build time),
MKLDNN/ONEDNN from whether kiln's oneDNN layer loads (kiln/backend/dnnl), OPENMP from the
same (the oneDNN wheel kiln uses runs on libgomp), DIST_KVSTORE from whether mpi4py imports,
OPENCV from whether kiln.image has its image library (Pillow). GPU features are all off.
"""
import collections
import importlib.util

# MXNet 1.9.1's feature names, in its order; kiln answers each in _enabled
NAMES = ("CUDA", "CUDNN", "NCCL", "CUDA_RTC", "TENSORRT", "CPU_SSE", "CPU_SSE2", "CPU_SSE3",
         "CPU_SSE4_1", "CPU_SSE4_2", "CPU_SSE4A", "CPU_AVX", "CPU_AVX2", "OPENMP", "SSE",
         "F16C", "JEMALLOC", "BLAS_OPEN", "BLAS_ATLAS", "BLAS_MKL", "BLAS_APPLE", "LAPACK",
         "MKLDNN", "OPENCV", "CAFFE", "PROFILER", "DIST_KVSTORE", "CXX14",
         "INT64_TENSOR_SIZE", "SIGNAL_HANDLER", "DEBUG", "TVM_OP", "ONEDNN", "CPU_AVX512F")

_CPU_FLAGS = {"CPU_SSE": "sse", "CPU_SSE2": "sse2", "CPU_SSE3": "pni", "CPU_SSE4_1": "sse4_1",
              "CPU_SSE4_2": "sse4_2", "CPU_SSE4A": "sse4a", "CPU_AVX": "avx",
              "CPU_AVX2": "avx2", "F16C": "f16c", "CPU_AVX512F": "avx512f"}


class Feature:
    """One feature: `name` and `enabled`."""
    __slots__ = ("name", "enabled")

    def __init__(self, name, enabled):
        self.name, self.enabled = name, bool(enabled)

    def __repr__(self):
        return f"{'✔' if self.enabled else '✖'} {self.name}"


def _has_module(name):
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


def _onednn():
    from ..backend.dnnl import library
    return library.available()


def _enabled(name, cpu_flags):
    if name in _CPU_FLAGS:
        return _CPU_FLAGS[name] in cpu_flags
    if name in ("MKLDNN", "ONEDNN", "OPENMP"):
        return _onednn()
    if name == "OPENCV":
        return _has_module("PIL")
    if name == "DIST_KVSTORE":
        return _has_module("mpi4py")
    if name in ("LAPACK", "BLAS_OPEN", "INT64_TENSOR_SIZE", "SIGNAL_HANDLER", "PROFILER",
                "CXX14"):
        # NumPy's LAPACK/OpenBLAS, int64 shapes, Python's error reporting, kiln.profiler
        return True
    return False


def feature_list():
    """Every Feature, in MXNet's order (plus kiln's ONEDNN and CPU_AVX512F)."""
    from ..backend.c.build import _cpu_flags
    flags = _cpu_flags()
    return [Feature(n, _enabled(n, flags)) for n in NAMES]


class Features(collections.OrderedDict):
    """name -> Feature; `Features().is_enabled('MKLDNN')`."""

    def __init__(self):
        super().__init__((f.name, f) for f in feature_list())

    def __repr__(self):
        return str(list(self.values()))

    def is_enabled(self, feature_name):
        name = feature_name.upper()
        if name not in self:
            raise RuntimeError(f"Feature '{feature_name}' is unknown, known features are: "
                               f"{list(self.keys())}")
        return self[name].enabled
