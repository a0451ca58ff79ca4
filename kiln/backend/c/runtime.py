"""The runtime shared by every compiled program: kiln's thread pool, and a BLAS behind it.

`kiln_rt_parallel(fn, ctx, nblocks)` runs fn(ctx, b) for every block b on the calling
thread and the worker threads. The blocks are cut into one contiguous range per thread;
each thread claims from its own range first (so a block's data stays in the same core's
cache call after call), then from the others'. Claims are atomic, so a worker the OS has
not scheduled simply claims nothing and the caller finishes the job alone: on a shared
machine a busy core costs its share of the speed-up. A block a worker claimed and was
then descheduled in the middle of is the exception: the caller waits for it, first
spinning, then asleep (so the OS may run the worker on the caller's core); and when such a
wait is longer than the caller's own part, the pool runs the next jobs on the caller alone
for a few milliseconds (longer while probes keep coming back late), the speed of one
thread rather than a time slice lost per job. Workers spin briefly after a job (a
program's parallel steps come back to back) and then sleep.

`kiln_rt_sgemm(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C)` cuts C into column (or
row) blocks and runs them in parallel, each a single-threaded BLAS call. Generated code
also hands the pool its own loops (the batch-1 matmul, see kernels.py).

The library is compiled once per BLAS integer width and cached like generated code; the
generated code never sees the BLAS's calling convention, only these functions'. Its C is
csrc/runtime.c (with csrc/packed.c); the constants below reach it as #defines.
"""
import ctypes
import os
import threading
from typing import NamedTuple

from . import build, fixed_source, packed
from .blas import find_blas
from ..._core import writes

# below this many multiply-adds a gemm runs in one BLAS call on the calling thread
PARALLEL_MIN_MADDS = 1 << 20
# a block of C gets at least this many multiply-adds, so the per-block call cost stays small
BLOCK_MIN_MADDS = 1 << 18
SPIN_MICROSECONDS = 200
# the caller, done with its part of a job, spins for the others' blocks half as long as
# its part took, at least this long, then sleeps until the last one is counted (a preempted
# worker can then run on its core)
CALLER_SPIN_MICROSECONDS = 50
# a job whose other blocks finish this much later than the caller's own part (beyond the
# length of that part) had a participant descheduled; the next jobs then run on the
# caller alone, for SERIAL_MIN_MICROSECONDS, doubling while probes come back late, up to
# SERIAL_MAX_MICROSECONDS (a recurrent step's matmul waited whole time slices otherwise)
LATE_MICROSECONDS = 100
SERIAL_MIN_MICROSECONDS = 2_000
SERIAL_MAX_MICROSECONDS = 64_000
# blocks per thread: more balance a busy core better, fewer repack the other operand less
BLOCKS_PER_THREAD = 2

_runtime = None
_lock = threading.Lock()


class Runtime(NamedTuple):
    sgemm: int        # address of kiln_rt_sgemm, or 0 when no BLAS was found
    dgemm: int
    parallel: int     # address of kiln_rt_parallel
    blas: str         # 'mkl', 'openblas' or 'none'
    sgemm_cached: int     # address of kiln_rt_sgemm_cached (packed.py), or 0
    new_pack_cache: object    # () -> address of a fresh cache for one call site
    free_pack_cache: object   # (address) -> None
    packs_made: object        # () -> how many times a cache was packed (for tests)


def thread_count():
    """Threads the runtime uses: KILN_NUM_THREADS, else the CPUs this process may run on."""
    value = os.environ.get("KILN_NUM_THREADS")
    if value:
        try:
            return max(1, int(value))
        except ValueError:
            pass
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def source_for(bits):
    """The runtime library's C for a BLAS with `bits`-bit integers."""
    return fixed_source.defines(defines_for(bits)) + fixed_source.text("runtime.c")


def defines_for(bits):
    """The values csrc/runtime.c and csrc/packed.c take from Python."""
    return {"KILN_BLAS_INT": "int64_t" if bits == 64 else "int32_t",
            "PARALLEL_MIN": PARALLEL_MIN_MADDS, "BLOCK_MIN": BLOCK_MIN_MADDS,
            "SPIN_US": SPIN_MICROSECONDS, "CALLER_SPIN_US": CALLER_SPIN_MICROSECONDS,
            "LATE_US": LATE_MICROSECONDS, "SERIAL_MIN_US": SERIAL_MIN_MICROSECONDS,
            "SERIAL_MAX_US": SERIAL_MAX_MICROSECONDS, "BLOCKS_PER_THREAD": BLOCKS_PER_THREAD,
            **packed.DEFINES}


def runtime():
    """The process's Runtime (built and started on first use), or None without a compiler."""
    global _runtime
    with _lock:
        if _runtime is None:
            _runtime = _start() or False
        return _runtime or None


def _start():
    if not build.available():
        return None
    blas = find_blas()
    lib = build.load(source_for(blas.bits if blas else 64), extra_flags=("-pthread",))
    lib.kiln_rt_init.argtypes = [ctypes.c_void_p] * 3 + [ctypes.c_int]
    if blas is None:
        lib.kiln_rt_init(None, None, None, thread_count() - 1)
    else:
        lib.kiln_rt_init(blas.sgemm, blas.dgemm, blas.threads_local, thread_count() - 1)
    address = lambda name: ctypes.cast(getattr(lib, name), ctypes.c_void_p).value  # noqa: E731
    lib.kiln_rt_pack_init.argtypes = [ctypes.c_void_p] * 3
    lib.kiln_rt_pack_cache_new.restype = ctypes.c_void_p
    lib.kiln_rt_pack_cache_free.argtypes = [ctypes.c_void_p]
    lib.kiln_rt_packs_made.restype = ctypes.c_int64
    cached = 0
    if blas is not None and blas.pack:
        lib.kiln_rt_pack_init(*blas.pack)
        cached = address("kiln_rt_sgemm_cached")
    # the write count serves packed weights and oneDNN's reordered ones (heavy.py)
    lib.kiln_rt_note_write.argtypes = []
    lib.kiln_rt_note_write.restype = None
    writes.share_counter(ctypes.c_uint64.in_dll(lib, "kiln_rt_writes"), lib.kiln_rt_note_write)
    return Runtime(address("kiln_rt_sgemm") if blas else 0,
                   address("kiln_rt_dgemm") if blas else 0,
                   address("kiln_rt_parallel"), blas.name if blas else "none",
                   cached, lib.kiln_rt_pack_cache_new, lib.kiln_rt_pack_cache_free,
                   lib.kiln_rt_packs_made)
