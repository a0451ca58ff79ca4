"""kiln.distributed in one process (not launched under MPI): everything is the identity and
training works as without it. The multi-process tests are in tests/distributed/ranks/, launched
by test_distributed_mpi.py."""
import os
import subprocess
import sys

import numpy as onp
import pytest

import kiln
from kiln import autograd
from kiln import gluon, np, distributed as dist
from kiln.base import KilnError
from kiln.distributed import buckets
from kiln.gluon import nn
from paths import ROOT



def test_one_process_is_the_identity():
    assert (dist.size(), dist.rank(), dist.local_rank()) == (1, 0, 0)
    assert not dist.is_distributed()
    x = np.array([1.0, 2.0, 3.0])
    for op in ("mean", "sum"):
        assert dist.allreduce(x, op) is x
        onp.testing.assert_array_equal(x.asnumpy(), [1, 2, 3])
    assert dist.broadcast(x, root=0) is x
    g = dist.allgather(x)
    assert g is not x and g.asnumpy().tolist() == [1, 2, 3]
    dist.barrier()
    assert dist.sum_over_ranks(2, 3.5) == (2.0, 3.5)
    with pytest.raises(KilnError, match="op must be one of"):
        dist.allreduce(x, "max")


def _net(seed):
    kiln.np.random.seed(seed)
    net = nn.HybridSequential()
    net.add(nn.Dense(8, activation="relu", in_units=5), nn.Dense(3, in_units=8))
    net.initialize()
    return net


def _train(kvstore, compiled, trainer_cls=None):
    net = _net(0)
    make = trainer_cls or (lambda p, o, a: gluon.Trainer(p, o, a, kvstore=kvstore))
    trainer = make(net.collect_params(), "sgd", {"learning_rate": 0.1, "momentum": 0.9})
    from kiln.fit import make_step
    step = make_step(net, gluon.loss.SoftmaxCrossEntropyLoss(), trainer, compiled=compiled)
    rng = onp.random.default_rng(0)
    for _ in range(3):
        step(np.array(rng.standard_normal((4, 5)).astype(onp.float32)),
             np.array(rng.integers(0, 3, 4).astype(onp.float32)))
    return {k: p.data().asnumpy() for k, p in net.collect_params().items()}


@pytest.mark.parametrize("compiled", [False, True])
def test_dist_trainer_in_one_process_trains_as_a_plain_one(compiled):
    want = _train("device", compiled)
    for got in (_train("dist_sync", compiled),
                _train(None, compiled, trainer_cls=dist.DistributedTrainer)):
        for k in want:
            onp.testing.assert_array_equal(got[k], want[k])


def test_unsupported_kvstore_and_options():
    net = _net(0)
    with pytest.raises(KilnError, match="dist_async"):
        gluon.Trainer(net.collect_params(), "sgd", kvstore="dist_async")
    with pytest.raises(KilnError, match="compression"):
        dist.DistributedTrainer(net.collect_params(), "sgd", compression="fp16")


@pytest.mark.parametrize("backend", ["c", "numpy"])
def test_allreduce_op_compiled_equals_eager(backend):
    """With one process the compiled op copies; its gradient is the same reduction."""
    def f(x):
        return (dist.allreduce_op(x * 2.0, op="mean") + 1.0) * x
    x = np.array(onp.random.default_rng(1).standard_normal((3, 4)).astype(onp.float32))
    compiled = kiln.hybridize(f, backend=backend, strict=True)
    onp.testing.assert_allclose(compiled(x).asnumpy(), f(x).asnumpy(), rtol=1e-6)
    assert "allreduce" in compiled.graph(x).ops
    grads = [_input_grad(fn, x) for fn in (f, compiled)]
    onp.testing.assert_allclose(grads[1], grads[0], rtol=1e-6)
    onp.testing.assert_allclose(grads[0], 4 * x.asnumpy() + 1, rtol=1e-6)


def _input_grad(fn, x):
    x.attach_grad()
    with autograd.record():
        y = fn(x)
    y.backward()
    return x.grad.asnumpy()


@pytest.mark.parametrize("backend", ["c", "numpy"])
def test_split_allreduce_compiled_equals_eager(backend):
    """start/wait with one process: copies in C (in place or not), gradients pass through."""
    def f(x):
        a = dist.lowering.start_op(x * 2.0, op="mean")
        b = dist.lowering.start_op(x + 1.0, op="sum")   # its input lives on: copied
        wa = dist.lowering.wait_op(a, [b], op="mean")
        wb = dist.lowering.wait_op(b, [wa], op="sum")
        return wa * x + wb * (x + 1.0)
    x = np.array(onp.random.default_rng(2).standard_normal((3, 4)).astype(onp.float32))
    compiled = kiln.hybridize(f, backend=backend, strict=True)
    onp.testing.assert_allclose(compiled(x).asnumpy(), f(x).asnumpy(), rtol=1e-6)
    ops = list(compiled.graph(x).ops)
    assert ops.count("allreduce_start") == 2 and ops.count("allreduce_wait") == 2
    grads = [_input_grad(fn, x) for fn in (f, compiled)]
    onp.testing.assert_allclose(grads[1], grads[0], rtol=1e-6)
    xv = x.asnumpy()
    onp.testing.assert_allclose(grads[0], 4 * xv + 2 * (xv + 1), rtol=1e-5)


def test_allreduce_op_rejects_a_wrong_handle_table():
    from kiln.ops.collective import allreduce
    with pytest.raises(KilnError, match="handle table"):
        allreduce(np.ones((2,)), np.zeros((3,), dtype="int64"))


class _Aval:
    def __init__(self, size, dtype="float32"):
        self.size, self.dtype = size, onp.dtype(dtype)


def test_bucket_plan_groups_small_arrays_by_dtype():
    avals = [_Aval(10), _Aval(1000), _Aval(10, "float64"), _Aval(20), _Aval(30), _Aval(5)]
    # limit 100 bytes: 1000 floats alone; float32 smalls fill a bucket at >= 100 bytes
    assert buckets.plan(avals, limit=100) == [[0, 3], [1], [2], [4], [5]]
    assert buckets.plan(avals, limit=1 << 20) == [[0, 1, 3, 4, 5], [2]]


def test_average_buffers_and_symbols_use_one_message_per_bucket():
    rng = onp.random.default_rng(0)
    arrays = [rng.standard_normal(s).astype(onp.float32) for s in [(3, 2), (40,), (5,)]]
    before = [a.copy() for a in arrays]
    messages = []

    def reduce(flat):        # stands in for an allreduce: records and doubles
        messages.append(flat.size)
        flat *= 2
    buckets.average_buffers(arrays, reduce, limit=64)
    assert messages == [6 + 5, 40]      # the two small arrays share one message
    for a, b in zip(arrays, before):
        onp.testing.assert_array_equal(a, 2 * b)
    started, waited = [], []

    def start(flat, k):
        started.append((k, flat.size))
        return flat * 2

    def wait(x, after, k):
        waited.append((k, x.size, [a.size for a in after]))
        return x + 0
    sym = buckets.reduce_symbols([np.array(b) for b in before], start, wait, limit=64)
    assert started == [(0, 6 + 5), (1, 40)]
    # the first wait comes after every start; each later one after the wait before it
    assert waited == [(0, 11, [40]), (1, 40, [11])]
    for s, b in zip(sym, before):
        assert s.shape == b.shape
        onp.testing.assert_array_equal(s.asnumpy(), 2 * b)


def test_split_sampler_shards_each_epoch():
    parts = [gluon.data.SplitSampler(11, 3, r, seed=5) for r in range(3)]
    whole = gluon.data.SplitSampler(11, 1, 0, seed=5)
    for _epoch in range(2):
        shards = [list(p) for p in parts]
        order = list(whole)
        assert [len(s) for s in shards] == [3, 3, 3] == [len(p) for p in parts]
        # the ranks' k-th batches of 1 make up the whole run's k-th batch of 3
        for k in range(3):
            assert sorted(s[k] for s in shards) == sorted(order[3 * k:3 * k + 3])
    assert list(gluon.data.SplitSampler(6, 2, 1, shuffle=False)) == [1, 3, 5]
    assert len(gluon.data.SplitSampler(5)) == 5            # one process: everything
    first = list(gluon.data.SplitSampler(20, 2, 0, seed=1))
    again = gluon.data.SplitSampler(20, 2, 0, seed=1)
    assert list(again) == first and list(again) != first    # a new order every epoch
    for bad in [dict(num_parts=0, part_index=0), dict(num_parts=2, part_index=2)]:
        with pytest.raises(KilnError, match="SplitSampler"):
            gluon.data.SplitSampler(10, **bad)


_NO_MPI4PY = """
import sys
sys.modules["mpi4py"] = None        # as if the dist extra were not installed
import kiln
from kiln import distributed as dist, gluon
from kiln.gluon import nn
print("size", dist.size())
net = nn.Dense(2, in_units=3); net.initialize()
gluon.Trainer(net.collect_params(), "sgd", kvstore="dist_sync")
print("trainer ok")
"""


def _python(code, **env):
    full = {k: v for k, v in os.environ.items()
            if k not in ("PMI_SIZE", "OMPI_COMM_WORLD_SIZE", "MV2_COMM_WORLD_SIZE")}
    full.update(env, PYTHONPATH=ROOT)
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=full, timeout=120)


def test_without_mpi4py_one_process_works_and_a_launch_says_what_is_missing():
    ok = _python(_NO_MPI4PY)
    assert ok.returncode == 0, ok.stderr
    assert "size 1" in ok.stdout and "trainer ok" in ok.stdout
    launched = _python(_NO_MPI4PY, PMI_SIZE="2", PMI_RANK="0")
    assert launched.returncode != 0
    assert "kiln[dist]" in launched.stderr and "mpi4py" in launched.stderr


def test_shared_window_layout_keeps_counters_and_buckets_on_their_own_cache_lines():
    from kiln.distributed import shared
    offsets, size = shared.zone([24616, 1605632, 10])
    assert offsets[0] == 0 and all(o % shared.LINE == 0 for o in offsets)
    assert offsets[1] >= offsets[0] + 24616 and offsets[2] >= offsets[1] + 1605632
    assert size % 4096 == 0 and size >= offsets[2] + 10
    header = shared.header_bytes(3)
    # a line of statistics and the call counter, then a counter per bucket on its own line
    indices = {shared.counter_index(b) for b in range(shared.MIN_BUCKETS)}
    assert min(indices) * 8 == shared.LINE and len(indices) == shared.MIN_BUCKETS
    assert all(i * 8 % shared.LINE == 0 and i * 8 < header for i in indices)
    assert shared.CALLS * 8 < shared.LINE
    win = shared.Window(None, 0, header + 2 * size, 3, size)
    assert win.offsets([24616, 1605632, 10]) == [header + o for o in offsets]
    assert win.header + 2 * win.zone_bytes <= header + 2 * size    # both data zones fit
    assert win.fits(2, size) and not win.fits(2, size + 4096)
    assert not win.fits(shared.MIN_BUCKETS + 1, size)
    assert not shared.enabled()                              # one process: no window
