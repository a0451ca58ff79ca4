"""BatchNorm keeps its statistics per rank (as MXNet and DDP do by default), so 2 ranks
equal 1 process that accumulates gradients over the same two half-batches."""
import pytest

from kiln import autograd
from kiln import gluon, distributed as dist

from common import (OPTIMIZERS, mlp, batches, train_on_ranks, values, same_on_every_rank,
                    assert_close)

STEPS, GLOBAL_BATCH = 20, 8


def reference(opt):
    net = mlp(seed=0, batchnorm=True)
    params = net.collect_params()
    for p in params.values():
        if p.grad_req != "null":
            p.grad_req = "add"
    trainer = gluon.Trainer(params, opt, OPTIMIZERS[opt])
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    half = GLOBAL_BATCH // 2
    per_rank = [batches(half, 2, r, STEPS) for r in range(2)]
    for k in range(STEPS):
        for r in range(2):
            x, y = per_rank[r][k]
            with autograd.record():
                loss = loss_fn(net(x), y)
            loss.backward()
        trainer.step(GLOBAL_BATCH)
        params.zero_grad()
    return values(net, trainable_only=True)


@pytest.mark.parametrize("opt", ["sgd", "adam"])
@pytest.mark.parametrize("mode", ["eager", "c"])
def test_batchnorm_equals_accumulated_half_batches(opt, mode):
    net = mlp(seed=dist.rank(), batchnorm=True)
    trainer = gluon.Trainer(net.collect_params(), opt, OPTIMIZERS[opt], kvstore="dist_sync")
    train_on_ranks(net, trainer, mode, STEPS, GLOBAL_BATCH)
    got = values(net, trainable_only=True)
    same_on_every_rank(got)
    assert_close(got, reference(opt))
