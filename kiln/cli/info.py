"""`python -m kiln info`: what kiln runs on here: versions, the CPU's vector extensions,
the C compiler, and oneDNN with the instruction set it dispatches to (which decides
whether bfloat16 and int8 run on fast kernels: avx512_core_bf16 / avx512_core_amx for
bfloat16, avx512_core_vnni / avx2_vnni and up for int8)."""
import platform

import numpy as _np

from .._version import __version__
from ..backend.c import build
from ..backend.dnnl import library, lowp

CPU_FLAGS = ("avx2", "avx512f", "avx512_bf16", "avx512_vnni", "avx_vnni", "amx_bf16",
             "amx_int8")


def cpu_flags():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    have = set(line.split(":", 1)[1].split())
                    return [flag for flag in CPU_FLAGS if flag in have]
    except OSError:
        pass
    return []


def lines():
    out = [f"kiln {__version__}, NumPy {_np.__version__}, Python {platform.python_version()}",
           f"CPU: {platform.processor() or platform.machine()}; "
           f"extensions: {', '.join(cpu_flags()) or 'unknown'}"]
    try:
        out.append(f"C compiler: {' '.join(build.compiler())}")
    except build.CompilerUnavailable as exc:
        out.append(f"C compiler: none ({exc})")
    if library.available():
        out.append(f"oneDNN: ISA {lowp.isa()}, {library.threads()} threads")
    else:
        out.append(f"oneDNN: unavailable ({library.unavailable_reason()})")
    try:
        import ml_dtypes
        out.append(f"bfloat16: ml_dtypes {ml_dtypes.__version__}")
    except ImportError:
        out.append("bfloat16: unavailable (pip install ml_dtypes)")
    return out


def main(argv):
    for line in lines():
        print(line)
    return 0
