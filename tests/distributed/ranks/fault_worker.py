"""A training job in which rank 1 fails at its 5th batch (launched by
tests/distributed/test_distributed_mpi.py).

    mpiexec -n 2 python fault_worker.py kill|raise|stuck compiled|eager
"""
import os
import signal
import sys
import time

from kiln import gluon, distributed as dist
from kiln.fit import fit

from common import mlp, loader, OPTIMIZERS


class FailingLoader:
    """The rank's batches, many epochs' worth; rank 1 fails when it reaches batch 5."""

    def __init__(self, how):
        self.how = how
        self.batches = [b for _ in range(50) for b in loader(4, dist.size(), dist.rank())]

    def __len__(self):
        return len(self.batches)

    def __iter__(self):
        for k, batch in enumerate(self.batches):
            if k == 5 and dist.rank() == 1:
                print(f"rank 1: injecting fault {self.how!r}", flush=True)
                if self.how == "kill":
                    os.kill(os.getpid(), signal.SIGKILL)
                if self.how == "raise":
                    raise RuntimeError("injected failure")
                time.sleep(600)     # stuck: alive, but no longer taking part
            yield batch


def main(how, mode):
    net = mlp(seed=0)
    trainer = gluon.Trainer(net.collect_params(), "sgd", OPTIMIZERS["sgd"], kvstore="dist_sync")
    fit(net, FailingLoader(how), gluon.loss.SoftmaxCrossEntropyLoss(), trainer, epochs=1,
        compiled=mode == "compiled", quiet=True, log=None)
    print(f"rank {dist.rank()}: finished without noticing the fault", flush=True)


if __name__ == "__main__":
    main(*sys.argv[1:3])
