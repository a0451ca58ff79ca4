"""DataLoader: batches from a Dataset, optionally loaded by worker processes.

With num_workers > 0, a pool of processes (forked where the OS allows, so the dataset is
shared, not copied through a pipe) builds whole batches; they come back as NumPy arrays and
become kiln arrays in the main process.  Up to `prefetch` batches are in flight, and batches
are yielded in sampler order.  The pool lives as long as the loader: `close()`, leaving a
`with` block, or garbage collection terminates the workers.
"""
import collections
import multiprocessing
import multiprocessing.pool
import signal
import weakref

from ..._core.base import KilnError
from ..._core.context import cpu_pinned, placed
from ..._core.ndarray import ndarray
from .batchify import default_batchify_fn, default_mp_batchify_fn, to_wire, from_wire  # noqa: F401
from .sampler import BatchSampler, RandomSampler, SequentialSampler

# per worker process: set by the pool initializer (each process has its own copy)
_worker_dataset = None
_worker_batchify = None


def _worker_init(dataset, batchify_fn, base_seed):
    global _worker_dataset, _worker_batchify
    # Ctrl-C goes to the main process, which shuts the pool down; workers must not die noisily
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _worker_dataset, _worker_batchify = dataset, batchify_fn
    _reseed(base_seed)


def _reseed(base_seed):
    """Forked workers start with the parent's random state; give each its own stream so
    random augmentations differ between workers."""
    import os
    import random
    from ...ops.creation import seed
    worker_seed = [base_seed, os.getpid()]
    seed(worker_seed)
    random.seed(hash(tuple(worker_seed)))


def _worker_load(indices):
    return to_wire(_worker_batchify([_worker_dataset[i] for i in indices]))


def _thread_load(dataset, batchify_fn, indices):
    return batchify_fn([dataset[i] for i in indices])


def _shutdown(pool):
    pool.terminate()
    pool.join()


def _mp_context():
    # fork shares the dataset with the workers for free; elsewhere fall back to spawn, which
    # needs a picklable dataset (kiln arrays in an ArrayDataset are stored as NumPy, so fine)
    methods = multiprocessing.get_all_start_methods()
    return multiprocessing.get_context("fork" if "fork" in methods else "spawn")


def _placed_batch(batch, ctx):
    """The arrays of a batch just made (nested lists and tuples too) reporting context ctx."""
    if isinstance(batch, (list, tuple)):
        return type(batch)(_placed_batch(b, ctx) for b in batch)
    return placed(batch, ctx) if isinstance(batch, ndarray) else batch


class DataLoader:
    """DataLoader(dataset, batch_size, shuffle, sampler, last_batch, batch_sampler,
    batchify_fn, num_workers, pin_memory, pin_device_id, prefetch, thread_pool, timeout,
    auto_reload). `auto_reload` (MXNet 1.x: start the next epoch's loading as one ends) is
    accepted; the batches are the same either way, and kiln's workers stay up between epochs."""

    def __init__(self, dataset, batch_size=None, shuffle=False, sampler=None, last_batch=None,
                 batch_sampler=None, batchify_fn=None, num_workers=0, pin_memory=False,
                 pin_device_id=0, prefetch=None, thread_pool=False, timeout=120,
                 try_nopython=None, auto_reload=True):
        self._dataset = dataset
        if batch_sampler is None:
            if batch_size is None:
                raise KilnError("DataLoader: batch_size is required when no batch_sampler "
                                "is given")
            if sampler is None:
                sampler = RandomSampler(len(dataset)) if shuffle else SequentialSampler(
                    len(dataset))
            elif shuffle:
                raise KilnError("DataLoader: shuffle must be False when a sampler is given")
            batch_sampler = BatchSampler(sampler, batch_size,
                                         last_batch if last_batch else "keep")
        elif batch_size is not None or shuffle or sampler is not None or last_batch is not None:
            raise KilnError("DataLoader: batch_size, shuffle, sampler and last_batch must "
                            "not be given together with batch_sampler")
        if int(num_workers) < 0:
            raise KilnError(f"DataLoader: num_workers must be >= 0, got {num_workers}")
        self._batch_sampler = batch_sampler
        self._batchify_fn = batchify_fn or default_batchify_fn
        self._num_workers = int(num_workers)
        self._thread_pool = bool(thread_pool)
        self._prefetch = max(1, int(prefetch) if prefetch is not None else 2 * self._num_workers)
        self._timeout = timeout
        # pin_memory: batches on cpu_pinned(pin_device_id), as in MXNet (the same host memory)
        self._pinned = cpu_pinned(pin_device_id) if pin_memory else None
        self._pool = None
        self._finalizer = None

    def __len__(self):
        return len(self._batch_sampler)

    def __iter__(self):
        if self._num_workers == 0:
            batches = (self._batchify_fn([self._dataset[i] for i in indices])
                       for indices in self._batch_sampler)
        else:
            batches = self._iter_pool()
        if self._pinned is None:
            yield from batches
            return
        for batch in batches:
            yield _placed_batch(batch, self._pinned)

    # ---- workers --------------------------------------------------------------------------------
    def _get_pool(self):
        if self._pool is None:
            if self._thread_pool:
                self._pool = multiprocessing.pool.ThreadPool(self._num_workers)
            else:
                from ...ops.creation import _RandomState
                base_seed = int(_RandomState.generator.integers(1 << 62))
                self._pool = _mp_context().Pool(self._num_workers, initializer=_worker_init,
                                                initargs=(self._dataset, self._batchify_fn,
                                                          base_seed))
            self._finalizer = weakref.finalize(self, _shutdown, self._pool)
        return self._pool

    def _submit(self, pool, indices):
        if self._thread_pool:
            return pool.apply_async(_thread_load, (self._dataset, self._batchify_fn, indices))
        return pool.apply_async(_worker_load, (indices,))

    def _iter_pool(self):
        pool = self._get_pool()
        batches = iter(self._batch_sampler)
        pending = collections.deque()

        def submit_next():
            indices = next(batches, None)
            if indices is not None:
                pending.append(self._submit(pool, indices))

        try:
            for _ in range(self._prefetch):
                submit_next()
            while pending:
                result = pending.popleft()
                submit_next()
                try:
                    batch = result.get(self._timeout)
                except multiprocessing.TimeoutError:
                    raise KilnError(f"DataLoader: a worker took longer than timeout="
                                    f"{self._timeout}s to load one batch") from None
                yield batch if self._thread_pool else from_wire(batch)
        finally:
            # An iteration left early (`next(iter(loader))`) leaves batches in flight. Let
            # them land first: terminating the pool while a worker is still writing a large
            # result into the pipe deadlocks multiprocessing (the worker holds the lock
            # that terminate() needs).
            for result in pending:
                result.wait(self._timeout)

    def close(self):
        """Terminate the worker pool (it is recreated if the loader is iterated again)."""
        if self._finalizer is not None:
            self._finalizer()
        self._pool = self._finalizer = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        # the weakref finalizer also runs at interpreter exit; this makes `del loader` prompt
        finalizer = getattr(self, "_finalizer", None)
        if finalizer is not None:
            finalizer()
