"""allreduce: a value reduced over the ranks of a distributed job, as graph ops.

A compiled training step averages its gradients between backward and the update
(kiln/distributed/buckets.py). The second input of each op is the process's MPI handle table
(kiln/distributed/lowering.py): an int64 vector the C backend reads the MPI entry points
from, so generated code names no process-specific value and stays shareable in the cache.
With one process every op here is the identity.

- `allreduce(x, handles)`: the whole reduction, in one op.
- `allreduce_start(x, handles)` and `allreduce_wait(started, handles, *after)`: the same
  reduction split in two, so that the message travels while the program computes other
  things (the rest of backward). Compiled, start posts a nonblocking MPI_Iallreduce on its
  output buffer and wait completes it; elsewhere start does the whole reduction and wait
  passes its value on. `after` only orders the schedule: the wait runs after those nodes
  (the other buckets' starts), which are otherwise unused. With `bucket` >= 0 and a handle
  table holding a shared window (kiln/distributed/shared.py), the compiled pair reduces
  through that window instead of MPI: `bucket` numbers the message's counter, `offset`
  is where its data lies in each rank's region in even calls and `zone` how much further
  it lies in odd calls.
"""
import numpy as _np

from .._core.base import op_error
from .registry import register

REDUCTIONS = ("sum", "mean")
HANDLE_SLOTS = 14     # the length of the handle table; its layout is in lowering.py


def _allreduce_rule(x, handles, op="mean", name="allreduce"):
    if op not in REDUCTIONS:
        raise op_error(name, f"op must be one of {REDUCTIONS}, got {op!r}")
    if _np.dtype(x.dtype) not in (_np.float32, _np.float64):
        raise op_error(name, f"expected a float32 or float64 array, got {x.dtype}")
    if tuple(handles.shape) != (HANDLE_SLOTS,) or _np.dtype(handles.dtype) != _np.int64:
        raise op_error(name, f"the second input must be the int64[{HANDLE_SLOTS}] "
                       "handle table from kiln.distributed, got "
                       f"{handles.dtype}{list(handles.shape)}")
    return tuple(x.shape), x.dtype


def _allreduce_grad(g, out, x, handles, op="mean"):
    # every rank's output depends on every rank's input alike: the gradient of x is the
    # same reduction of the output gradients
    return allreduce(g, handles, op=op), None


def _reduce_now(prim, x, handles, op):
    """The eager reduction: a copy of x, reduced in place over the ranks by the kernel
    kiln/distributed registers on prim (its `allreduce_buffer`) when there are several."""
    out = _np.array(x, copy=True)
    if int(handles[0]) > 1:
        kernels = prim.lowerings.get("eager")
        if kernels is None:
            raise op_error(prim.name, "no eager allreduce is registered (kiln/distributed "
                           "registers it when kiln is imported)")
        kernels.allreduce_buffer(out, op)
    return out


@register("allreduce", _allreduce_rule, _allreduce_grad)
def allreduce(x, handles, op="mean"):
    return _reduce_now(allreduce, x, handles, op)


def _start_rule(x, handles, op="mean", bucket=-1, offset=0, zone=0):
    return _allreduce_rule(x, handles, op, "allreduce_start")


def _start_grad(g, out, x, handles, op="mean", bucket=-1, offset=0, zone=0):
    return _allreduce_grad(g, out, x, handles, op)


@register("allreduce_start", _start_rule, _start_grad)
def allreduce_start(x, handles, op="mean", bucket=-1, offset=0, zone=0):
    return _reduce_now(allreduce_start, x, handles, op)


def _wait_rule(started, handles, *after, op="mean", bucket=-1, offset=0, zone=0):
    return _allreduce_rule(started, handles, op, "allreduce_wait")


def _wait_grad(g, out, started, handles, *after, op="mean", bucket=-1, offset=0, zone=0):
    return (g, None) + (None,) * len(after)


@register("allreduce_wait", _wait_rule, _wait_grad)
def allreduce_wait(started, handles, *after, op="mean", bucket=-1, offset=0, zone=0):
    return _np.array(started, copy=True)
