"""MXNet's gluon.contrib.data: IntervalSampler."""
from ..._core.base import KilnError
from ..data import Sampler


class IntervalSampler(Sampler):
    """0, k, 2k, ... below `length`, then (rollover) 1, 1+k, ..., up to k-1, k-1+k, ...

    len() is the number of indices it yields (MXNet 1.9.1 returns `length` even without
    rollover, when it yields fewer)."""

    def __init__(self, length, interval, rollover=True):
        if not 0 < interval < length:
            raise KilnError(f"IntervalSampler: interval must be in (0, length={length}), got "
                            f"{interval}")
        self._length, self._interval, self._rollover = length, interval, rollover

    def __iter__(self):
        for start in range(self._interval if self._rollover else 1):
            yield from range(start, self._length, self._interval)

    def __len__(self):
        if self._rollover:
            return self._length
        return len(range(0, self._length, self._interval))
