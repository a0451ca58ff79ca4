"""The collectives on kiln arrays, with 2 ranks."""
import numpy as onp

import kiln
from kiln import np, distributed as dist
from kiln.gluon import nn


def test_allreduce_broadcast_allgather():
    r = dist.rank()
    x = np.array(onp.arange(4, dtype=onp.float32) * (r + 1))
    dist.allreduce(x, "sum")
    onp.testing.assert_array_equal(x.asnumpy(), onp.arange(4) * 3)
    dist.allreduce(x, "mean")
    onp.testing.assert_array_equal(x.asnumpy(), onp.arange(4) * 3)
    y = np.array(onp.full(3, r, onp.float64))
    dist.broadcast(y, root=1)
    onp.testing.assert_array_equal(y.asnumpy(), [1, 1, 1])
    g = dist.allgather(np.array(onp.full((r + 1, 2), r, onp.float32)))   # uneven first axes
    onp.testing.assert_array_equal(g.asnumpy(), [[0, 0], [1, 1], [1, 1]])
    dist.barrier()
    assert dist.sum_over_ranks(r, 1) == (1.0, 2.0)
    assert dist.local_rank() == r       # both ranks on this machine


def test_broadcast_parameters_from_any_root():
    kiln.np.random.seed(dist.rank())
    net = nn.Dense(3, in_units=2)
    net.initialize()
    dist.broadcast_parameters(net.collect_params(), root_rank=1)     # Horovod's keyword
    kiln.np.random.seed(1)
    ref = nn.Dense(3, in_units=2)
    ref.initialize()
    onp.testing.assert_array_equal(net.weight.data().asnumpy(), ref.weight.data().asnumpy())
