"""Data-parallel training over MPI (the `dist` extra: mpi4py and an MPI library).

    mpiexec -n 2 python train.py

Each rank runs the same program on its own shard of the data; gradients are averaged
between backward and the update. Not launched under MPI (or without mpi4py), size() is 1
and every function here is the identity.

`DistributedTrainer` (Horovod's name) is a gluon.Trainer with kvstore='horovod'; gluon sits
above this package, so kiln/gluon/trainer.py defines it and sets it here when imported.
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

