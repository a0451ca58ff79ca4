"""2 ranks with global batch B train exactly as 1 process with batch B."""
import numpy as onp
import pytest

import kiln
from kiln import gluon, distributed as dist
from kiln.gluon import nn

from common import (OPTIMIZERS, mlp, batches, loader, step_fn, train_on_ranks, values,
                    same_on_every_rank, assert_close)

STEPS, GLOBAL_BATCH = 20, 8


def reference(opt, steps=STEPS):
    """One process, whole batches, no communication."""
    net = mlp(seed=0)
    trainer = gluon.Trainer(net.collect_params(), opt, OPTIMIZERS[opt])
    step = step_fn(net, trainer)
    for x, y in batches(GLOBAL_BATCH, 1, 0, steps):
        step(x, y)
    return values(net)


def distributed_run(opt, mode, kvstore="dist_sync"):
    # each rank starts from different weights: the Trainer must broadcast rank 0's
    net = mlp(seed=dist.rank())
    if kvstore == "horovod":
        trainer = dist.DistributedTrainer(net.collect_params(), opt, OPTIMIZERS[opt])
    else:
        trainer = gluon.Trainer(net.collect_params(), opt, OPTIMIZERS[opt], kvstore=kvstore)
    train_on_ranks(net, trainer, mode, STEPS, GLOBAL_BATCH)
    return values(net)


def test_two_ranks():
    assert dist.size() == 2


@pytest.mark.parametrize("opt", ["sgd", "adam"])
@pytest.mark.parametrize("mode", ["eager", "c", "c-mpi", "numpy"])
def test_equals_one_process_with_the_global_batch(opt, mode):
    got = distributed_run(opt, mode)
    same_on_every_rank(got)
    assert_close(got, reference(opt))


@pytest.mark.parametrize("mode", ["eager", "c"])
def test_deferred_parameters_are_broadcast_at_the_first_step(mode):
    kiln.np.random.seed(dist.rank())        # every rank would initialize differently
    net = nn.HybridSequential()
    net.add(nn.Dense(8, activation="relu"), nn.Dense(3))
    net.initialize()                         # shapes unknown until the first batch
    trainer = gluon.Trainer(net.collect_params(), "sgd", OPTIMIZERS["sgd"],
                            kvstore="dist_sync")
    train_on_ranks(net, trainer, mode, 3, GLOBAL_BATCH)
    same_on_every_rank(values(net))


def test_horovod_trainer():
    got = distributed_run("sgd", "eager", kvstore="horovod")
    same_on_every_rank(got)
    assert_close(got, reference("sgd"))


def test_fit_reduces_metrics_and_only_rank0_logs():
    def run(parts, index, batch_size, log):
        net = mlp(seed=0)
        kv = "dist_sync" if parts > 1 else "device"
        trainer = gluon.Trainer(net.collect_params(), "sgd", OPTIMIZERS["sgd"], kvstore=kv)
        return kiln.fit(net, loader(batch_size, parts, index),
                        gluon.loss.SoftmaxCrossEntropyLoss(), trainer, epochs=2,
                        val_data=loader(batch_size, parts, index), quiet=True, log=log)
    lines = []
    got = run(dist.size(), dist.rank(), GLOBAL_BATCH // dist.size(), lines.append)
    assert len(lines) == (2 if dist.rank() == 0 else 0)
    want = run(1, 0, GLOBAL_BATCH, None)
    for g, w in zip(got, want):
        onp.testing.assert_allclose(g["loss"], w["loss"], rtol=1e-5)
        assert g["val_accuracy"] == w["val_accuracy"]
