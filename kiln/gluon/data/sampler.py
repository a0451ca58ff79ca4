"""Samplers: which dataset indices, in which order, and how they group into batches.

Random order comes from kiln's own generator, so `kiln.np.random.seed(n)` makes shuffling
reproducible along with everything else.
"""

from ..._core.base import KilnError


class Sampler:
    """Base class: an iterable of indices with a length."""

    def __iter__(self):
        raise NotImplementedError

    def __len__(self):
        raise NotImplementedError


class SequentialSampler(Sampler):
    """start, start+1, ..., start+length-1."""

    def __init__(self, length, start=0):
        self._length, self._start = int(length), int(start)

    def __iter__(self):
        return iter(range(self._start, self._start + self._length))

    def __len__(self):
        return self._length


class RandomSampler(Sampler):
    """A fresh random permutation of range(length) on every pass."""

    def __init__(self, length):
        self._length = int(length)

    def __iter__(self):
        from ...ops.creation import _RandomState
        return iter(_RandomState.generator.permutation(self._length).tolist())

    def __len__(self):
        return self._length


class FilterSampler(Sampler):
    """The indices i of `dataset` for which fn(dataset[i]) is true."""

    def __init__(self, fn, dataset):
        self._indices = [i for i, sample in enumerate(dataset) if fn(sample)]

    def __iter__(self):
        return iter(self._indices)

    def __len__(self):
        return len(self._indices)


class IntervalSampler(Sampler):
    """0, interval, 2*interval, ..., then 1, 1+interval, ... (when rollover)."""

    def __init__(self, length, interval, rollover=True):
        if interval < 1 or interval > length:
            raise KilnError(f"IntervalSampler: interval must be in [1, {length}], got {interval}")
        self._length, self._interval, self._rollover = length, interval, rollover

    def __iter__(self):
        starts = range(self._interval) if self._rollover else range(1)
        for s in starts:
            yield from range(s, self._length, self._interval)

    def __len__(self):
        return self._length if self._rollover else len(range(0, self._length, self._interval))


_LAST_BATCH = ("keep", "discard", "rollover")


class BatchSampler(Sampler):
    """Group a sampler's indices into lists of `batch_size`.

    last_batch: 'keep' yields a short final batch, 'discard' drops it, 'rollover' carries
    its indices into the first batch of the next pass.
    """

    def __init__(self, sampler, batch_size, last_batch="keep"):
        if last_batch not in _LAST_BATCH:
            raise KilnError(f"last_batch must be one of {_LAST_BATCH}, got {last_batch!r}")
        if int(batch_size) < 1:
            raise KilnError(f"batch_size must be >= 1, got {batch_size}")
        self._sampler, self._batch_size, self._last_batch = sampler, int(batch_size), last_batch
        self._prev = []

    def __iter__(self):
        batch, self._prev = self._prev, []
        for i in self._sampler:
            batch.append(i)
            if len(batch) == self._batch_size:
                yield batch
                batch = []
        if batch:
            if self._last_batch == "keep":
                yield batch
            elif self._last_batch == "rollover":
                self._prev = batch

    def __len__(self):
        n = len(self._sampler)
        if self._last_batch == "keep":
            return (n + self._batch_size - 1) // self._batch_size
        if self._last_batch == "discard":
            return n // self._batch_size
        return (len(self._prev) + n) // self._batch_size


class SplitSampler(Sampler):
    """This rank's shard of every epoch: indices part_index, part_index + num_parts, ...
    of the epoch's order, for data-parallel training (MXNet's SplitSampler).

    num_parts / part_index default to the size and rank of the distributed job
    (kiln.distributed). Every shard has length // num_parts indices (the remainder is left
    out), so all ranks take the same number of steps. With shuffle, the epoch's order is a
    permutation drawn from (seed, epoch): every rank draws the same one without
    communicating, and the ranks' k-th batches together are the k-th batch one process
    would take with num_parts times the batch size. The epoch advances on every pass.
    """

    def __init__(self, length, num_parts=None, part_index=None, shuffle=True, seed=0):
        if num_parts is None or part_index is None:
            from ... import distributed
            num_parts = distributed.size() if num_parts is None else num_parts
            part_index = distributed.rank() if part_index is None else part_index
        num_parts, part_index = int(num_parts), int(part_index)
        if num_parts < 1 or not 0 <= part_index < num_parts:
            raise KilnError(f"SplitSampler: need num_parts >= 1 and 0 <= part_index < "
                            f"num_parts, got num_parts={num_parts}, part_index={part_index}")
        if int(length) < num_parts:
            raise KilnError(f"SplitSampler: {length} samples cannot be split into "
                            f"{num_parts} non-empty parts")
        self._length, self._parts, self._index = int(length), num_parts, part_index
        self._shuffle, self._seed, self.epoch = bool(shuffle), int(seed), 0

    def set_epoch(self, epoch):
        self.epoch = int(epoch)

    def __iter__(self):
        import numpy as _np
        if self._shuffle:
            order = _np.random.default_rng([self._seed, self.epoch]).permutation(self._length)
        else:
            order = _np.arange(self._length)
        self.epoch += 1
        return iter(order[self._index:len(self) * self._parts:self._parts].tolist())

    def __len__(self):
        return self._length // self._parts
