"""MXNet's `mx.kv` / `mx.kvstore`: a key-value store of arrays that sums what is pushed.

    kv = mx.kv.create('local')
    kv.init('w', weight); kv.push('w', [grad_dev0, grad_dev1]); kv.pull('w', out=weight)

push sums the values given for a key (one per device in MXNet) and, with an optimizer set
(set_optimizer), updates the stored value with that sum as the gradient; without one the
sum replaces it. 'local' and 'device' are the same here (kiln's devices are all CPU).
'dist_sync' and the other synchronous 'dist*' types also sum over the ranks of an MPI job
through kiln.distributed (allreduce), so every rank holds the same values; without MPI
there is one rank. Asynchronous types ('dist_async') are refused: kiln has no parameter
server.
"""
import numpy as _np

from .._core.base import KilnError
from .._core.writes import arrays_written
from .. import distributed as _dist
from ..npx.io import MAX_PARAMS_FILE_BYTES, read_capped

_LOCAL = ("local", "device", "nccl", "local_allreduce_cpu", "local_allreduce_device",
          "local_update_cpu")
_SYNC = ("dist_sync", "dist_sync_device", "dist_device_sync", "dist", "horovod")


def _buffer(x, what):
    data = getattr(x, "_data", x)
    if not isinstance(data, _np.ndarray) or getattr(x, "_node", None) is not None:
        raise KilnError(f"KVStore.{what}: expected a concrete kiln or NumPy array, got "
                        f"{type(x).__name__}")
    return data


def _pairs(key, value, what):
    """[(key, [values...])] from a key and a value, a list of values (devices), or lists."""
    if isinstance(key, (list, tuple)):
        if not isinstance(value, (list, tuple)) or len(value) != len(key):
            raise KilnError(f"KVStore.{what}: {len(key)} keys need a list of as many values")
        return [p for k, v in zip(key, value) for p in _pairs(k, v, what)]
    if not isinstance(key, (int, str)) or isinstance(key, bool):
        raise KilnError(f"KVStore.{what}: keys are ints or strings, got {key!r}")
    values = list(value) if isinstance(value, (list, tuple)) else [value]
    if not values:
        raise KilnError(f"KVStore.{what}: no value given for key {key!r}")
    return [(key, values)]


class KVStore:
    """MXNet's key-value store of arrays: `init` keys, `push` values (summed; over the MPI ranks
    too for 'dist_sync'), `pull` the stored values; with an optimizer set, a push updates the
    stored value."""
    def __init__(self, name="local"):
        self._type = name
        self._store = {}
        self._updater = None
        self._optimizer = None
        self._key_kind = None

    # ---- the store's description ------------------------------------------------------------
    @property
    def type(self):
        return self._type

    @property
    def rank(self):
        return _dist.rank() if self._type in _SYNC else 0

    @property
    def num_workers(self):
        return _dist.size() if self._type in _SYNC else 1

    def is_capable(self, capability):
        if capability.lower() not in ("optimizer", "pushpull"):
            raise KilnError(f"KVStore.is_capable: unknown capability {capability!r}; "
                            "expected 'optimizer' or 'pushpull'")
        return True

    # ---- values -----------------------------------------------------------------------------
    def _check_key(self, key, what):
        kind = type(key)
        if self._key_kind is None:
            self._key_kind = kind
        elif kind is not self._key_kind:
            raise KilnError(f"KVStore.{what}: mixed key types are not allowed (this store "
                            f"uses {self._key_kind.__name__} keys, got {key!r})")
        return key

    def _stored(self, key, what):
        if key not in self._store:
            raise KilnError(f"KVStore.{what}: key {key!r} does not exist; call init first")
        return self._store[key]

    def init(self, key, value):
        """Store the initial value of each key (rank 0's value in a distributed job)."""
        for k, values in _pairs(key, value, "init"):
            self._check_key(k, "init")
            if k in self._store:
                raise KilnError(f"KVStore.init: duplicate init of key {k!r}")
            data = _buffer(values[0], "init").copy()
            if self.num_workers > 1:
                _dist.broadcast(data, root=0)
            self._store[k] = data

    def _merged(self, key, values, what):
        stored = self._stored(key, what)
        total = _np.zeros_like(stored)
        for v in values:
            data = _buffer(v, what)
            if data.shape != stored.shape:
                raise KilnError(f"KVStore.{what}: key {key!r} holds shape {stored.shape}, "
                                f"got a value of shape {data.shape}")
            total += data
        if self.num_workers > 1:
            _dist.allreduce(total, op="sum")
        return stored, total

    def push(self, key, value, priority=0):
        """Sum the values of each key; update the stored value with it (or replace it)."""
        for k, values in _pairs(key, value, "push"):
            stored, total = self._merged(k, values, "push")
            if self._updater is not None:
                from .._core.ndarray import ndarray     # the updater writes through the wrapper
                self._updater(k, ndarray._wrap(total), ndarray._wrap(stored))
            else:
                stored[...] = total
        arrays_written()

    def pull(self, key, out=None, priority=0, ignore_sparse=True):
        """Copy each key's stored value into `out` (an array, or a list: one per device)."""
        if out is None:
            raise KilnError("KVStore.pull: out= is required (the arrays to copy into)")
        for k, outs in _pairs(key, out, "pull"):
            stored = self._stored(k, "pull")
            for o in outs:
                data = _buffer(o, "pull")
                if data.shape != stored.shape:
                    raise KilnError(f"KVStore.pull: key {k!r} holds shape {stored.shape}, "
                                    f"out has shape {data.shape}")
                _np.copyto(data, stored, casting="same_kind")
        arrays_written()

    def pushpull(self, key, value, out=None, priority=0):
        """push then pull; with out=None the result is written back into `value`."""
        self.push(key, value, priority)
        self.pull(key, value if out is None else out, priority)

    def broadcast(self, key, value, out, priority=0):
        """init(key, value) then pull(key, out)."""
        self.init(key, value)
        self.pull(key, out, priority)

    def row_sparse_pull(self, key, out=None, priority=0, row_ids=None):
        raise KilnError("KVStore.row_sparse_pull: kiln has no row-sparse arrays; use pull")

    # ---- updates ----------------------------------------------------------------------------
    def set_optimizer(self, optimizer):
        """Apply `optimizer` to each pushed sum (every rank runs the same update)."""
        from ..optimizer import create
        from ..optimizer.updater import get_updater
        self._optimizer = create(optimizer) if isinstance(optimizer, str) else optimizer
        self._updater = get_updater(self._optimizer)

    def _set_updater(self, updater):
        """updater(key, summed_value, stored_array) runs on push instead of replacing."""
        self._updater = updater

    def set_gradient_compression(self, compression_params):
        raise KilnError("KVStore.set_gradient_compression: kiln does not compress gradients")

    def save_optimizer_states(self, fname, dump_optimizer=False):
        if self._optimizer is None:
            raise KilnError("KVStore.save_optimizer_states: no optimizer set")
        with open(fname, "wb") as f:
            f.write(self._updater.get_states(dump_optimizer))

    def load_optimizer_states(self, fname):
        if self._optimizer is None:
            raise KilnError("KVStore.load_optimizer_states: no optimizer set")
        self._updater.set_states(read_capped(fname, "optimizer states file",
                                             MAX_PARAMS_FILE_BYTES))

    def barrier(self):
        if self.num_workers > 1:
            _dist.barrier()

    def __repr__(self):
        return f"KVStore(type={self._type!r}, rank={self.rank}, num_workers={self.num_workers})"


def create(name="local"):
    """A KVStore of type `name` ('local', 'device', 'dist_sync', ...)."""
    if not isinstance(name, str):
        raise KilnError(f"kvstore.create: expected a type name, got {type(name).__name__}")
    if name not in _LOCAL + _SYNC:
        raise KilnError(f"kvstore.create: kiln does not support kvstore {name!r}; it has "
                        f"{_LOCAL + _SYNC} (synchronous only, no parameter server)")
    return KVStore(name)


KVStoreBase = KVStore
