"""gluon.Trainer over MPI: kvstore='dist_sync' (MXNet) or 'horovod', and DistributedTrainer.

Every rank keeps a full copy of the parameters. At construction the initialized parameters
are broadcast from rank 0 (deferred ones at the first step, once they have a shape);
`allreduce_grads` then averages the gradients over the ranks, so `step(batch_size)` with
each rank's own batch size updates as one process would with the global batch. Inside a
traced training step the averaging becomes allreduce ops of the compiled program.
"""
import numpy as _np

from .._core.base import KilnError
from .._core import trace
from .._core.writes import arrays_written
from . import comm as _comm, shared
from .buckets import average_buffers, plan, reduce_symbols
from .collectives import allreduce_buffer, broadcast
from .lowering import start_op, wait_op, with_window

SYNC_KVSTORES = ("dist_sync", "dist_sync_device", "dist_device_sync", "dist", "horovod")


def attach(trainer, kvstore):
    """Make `trainer` synchronous data-parallel over the ranks of this job."""
    if kvstore not in SYNC_KVSTORES:
        raise KilnError(f"Trainer: kvstore {kvstore!r} is not supported; kiln's distributed "
                        f"training is synchronous: use one of {SYNC_KVSTORES}")
    trainer._distributed = _comm.size() > 1
    trainer._broadcast_done = set()
    if trainer._distributed:
        _broadcast_new(trainer)


def _broadcast_new(trainer):
    """Broadcast from rank 0 every parameter that has a value and was not broadcast yet.

    Works inside a trace too: a parameter with a deferred shape gets its value while the
    first compiled step is traced, and its eager buffer (`Parameter._data`, which the
    program will read) is what is broadcast."""
    for p in trainer._params:
        if id(p) in trainer._broadcast_done or getattr(p, "_data", None) is None:
            continue
        broadcast(p._data, root=0)
        trainer._broadcast_done.add(id(p))


def _reduced(trainer):
    return [(i, p) for i, p in enumerate(trainer._params)
            if getattr(p, "grad_req", "write") != "null"]


def allreduce_grads(trainer):
    if len(trainer._broadcast_done) < len(trainer._params):
        _broadcast_new(trainer)
    ctx = trace.current()
    if ctx is not None:
        _allreduce_traced(trainer, ctx)
        return
    buffers = []
    for i, p in _reduced(trainer):
        grad = p.grad()
        if grad is None:
            raise KilnError(f"Trainer.allreduce_grads: parameter {trainer._names[i]!r} has "
                            "no gradient to average (was backward() called on every rank?)")
        buffers.append(grad._data)
    average_buffers(buffers, allreduce_buffer)
    arrays_written()


def _allreduce_traced(trainer, ctx):
    pairs = _reduced(trainer)
    grads = [p.grad() for _, p in pairs]
    # sum, then scale each gradient: the scaling fuses into the optimizer's loop that reads
    # the gradient anyway, instead of being one more pass over every message
    share = 1.0 / _comm.size()
    table, offsets, zone = _shared_window(grads)
    bucket = (lambda k: {}) if table is None else (
        lambda k: {"table": table, "bucket": k, "offset": offsets[k], "zone": zone})
    summed = reduce_symbols(grads, lambda flat, k: start_op(flat, "sum", **bucket(k)),
                            lambda started, after, k: wait_op(started, after, "sum",
                                                              **bucket(k)))
    averaged = [g * share for g in summed]
    trainer._reduced_grads = (ctx, {i: g for (i, _), g in zip(pairs, averaged)})


def _shared_window(grads):
    """(handle table, offset of each bucket in a region's first data zone, bytes from the
    first data zone to the second) of a shared window for this step's buckets (shared.py),
    or Nones when the ranks do not share one machine."""
    if not shared.enabled():
        return None, None, None
    sizes = [sum(grads[i].size * _np.dtype(grads[i].dtype).itemsize for i in b)
             for b in plan(grads)]
    found = shared.window(sizes)
    if found is None:
        return None, None, None
    win, offsets = found
    return with_window(win.base, win.stride), offsets, win.zone_bytes


def traced_grad(trainer, i, param):
    """The gradient update_traced should use for parameter i: averaged if
    allreduce_grads ran in this trace."""
    hit = getattr(trainer, "_reduced_grads", None)
    if hit is not None and hit[0] is trace.current() and i in hit[1]:
        return hit[1][i]
    return param.grad()
