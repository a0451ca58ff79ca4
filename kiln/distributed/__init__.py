"""Data-parallel training over MPI (the `dist` extra: mpi4py and an MPI library).

    mpiexec -n 2 python train.py

Each rank runs the same program on its own shard of the data; gradients are averaged
between backward and the update. Not launched under MPI (or without mpi4py), size() is 1
and every function here is the identity.
"""
from .comm import init, rank, size, local_rank, is_distributed  # noqa: F401
from .collectives import (allreduce, broadcast, allgather, barrier,  # noqa: F401
                          broadcast_parameters, sum_over_ranks)
from .lowering import allreduce_op  # noqa: F401
from . import collectives as _collectives
from ..ops.registry import REGISTRY as _REGISTRY

# the eager kernel of the allreduce ops over several ranks (kiln/ops/collective.py calls
# its `allreduce_buffer`)
for _name in ("allreduce", "allreduce_start"):
    _REGISTRY[_name].lowerings["eager"] = _collectives


def DistributedTrainer(params, optimizer, optimizer_params=None, compression=None,
                       gradient_predivide_factor=1.0, prefix=None, num_groups=0):
    """Horovod's hvd.DistributedTrainer: a gluon.Trainer with kvstore='horovod'."""
    from .._core.base import KilnError
    from ..gluon.trainer import Trainer
    if compression not in (None, "none") and type(compression).__name__ != "NoneCompressor":
        raise KilnError("DistributedTrainer: gradient compression is not supported")
    if gradient_predivide_factor != 1.0:
        raise KilnError("DistributedTrainer: gradient_predivide_factor must be 1.0 (kiln "
                        "averages in full precision)")
    return Trainer(params, optimizer, optimizer_params, kvstore="horovod")
