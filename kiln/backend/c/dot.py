"""Dot products for kiln's own small matmuls (a batch-1 Dense layer is one per weight row).

A batch-1 layer streams its weights from cache once per call, so its speed is the speed
of that stream. GCC vectorizes the plain loop of kernels.py, but into separate multiplies
and adds with its pointers spilled. Written with 16-float vectors (four rows, two
accumulators per row, multiply-adds fused), the 256 x 512 layer went from 7.3 to 5.7 us
single-threaded here, about the rate at which this machine streams 512 KB from L2.

The vectors are GCC/Clang vector extensions, not intrinsics: the intrinsics header alone
takes 0.3 s to compile, which would land on every cold first call. Only AVX-512 machines
take this path (16 floats make one register there; -march=native decides); the others run
the plain loop. The part of a row left after the last whole vector goes one by one, so no
load reads past the end of a row.
"""

from . import fixed_source


def source():
    """The dot products' C, csrc/dot.h (kernels.gemm_prelude puts it in every program)."""
    return fixed_source.text("dot.h")
