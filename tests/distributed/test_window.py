"""The compiled step's sum through the ranks' shared window (kiln/distributed/shared.py):
buckets of many chunks that the ranks share out, and steps traced later reusing a window."""
import numpy as onp

import kiln
from kiln import gluon, distributed as dist
from kiln.distributed import shared
from kiln.gluon import nn

from common import IN, CLASSES, OPTIMIZERS, batches, step_fn, values, same_on_every_rank, \
    assert_close

WIDE = 8000     # a bucket of ~320 KB: several chunks of the shared sum


def wide_mlp():
    kiln.np.random.seed(0)
    net = nn.HybridSequential()
    net.add(nn.Dense(WIDE, activation="relu", in_units=IN), nn.Dense(CLASSES, in_units=WIDE))
    net.initialize()
    return net


def train(parts, index, kvstore, schedule):
    """SGD with momentum over `schedule`: (global batch, steps) pairs, compiled for C."""
    net = wide_mlp()
    trainer = gluon.Trainer(net.collect_params(), "sgd", OPTIMIZERS["sgd"], kvstore=kvstore)
    step = kiln.hybridize(step_fn(net, trainer), backend="c", strict=True)
    for global_batch, steps in schedule:
        for x, y in batches(global_batch // parts, parts, index, steps):
            step(x, y)
    return values(net), step


def test_many_chunks_and_a_window_reused_by_a_second_trace():
    from kiln.backend.c.shared_reduce import CHUNK_BYTES
    assert WIDE * (IN + 1 + CLASSES) * 4 > 4 * CHUNK_BYTES
    schedule = [(8, 6), (4, 6)]        # the second batch size traces the step again
    before = len(shared._windows)
    got, step = train(dist.size(), dist.rank(), "dist_sync", schedule)
    assert len(step._cached.entries) == 2
    assert len(shared._windows) - before <= 1        # both programs in one window
    same_on_every_rank(got)
    want, _ = train(1, 0, "device", schedule)
    assert_close(got, want)


def test_statistics_count_waiting_and_summing():
    shared.reset_statistics()
    train(dist.size(), dist.rank(), "dist_sync", [(8, 3)])
    waiting, summing = shared.statistics()
    assert summing > 0 and waiting >= 0
    shared.reset_statistics()
    assert shared.statistics() == (0.0, 0.0)
    onp.testing.assert_equal(dist.size(), 2)
