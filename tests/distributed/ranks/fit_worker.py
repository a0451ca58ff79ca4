"""kiln.fit on every rank (launched by tests/distributed/test_distributed_mpi.py): the
compiled step is kiln's own code, so no rank prints a KilnTraceWarning about it.

    mpiexec -n 2 python fit_worker.py
"""
import warnings

from kiln import gluon, distributed as dist
from kiln.fit import fit

from common import mlp, loader, OPTIMIZERS


def main():
    warnings.simplefilter("always")      # nothing hidden by the default once-per-line rule
    net = mlp(seed=0)
    trainer = gluon.Trainer(net.collect_params(), "sgd", OPTIMIZERS["sgd"], kvstore="dist_sync")
    fit(net, loader(4, dist.size(), dist.rank()), gluon.loss.SoftmaxCrossEntropyLoss(),
        trainer, epochs=2, quiet=True, log=None)
    print(f"rank {dist.rank()}: trained", flush=True)


if __name__ == "__main__":
    main()
