"""The slower paths kiln takes when part of its machinery is missing here, and why.

Each backend module that finds something missing records it once: which part, what runs
instead, why. kiln.explain lists what was recorded. A path that costs an order of
magnitude also warns once (KilnPerformanceWarning, at the user's line) with how to fix it,
unless the user chose it (KILN_BACKEND=numpy, KILN_DNNL=0, ...): then explain says so and
nothing warns.

Measured on a 2-vCPU AMD EPYC (the numbers decide which paths warn):
- no C compiler: the NumPy executor runs a batch-256 MLP 10x slower than generated C;
- no oneDNN: an eager batch-32 CNN forward 12-18x slower, a compiled one 2.4x;
- no BLAS: kiln's own generated matmul loops, within 10% of MKL on the same MLPs;
- no C fast-call extension: a batch-1 MLP call 27 us instead of 22 us.
So the first two warn; the last two are explain lines only.
"""
import threading
import warnings

from .._core.base import user_frame


class KilnPerformanceWarning(RuntimeWarning):
    """kiln runs something on a much slower path than this machine allows; the message
    says which part is missing, why, what runs instead and how to fix it."""


_taken = {}          # part -> (what runs instead, why)
_warned = set()      # causes warned about
_lock = threading.Lock()


def record(part, instead, why):
    """Note, for kiln.explain, that `part` is not used (`why`) and `instead` runs."""
    if part in _taken:      # the common case, called on every use of a missing part
        return
    with _lock:
        _taken.setdefault(part, (instead, why))


def warn_once(cause, message):
    """Warn at the user's line, once per cause and process: `message` says what is
    missing, why, what runs instead and how to fix it. Several parts can share a cause (no
    C compiler: no C backend and no oneDNN), which then warns once."""
    with _lock:
        if cause in _warned:
            return
        _warned.add(cause)
    where = user_frame() or ("<kiln>", 0, "")
    warnings.warn_explicit(f"kiln: {message}", KilnPerformanceWarning, where[0], where[1])


def taken():
    """[(part, what runs instead, why)], in the order they were recorded."""
    with _lock:
        return [(part, instead, why) for part, (instead, why) in _taken.items()]
