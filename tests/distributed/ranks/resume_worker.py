"""Checkpoint and resume (launched by tests/distributed/test_distributed_mpi.py).

    mpiexec -n 2 python resume_worker.py DIR full STEPS     train STEPS, save DIR/full.params
    mpiexec -n 2 python resume_worker.py DIR first K        train K, checkpoint into DIR
    mpiexec -n 2 python resume_worker.py DIR second K       load the checkpoint, train the
                                                            next K, save DIR/resumed.params
The training loop knows which step it is at; the checkpoint holds parameters and optimizer
state, saved by rank 0 only.
"""
import os
import sys

import kiln
from kiln import gluon, distributed as dist

from common import mlp, batches, step_fn, OPTIMIZERS

GLOBAL_BATCH = 8


def train(directory, what, steps):
    # a restarted job starts from other weights: everything must come from the checkpoint
    net = mlp(seed=0 if what != "second" else 99)
    trainer = gluon.Trainer(net.collect_params(), "adam", OPTIMIZERS["adam"],
                            kvstore="dist_sync")
    first = 0
    if what == "second":
        net.load_parameters(os.path.join(directory, "ckpt.params"))
        trainer.load_states(os.path.join(directory, "ckpt.states"))
        first = steps
    step = kiln.hybridize(step_fn(net, trainer), backend="c", strict=True)
    local = GLOBAL_BATCH // dist.size()
    for x, y in batches(local, dist.size(), dist.rank(), first + steps)[first:]:
        step(x, y)
    if dist.rank() == 0:
        if what == "first":
            net.save_parameters(os.path.join(directory, "ckpt.params"))
            trainer.save_states(os.path.join(directory, "ckpt.states"))
        else:
            name = "full.params" if what == "full" else "resumed.params"
            net.save_parameters(os.path.join(directory, name))
    dist.barrier()


if __name__ == "__main__":
    train(sys.argv[1], sys.argv[2], int(sys.argv[3]))
