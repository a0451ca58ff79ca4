"""gluon.Trainer: applies an Optimizer to a set of Parameters after backward().

The update writes into each parameter's NumPy buffer (`param.data()._data`), so arrays held by
the model, by user code, or by a compiled plan keep their identity and see the new values.
Gradients come from `param.grad()`; they are scaled by `1 / batch_size` (times the optimizer's
own `rescale_grad`) as in MXNet. With kvstore='dist_sync' or 'horovod' under MPI,
`allreduce_grads` averages them over the ranks (kiln/distributed/trainer.py); otherwise
there is one device and nothing to reduce.
"""
import numpy as _np

from .._core.base import KilnError
from .._core import trace
from .._core import aligned
from .._core.gradient_claims import GradientClaim
from .. import distributed as _distributed, optimizer as _opt
from ..npx.io import write_npz_atomic, read_npz
from .._core.writes import arrays_written

_FORMAT = "kiln-trainer-states-v1"


def _param_list(params):
    """(names, params) from a dict-like of name -> Parameter or a list of Parameters."""
    if hasattr(params, "items") and callable(params.items):
        # MXNet sorts by name, so the index of a parameter does not depend on insertion order
        items = sorted(params.items(), key=lambda kv: kv[0])
        names = [str(k) for k, _ in items]
        plist = [v for _, v in items]
    elif isinstance(params, (list, tuple)):
        plist = list(params)
        names = [str(getattr(p, "name", i)) for i, p in enumerate(plist)]
    else:
        raise KilnError(f"Trainer: params must be a dict of name -> Parameter (from "
                        f"collect_params()) or a list of Parameters, got {type(params).__name__}")
    seen = set()
    for name, p in zip(names, plist):
        if not (hasattr(p, "data") and hasattr(p, "grad")):
            raise KilnError(f"Trainer: {name!r} is a {type(p).__name__}, not a Parameter")
        if id(p) in seen:
            raise KilnError(f"Trainer: parameter {name!r} appears more than once")
        seen.add(id(p))
    return names, plist


def _buffer(array, what):
    data = getattr(array, "_data", None)
    if not isinstance(data, _np.ndarray) or getattr(array, "_node", None) is not None:
        raise KilnError(f"Trainer: {what} is not a concrete array (is a hybridized trace "
                        f"still running?)")
    return data


def _array_of(param):
    """A parameter's array, whatever its storage (data() refuses a sparse parameter's)."""
    return param._array() if hasattr(param, "_array") else param.data()


class Trainer:
    """Trainer(params, optimizer, optimizer_params=None, kvstore='device')."""

    def __init__(self, params, optimizer, optimizer_params=None, kvstore="device",
                 compression_params=None, update_on_kvstore=None):
        self._names, self._params = _param_list(params)
        for p in self._params:
            if hasattr(p, "_set_trainer"):    # a row_sparse parameter's rows come through it
                p._set_trainer(self)
        optimizer_params = dict(optimizer_params or {})
        self._optimizer = _opt.create(optimizer, **optimizer_params)
        self._optimizer.param_dict = {i: p for i, p in enumerate(self._params)}
        self._optimizer.idx2name = dict(enumerate(self._names))
        self._scale = self._optimizer.rescale_grad
        self._states = {}  # index -> optimizer state, made on the first update of a parameter
        self._kvstore = kvstore
        self._update_on_kvstore = False
        self._distributed = False
        kv_type = getattr(kvstore, "type", kvstore)   # a name or a kiln.kvstore.KVStore
        if isinstance(kv_type, str) and kv_type.startswith(("dist", "horovod")):
            from ..distributed import trainer as _dist
            _dist.attach(self, kv_type)

    # ---- public API ---------------------------------------------------------------------------
    @property
    def optimizer(self):
        return self._optimizer

    @property
    def learning_rate(self):
        return self._optimizer.learning_rate

    def set_learning_rate(self, lr):
        self._optimizer.set_learning_rate(lr)

    def step(self, batch_size, ignore_stale_grad=False):
        """Make one update; gradients are divided by `batch_size` (the loss was summed)."""
        self.allreduce_grads()
        self.update(batch_size, ignore_stale_grad)

    def allreduce_grads(self):
        """Average gradients over the ranks of a distributed job; one process: nothing."""
        if getattr(self, "_distributed", False):
            from ..distributed import trainer as _dist
            _dist.allreduce_grads(self)

    def update(self, batch_size, ignore_stale_grad=False):
        """Update the parameters with their current gradients (no all-reduce)."""
        if not batch_size or batch_size < 0:
            raise KilnError(f"Trainer.step: batch_size must be positive, got {batch_size!r}")
        if trace.current() is not None:
            from .trainer_traced import update_traced
            update_traced(self, batch_size)
            return
        self._optimizer.rescale_grad = self._scale / batch_size
        # another thread's backward() or step on these parameters meanwhile is an error,
        # not a race (kiln._core.gradient_claims)
        claim = GradientClaim("Trainer.step")
        try:
            for i, (name, param) in enumerate(zip(self._names, self._params)):
                if getattr(param, "grad_req", "write") == "null":
                    continue
                grad = param.grad()
                if grad is None:
                    if ignore_stale_grad:
                        continue
                    raise KilnError(
                        f"Trainer.step: parameter {name!r} has no gradient: it was not "
                        f"initialized with a grad_req, or backward() was never called. Pass "
                        f"ignore_stale_grad=True to skip such parameters.")
                data = _array_of(param)
                claim.take((data,))
                if data.stype != "default" or grad.stype != "default":
                    # MXNet 1.x's sparse storage: the optimizer's update of sparse arrays
                    # (lazy on the stored rows of a row_sparse gradient)
                    if i not in self._states:
                        self._states[i] = self._optimizer.create_state(i, data._data)
                    self._optimizer.update(i, data, grad, self._states[i])
                    continue
                weight = _buffer(data, f"parameter {name!r}")
                g = _buffer(grad, f"the gradient of {name!r}")
                if g.shape != weight.shape:
                    raise KilnError(f"Trainer.step: gradient of {name!r} has shape {g.shape}, "
                                    f"expected {weight.shape}")
                state = self._states.get(i)
                if i not in self._states:
                    state = self._states[i] = self._optimizer.create_state(i, weight)
                self._optimizer.update(i, weight, g, state)
                if len(param.list_ctx()) > 1:
                    param.zero_grad()  # shards' gradients add up in one copy (see Parameter)
        finally:
            claim.release()

    # ---- optimizer states as .npz (never pickle) ----------------------------------------------
    def save_states(self, fname):
        entries = {"__format__": _np.array(_FORMAT),
                   "__num_update__": _np.array(self._optimizer.num_update, dtype=_np.int64)}
        counts = self._optimizer._index_update_count
        for i, state in self._states.items():
            arrays = self._optimizer.state_arrays(state)
            entries[f"{i}/name"] = _np.array(self._names[i])
            entries[f"{i}/count"] = _np.array(counts.get(i, 0), dtype=_np.int64)
            entries[f"{i}/nstate"] = _np.array(len(arrays), dtype=_np.int64)
            for k, a in enumerate(arrays):
                entries[f"{i}/state{k}"] = a
        write_npz_atomic(fname, entries)

    def load_states(self, fname):
        entries = read_npz(fname, "Trainer.load_states")
        if str(entries.get("__format__", "")) != _FORMAT:
            raise KilnError(f"Trainer.load_states: {fname} is not a kiln trainer-state file")
        states, counts = {}, {}
        for key in entries:
            if not key.endswith("/name"):
                continue
            i = int(key.split("/")[0])
            name = str(entries[key])
            if i >= len(self._names) or self._names[i] != name:
                raise KilnError(f"Trainer.load_states: state {i} belongs to parameter {name!r},"
                                f" which this trainer does not have at that position")
            n = int(entries[f"{i}/nstate"])
            arrays = [aligned.copy_of(entries[f"{i}/state{k}"]) for k in range(n)]
            weight = _buffer(_array_of(self._params[i]), f"parameter {name!r}")
            fresh = self._optimizer.create_state(i, weight)
            expected = self._optimizer.state_arrays(fresh)
            if [a.shape for a in expected] != [a.shape for a in arrays]:
                raise KilnError(f"Trainer.load_states: state of {name!r} does not fit the "
                                f"optimizer {type(self._optimizer).__name__}")
            states[i] = (None if fresh is None else arrays[0] if len(arrays) == 1 and
                         not isinstance(fresh, (list, tuple)) else type(fresh)(arrays))
            counts[i] = int(entries[f"{i}/count"])
        # copy into the existing state arrays where there are some: a compiled training
        # step holds on to them (see trainer_traced.py)
        for i, new in states.items():
            old = self._states.get(i)
            if old is not None and new is not None:
                for dst, src in zip(self._optimizer.state_arrays(old),
                                    self._optimizer.state_arrays(new)):
                    _np.copyto(dst, src)
                states[i] = old
        arrays_written()
        self._states = states
        self._optimizer._index_update_count = counts
        self._optimizer.num_update = int(entries["__num_update__"])


def DistributedTrainer(params, optimizer, optimizer_params=None, compression=None,
                       gradient_predivide_factor=1.0, prefix=None, num_groups=0):
    """Horovod's hvd.DistributedTrainer: a gluon.Trainer with kvstore='horovod'."""
    if compression not in (None, "none") and type(compression).__name__ != "NoneCompressor":
        raise KilnError("DistributedTrainer: gradient compression is not supported")
    if gradient_predivide_factor != 1.0:
        raise KilnError("DistributedTrainer: gradient_predivide_factor must be 1.0 (kiln "
                        "averages in full precision)")
    return Trainer(params, optimizer, optimizer_params, kvstore="horovod")


_distributed.DistributedTrainer = DistributedTrainer   # kiln.distributed's Horovod name
