"""The compiled step's sum through the ranks' shared window (kiln/distributed/shared.py):
a large gradient summed inside the update's loop, small ones summed into a buffer, the two
data zones taken in turn, and steps traced later reusing a window."""
import numpy as onp

import kiln
from kiln import gluon, distributed as dist
from kiln.distributed import shared
from kiln.distributed.buckets import BUCKET_BYTES
from kiln.gluon import nn

from common import IN, CLASSES, OPTIMIZERS, batches, step_fn, values, same_on_every_rank, \
    assert_close

WIDE = 8000     # the first layer's weight, 192 KB: bucketed with the small gradients
WIDER = 12000   # 288 KB: a bucket of its own, summed where the update reads it


def mlp(width):
    kiln.np.random.seed(0)
    net = nn.HybridSequential()
    net.add(nn.Dense(width, activation="relu", in_units=IN), nn.Dense(CLASSES, in_units=width))
    net.initialize()
    return net


def train(parts, index, kvstore, schedule, width, optimizer="sgd"):
    """`optimizer` over `schedule`: (global batch, steps) pairs, compiled for C."""
    net = mlp(width)
    trainer = gluon.Trainer(net.collect_params(), optimizer, OPTIMIZERS[optimizer],
                            kvstore=kvstore)
    step = kiln.hybridize(step_fn(net, trainer), backend="c", strict=True)
    for global_batch, steps in schedule:
        for x, y in batches(global_batch // parts, parts, index, steps):
            step(x, y)
    return values(net), step


def sources(step):
    return [e.program.source for e in step._cached.entries.values()]


def test_a_window_reused_by_a_second_trace():
    schedule = [(8, 5), (4, 6)]        # the second batch size traces the step again
    before = len(shared._windows)
    got, step = train(dist.size(), dist.rank(), "dist_sync", schedule, WIDE)
    assert len(step._cached.entries) == 2
    assert len(shared._windows) - before <= 1        # both programs in one window
    same_on_every_rank(got)
    want, _ = train(1, 0, "device", schedule, WIDE)
    assert_close(got, want)


def test_a_large_gradient_is_summed_inside_the_update_loop():
    assert WIDER * IN * 4 >= BUCKET_BYTES > WIDE * IN * 4
    for optimizer in ("sgd", "adam"):
        schedule = [(8, 7)]            # odd and even calls: both data zones, in turn
        got, step = train(dist.size(), dist.rank(), "dist_sync", schedule, WIDER, optimizer)
        source, = sources(step)
        assert "summed where it is read" in source
        same_on_every_rank(got)
        want, _ = train(1, 0, "device", schedule, WIDER, optimizer)
        assert_close(got, want)


def test_statistics_count_waiting_and_summing_into_a_buffer():
    shared.reset_statistics()
    train(dist.size(), dist.rank(), "dist_sync", [(8, 3)], WIDE)   # one bucket, sliced
    waiting, summing = shared.statistics()
    assert summing > 0 and waiting >= 0
    shared.reset_statistics()
    assert shared.statistics() == (0.0, 0.0)
    onp.testing.assert_equal(dist.size(), 2)
