"""Shared memory between the ranks of a one-machine job, for the compiled step's allreduce.

When every rank runs on one machine, a compiled training step sums its gradients without
MPI, through a window of shared memory (MPI_Win_allocate_shared) with one region per rank:
- each rank computes a bucket of gradients straight into its own region (or copies them
  there) and raises its `ready` flag;
- once every rank's flag is up, the sum is read where the copies lie: the loop that reads
  the summed gradient (the optimizer's update) reads every rank's copy and adds them in
  rank order, so the sum costs neither a pass of its own nor a buffer, and every element
  has the same bits on every rank. A wait whose value something other than such a loop
  reads sums the copies into its own buffer first (kiln/backend/c/shared_reduce.py).
On one machine both cores are busy computing, so the reduction's memory traffic is real
work: a separate summing pass wrote a buffer that the update then read again.

Why no rank overwrites what a peer still reads: a region has two data zones, and a
program's call writes the zone of its parity (a call counter in the rank's first line,
which counts the calls of every program using the window; every rank makes the same calls,
so their counters agree). A peer reads this rank's zone of call c during call c only. This
rank writes that zone again in call c + 2, after its waits of call c + 1 saw every peer's
`ready` of call c + 1, which a peer raises only after it finished call c. So the flags are
step counters (only their own rank writes them); nothing needs resetting.

A region is laid out as: a line of this rank's statistics (seconds waiting for peers,
seconds summing into a buffer) and its call counter, a `ready` counter per bucket (one per
cache line), then the two data zones (the rank's copy of each bucket in even and in odd
calls), every bucket at a cache-line boundary. Programs traced later reuse a window whose
zones are large enough (every rank traces alike, so every rank reuses alike).
The C is in kiln/backend/c/shared_reduce.py.

KILN_DIST_SHM=0 keeps MPI's path (to compare, or on a system where shared windows fail).
"""
import os

import numpy as _np

from . import comm as _comm
from .faults import wait

LINE = 64             # bytes: one counter per cache line, data aligned to lines
CALLS = 7             # int64 index, in a region's first line, of the rank's call counter
MIN_BUCKETS = 64      # counters reserved in every window, so later programs can reuse it
_windows = []         # the windows must outlive every program that points into them
_unusable = []        # windows MPI did not space evenly: kept, never used


def enabled():
    """True when the job is on one machine (all ranks share memory) and not turned off."""
    if os.environ.get("KILN_DIST_SHM", "1") == "0" or _comm.size() < 2:
        return False
    return _comm.node().Get_size() == _comm.size()


def counter_index(bucket):
    """Index (in int64) into a region of the `ready` counter of `bucket`; line 0 holds the
    statistics and the call counter."""
    return (1 + bucket) * (LINE // 8)


def zone(sizes):
    """(offset of each bucket inside a zone, the zone's bytes) for buckets of `sizes` bytes."""
    at, offsets = 0, []
    for nbytes in sizes:
        offsets.append(at)
        at += -(-nbytes // LINE) * LINE
    return offsets, -(-at // 4096) * 4096


def header_bytes(buckets):
    return -(-LINE * (1 + max(buckets, MIN_BUCKETS)) // 4096) * 4096


class Window:
    """A shared window: base address of rank 0's region, stride between regions, and the
    capacity (buckets, zone bytes) a program's layout must fit in to reuse it."""

    def __init__(self, win, base, stride, buckets, zone_bytes):
        self.win, self.base, self.stride = win, base, stride
        self.buckets, self.zone_bytes = max(buckets, MIN_BUCKETS), zone_bytes
        self.header = header_bytes(buckets)

    def fits(self, buckets, zone_bytes):
        return buckets <= self.buckets and zone_bytes <= self.zone_bytes

    def offsets(self, sizes):
        """Offset of each bucket in a region's first data zone (the second is zone_bytes
        further)."""
        inside, _ = zone(sizes)
        return [self.header + o for o in inside]


def window(sizes):
    """(Window, data offsets) for buckets of `sizes` bytes: a window made
    before when one fits, else a new zeroed one; None if MPI did not space the regions
    evenly. Every rank must call it at the same point (a compiled step is traced on every
    rank alike); the waits in it are bounded, as every collective's."""
    _, zone_bytes = zone(sizes)
    found = next((w for w in _windows if w.fits(len(sizes), zone_bytes)), None)
    if found is None:
        found = _allocate(len(sizes), zone_bytes)
        if found is None:
            return None
    return found, found.offsets(sizes)


def _allocate(buckets, zone_bytes):
    from mpi4py import MPI
    node = _comm.node()
    header = header_bytes(buckets)
    region = header + 2 * zone_bytes
    wait(node.Ibarrier(), "shared window")
    win = MPI.Win.Allocate_shared(region, 1, comm=node)
    mine, _ = win.Shared_query(node.Get_rank())
    _np.frombuffer(mine, _np.uint8)[:header] = 0     # counters start at step 0, call 0
    starts = [_address(win.Shared_query(r)[0]) for r in range(node.Get_size())]
    wait(node.Ibarrier(), "shared window")     # every header zeroed before any is read
    stride = starts[1] - starts[0] if len(starts) > 1 else region
    if stride < region or any(a != starts[0] + r * stride for r, a in enumerate(starts)):
        _unusable.append(win)
        return None      # not evenly spaced: the C finds regions by one stride
    made = Window(win, starts[0], stride, buckets, zone_bytes)
    _windows.append(made)
    return made


def _statistics(w):
    mine, _ = w.win.Shared_query(_comm.node().Get_rank())
    return _np.frombuffer(mine, _np.float64, count=LINE // 8)


def statistics():
    """(seconds waiting for the other ranks, seconds summing into a buffer) of this rank's
    compiled allreduces through shared windows, since the last reset_statistics(). A sum
    read inside the update's loop is part of that loop's time, not of either."""
    total = _np.zeros(2)
    for w in _windows:
        total += _statistics(w)[:2]
    return float(total[0]), float(total[1])


def reset_statistics():
    """Zero the statistics (no compiled step may be running: only this rank writes them)."""
    for w in _windows:
        _statistics(w)[:] = 0.0


def _address(buffer):
    return _np.frombuffer(buffer, _np.uint8).__array_interface__["data"][0]
