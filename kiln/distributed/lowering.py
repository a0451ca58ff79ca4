"""The MPI handle table that a compiled allreduce (kiln/ops/collective.py) calls through.

Generated C cannot include mpi.h (the wheel's headers may be absent, and MPICH and Open MPI
differ in what a handle is), so it gets MPI's entry points as function pointers taken from
the loaded libmpi, and the handles (communicator, datatypes, MPI_SUM, MPI_IN_PLACE) as
integers: an int in MPICH and a pointer in Open MPI both travel in one 64-bit register.
The table is made once per process; its values never enter the generated source, which
the disk cache shares between processes.

Layout (int64):
  0 size   1 rank   2 MPI_Iallreduce   3 MPI_Test   4 MPI_Wtime   5 failed(seconds, error)
  6 communicator   7 MPI_FLOAT   8 MPI_DOUBLE   9 MPI_SUM   10 MPI_IN_PLACE
  11 timeout in milliseconds
  12 address of rank 0's region of a shared window, 0 when there is none (shared.py)
  13 bytes from one rank's region to the next
A compiled step with a shared window gets a table of its own: a copy with 12 and 13 set.
"""
import ctypes
import ctypes.util

import numpy as _np

from .._core.base import KilnError
from ..ops.collective import HANDLE_SLOTS
from . import comm as _comm, faults

_table = []
_keep = []    # the ctypes callback must outlive every program that may call it


def _libmpi():
    """The libmpi mpi4py loaded into this process."""
    try:
        with open("/proc/self/maps") as maps:
            for line in maps:
                path = line.split()[-1]
                if "/libmpi" in path and ".so" in path:
                    return ctypes.CDLL(path)
    except OSError:
        pass
    name = ctypes.util.find_library("mpi")
    if name is None:
        raise KilnError("kiln.distributed: cannot find the MPI library mpi4py uses, for the "
                        "compiled allreduce; set KILN_BACKEND=numpy to run the step on NumPy")
    return ctypes.CDLL(name)


def _on_failure(seconds, error_code):
    if error_code:
        faults.abort(f"allreduce in a compiled step failed with MPI error code {error_code}")
    faults.abort(f"allreduce in a compiled step waited {seconds:.0f} s for the other ranks "
                 f"(KILN_DIST_TIMEOUT={faults.timeout():g}): another rank has failed, exited "
                 "or is stuck")


def handles():
    """The int64[HANDLE_SLOTS] table of this process (the same array object every time)."""
    if _table:
        return _table[0]
    table = _np.zeros(HANDLE_SLOTS, _np.int64)
    table[0] = _comm.size()
    if table[0] > 1:
        MPI, world = _comm.world()
        lib = _libmpi()
        callback = ctypes.CFUNCTYPE(None, ctypes.c_double, ctypes.c_int)(_on_failure)
        _keep.append(callback)
        table[1] = world.Get_rank()
        for k, fn in ((2, lib.MPI_Iallreduce), (3, lib.MPI_Test), (4, lib.MPI_Wtime),
                      (5, callback)):
            table[k] = ctypes.cast(fn, ctypes.c_void_p).value
        for k, h in ((6, world), (7, MPI.FLOAT), (8, MPI.DOUBLE), (9, MPI.SUM)):
            table[k] = MPI._handleof(h)
        table[10] = int(MPI.IN_PLACE)
        table[11] = int(faults.timeout() * 1000)
    table.setflags(write=False)
    _table.append(table)
    return table


def with_window(base, stride):
    """A copy of the handle table pointing at a shared window (shared.window)."""
    table = handles().copy()
    table[12], table[13] = base, stride
    table.setflags(write=False)
    return table


def _handle_array(table=None):
    from .._core.ndarray import ndarray
    return ndarray._wrap(handles() if table is None else table)


def allreduce_op(x, op="mean"):
    """Reduce a kiln array over the ranks as one graph op (eager or traced)."""
    from ..ops.collective import allreduce
    return allreduce(x, _handle_array(), op=op)


def start_op(x, op="mean", table=None, bucket=-1, offset=0, zone=0):
    """The first half of allreduce_op: post the message (see kiln/ops/collective.py).
    With a table from with_window, `bucket` numbers this message's counter, `offset` is
    where its data lies in each rank's region of the window in even calls, and `zone` how
    much further it lies in odd calls."""
    from ..ops.collective import allreduce_start
    return allreduce_start(x, _handle_array(table), op=op, bucket=bucket, offset=offset,
                           zone=zone)


def wait_op(started, after=(), op="mean", table=None, bucket=-1, offset=0, zone=0):
    """The second half: the reduced value of a start_op, scheduled after `after`; through
    a window, the sum of the ranks' copies where start_op put them."""
    from ..ops.collective import allreduce_wait
    return allreduce_wait(started, _handle_array(table), *after, op=op, bucket=bucket,
                          offset=offset, zone=zone)
