"""allreduce: a value reduced over the ranks of a distributed job, as a graph op.

A compiled training step averages its gradients with it between backward and the update
(kiln/distributed/buckets.py). Its second input is the process's MPI handle table
(kiln/distributed/lowering.py): an int64 vector the C backend reads the MPI entry points
from, so generated code names no process-specific value and stays shareable in the cache.
With one process the op is the identity.
"""
import numpy as _np

from ..base import op_error
from .registry import register

REDUCTIONS = ("sum", "mean")
HANDLE_SLOTS = 12     # the length of the handle table; its layout is in lowering.py


def _allreduce_rule(x, handles, op="mean"):
    if op not in REDUCTIONS:
        raise op_error("allreduce", f"op must be one of {REDUCTIONS}, got {op!r}")
    if _np.dtype(x.dtype) not in (_np.float32, _np.float64):
        raise op_error("allreduce", f"expected a float32 or float64 array, got {x.dtype}")
    if tuple(handles.shape) != (HANDLE_SLOTS,) or _np.dtype(handles.dtype) != _np.int64:
        raise op_error("allreduce", f"the second input must be the int64[{HANDLE_SLOTS}] "
                       "handle table from kiln.distributed, got "
                       f"{handles.dtype}{list(handles.shape)}")
    return tuple(x.shape), x.dtype


def _allreduce_grad(g, out, x, handles, op="mean"):
    # every rank's output depends on every rank's input alike: the gradient of x is the
    # same reduction of the output gradients
    return allreduce(g, handles, op=op), None


@register("allreduce", _allreduce_rule, _allreduce_grad)
def allreduce(x, handles, op="mean"):
    out = _np.array(x, copy=True)
    if int(handles[0]) > 1:
        from ..distributed.collectives import allreduce_buffer
        allreduce_buffer(out, op)
    return out
