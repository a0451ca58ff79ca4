"""Collectives on kiln arrays: allreduce, broadcast, allgather, barrier.

Each works in place on the array's NumPy buffer where MPI does (allreduce, broadcast), and
with one process each is the identity. Every wait is bounded (faults.wait).
"""
import numpy as _np

from .._core.base import KilnError
from .._core.writes import arrays_written
from . import comm as _comm
from .faults import wait

_OPS = ("sum", "mean")


def _buffer(x, what):
    """The writable C-contiguous NumPy buffer behind a kiln array (or a NumPy array)."""
    data = getattr(x, "_data", x)
    if getattr(x, "_node", None) is not None:
        raise KilnError(f"kiln.distributed.{what}: got a symbolic array; inside a hybridized "
                        "function use kiln.distributed.allreduce_op")
    if not isinstance(data, _np.ndarray):
        raise KilnError(f"kiln.distributed.{what}: expected a kiln or NumPy array, got "
                        f"{type(x).__name__}")
    if not (data.flags.c_contiguous and data.flags.writeable):
        raise KilnError(f"kiln.distributed.{what}: the array must be C-contiguous and "
                        "writable to be reduced in place")
    return data


def allreduce(x, op="mean"):
    """Reduce `x` over all ranks in place ('sum' or 'mean'); returns x."""
    if op not in _OPS:
        raise KilnError(f"kiln.distributed.allreduce: op must be one of {_OPS}, got {op!r}")
    data = _buffer(x, "allreduce")
    if _comm.size() > 1:
        allreduce_buffer(data, op)
        arrays_written()
    return x


def allreduce_buffer(data, op="mean"):
    MPI, world = _comm.world()
    wait(world.Iallreduce(MPI.IN_PLACE, data, op=MPI.SUM), "allreduce")
    if op == "mean":
        data *= data.dtype.type(1.0 / _comm.size())


def broadcast(x, root=0):
    """Overwrite `x` on every rank with rank `root`'s value, in place; returns x."""
    data = _buffer(x, "broadcast")
    if _comm.size() > 1:
        _check_root(root)
        _MPI, world = _comm.world()
        wait(world.Ibcast(data, root=root), "broadcast")
        arrays_written()
    return x


def allgather(x):
    """A new array: every rank's `x` concatenated along the first axis, in rank order."""
    from .._core.ndarray import ndarray
    data = _np.ascontiguousarray(getattr(x, "_data", x))
    if _comm.size() == 1:
        return ndarray._wrap(data.copy())
    _MPI, world = _comm.world()
    shapes = world.allgather(data.shape)
    if any(s[1:] != data.shape[1:] for s in shapes) or any(len(s) == 0 for s in shapes):
        raise KilnError(f"kiln.distributed.allgather: the ranks' arrays must agree in every "
                        f"axis but the first, got shapes {shapes}")
    counts = [int(_np.prod(s)) for s in shapes]
    out = _np.empty((sum(s[0] for s in shapes),) + data.shape[1:], data.dtype)
    wait(world.Iallgatherv(data, [out, counts]), "allgather")
    return ndarray._wrap(out)


def barrier():
    """Wait until every rank gets here."""
    if _comm.size() > 1:
        _MPI, world = _comm.world()
        wait(world.Ibarrier(), "barrier")


def broadcast_parameters(params, root=0, root_rank=None):
    """Give every rank rank `root`'s values of `params` (a ParameterDict, a dict of name ->
    Parameter, or a list of Parameters); `root_rank` is Horovod's name for `root`.
    Parameters whose shape is still deferred are skipped; the Trainer broadcasts those
    once they are initialized."""
    if _comm.size() == 1:
        return
    root = root if root_rank is None else root_rank
    items = params.items() if hasattr(params, "items") else enumerate(params)
    for _name, p in sorted(items, key=lambda kv: str(kv[0])):
        if getattr(p, "_data", None) is None:
            continue
        broadcast(p.data(), root)


def _check_root(root):
    if not 0 <= int(root) < _comm.size():
        raise KilnError(f"kiln.distributed: root must be a rank in [0, {_comm.size()}), "
                        f"got {root}")


def sum_over_ranks(*values):
    """The sums over all ranks of a few Python numbers (a metric's totals), as floats."""
    data = _np.array(values, dtype=_np.float64)
    if _comm.size() > 1:
        allreduce_buffer(data, "sum")
    return tuple(float(v) for v in data)
