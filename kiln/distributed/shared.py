"""Shared memory between the ranks of a one-machine job, for the compiled step's allreduce.

When every rank runs on one machine, a compiled training step averages its gradients
without MPI: each rank computes a bucket of gradients straight into its own region of a
shared window (MPI_Win_allocate_shared), or copies them there, and raises a flag; every
rank then sums all ranks' buckets, in rank order (so every rank gets the same bits), and
raises a second flag saying it has read them. MPI's own path moves each message through
its shared-memory queues (a copy in, a copy out, then the sum), and moves it only inside
MPI calls, which a rank with one thread makes between the ops of its step; here nothing
is queued and nothing waits for MPI to make progress.

A region is laid out as: two flags per bucket (`ready`, `done`: the number of the step
whose data is ready, or whose peers' data this rank has read), each on its own cache line,
then the buckets' data, each at a cache-line boundary. The C is in
kiln/backend/c/shared_reduce.py.

KILN_DIST_SHM=0 keeps MPI's path (to compare, or on a system where shared windows fail).
"""
import os

import numpy as _np

from . import comm as _comm
from .faults import wait

LINE = 64          # bytes: one flag per cache line, data aligned to lines
_windows = []      # the windows must outlive every program that points into them


def enabled():
    """True when the job is on one machine (all ranks share memory) and not turned off."""
    if os.environ.get("KILN_DIST_SHM", "1") == "0" or _comm.size() < 2:
        return False
    return _comm.node().Get_size() == _comm.size()


def layout(sizes):
    """(offset in bytes of each bucket's data, region bytes) for buckets of `sizes` bytes."""
    at = 2 * LINE * len(sizes)
    offsets = []
    for nbytes in sizes:
        offsets.append(at)
        at += -(-nbytes // LINE) * LINE
    return offsets, -(-at // 4096) * 4096


def window(region_bytes):
    """(address of rank 0's region, bytes from one rank's region to the next) of a new
    zeroed shared window, or None if MPI did not space the regions evenly. Every rank
    must call it at the same point (a compiled step is traced on every rank alike); the
    wait before it is bounded, as every collective's."""
    from mpi4py import MPI
    node = _comm.node()
    wait(node.Ibarrier(), "shared window")
    win = MPI.Win.Allocate_shared(region_bytes, 1, comm=node)
    _windows.append(win)
    mine, _ = win.Shared_query(node.Get_rank())
    _np.frombuffer(mine, _np.uint8)[:] = 0      # flags start at step 0 on every rank
    starts = [_address(win.Shared_query(r)[0]) for r in range(node.Get_size())]
    wait(node.Ibarrier(), "shared window")     # every region zeroed before any flag is read
    stride = starts[1] - starts[0] if len(starts) > 1 else region_bytes
    if stride < region_bytes or any(a != starts[0] + r * stride for r, a in enumerate(starts)):
        return None      # not evenly spaced: the C finds regions by one stride
    return starts[0], stride


def _address(buffer):
    return _np.frombuffer(buffer, _np.uint8).__array_interface__["data"][0]
