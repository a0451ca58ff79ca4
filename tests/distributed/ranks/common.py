"""Models, data and the one-process reference runs the distributed tests compare with."""
import os

import numpy as onp

import kiln
from kiln import gluon, distributed as dist
from kiln.fit import make_step
from kiln.gluon import nn

IN, CLASSES, SAMPLES = 6, 3, 48
# Adam's step lr*m/(sqrt(v)+eps) moves by up to lr/eps per unit change of a gradient whose
# size is near eps. A sum over two ranks differs from a one-process sum by rounding (a few
# 2**-24 of the sum of the terms' sizes), so with the default eps=1e-8 a gradient whose terms
# cancel to ~1e-8 is decided by rounding, not by kiln: in test_window, bias 6467's first
# gradient is -2.50e-8 from terms summing to 1.8e-2 in size; one process and two ranks got
# -2.58e-8 and -2.44e-8 (both within rounding) and Adam turned that into steps 1.1e-4 apart.
# eps=1e-4 bounds that amplification to lr/eps = 100, below the comparison's tolerance.
OPTIMIZERS = {"sgd": {"learning_rate": 0.1, "momentum": 0.9},
              "adam": {"learning_rate": 0.01, "epsilon": 1e-4}}


def data():
    rng = onp.random.default_rng(42)
    x = rng.standard_normal((SAMPLES, IN)).astype(onp.float32)
    y = rng.integers(0, CLASSES, SAMPLES).astype(onp.float32)
    return gluon.data.ArrayDataset(x, y)


def mlp(seed, batchnorm=False):
    kiln.np.random.seed(seed)
    net = nn.HybridSequential()
    if batchnorm:   # pre-activations: no all-zero column (1/sqrt(eps)), no bias BN cancels
        net.add(nn.Dense(16, use_bias=False, in_units=IN), nn.BatchNorm(in_channels=16),
                nn.Activation("relu"))
    else:
        net.add(nn.Dense(16, activation="relu", in_units=IN))
    net.add(nn.Dense(CLASSES, in_units=16))
    net.initialize()
    return net


def loader(batch_size, parts, index, seed=7):
    sampler = gluon.data.SplitSampler(SAMPLES, parts, index, shuffle=True, seed=seed)
    return gluon.data.DataLoader(data(), batch_size=batch_size, sampler=sampler,
                                 last_batch="discard")


def batches(batch_size, parts, index, steps):
    out = []
    while len(out) < steps:
        out.extend(loader(batch_size, parts, index))
    return out[:steps]


def step_fn(net, trainer):
    return make_step(net, gluon.loss.SoftmaxCrossEntropyLoss(), trainer, compiled=False)


def train_on_ranks(net, trainer, mode, steps, global_batch):
    """Train on this rank's shard: eagerly, or as a step compiled for backend `mode`
    ('c-mpi': the C backend reducing through MPI, not the ranks' shared window)."""
    backend, _, path = mode.partition("-")
    step = step_fn(net, trainer)
    if mode != "eager":
        step = kiln.hybridize(step, backend=backend, strict=True)
    local = global_batch // dist.size()
    previous = os.environ.get("KILN_DIST_SHM")
    os.environ["KILN_DIST_SHM"] = "0" if path == "mpi" else "1"
    try:
        for x, y in batches(local, dist.size(), dist.rank(), steps):
            step(x, y)
    finally:
        os.environ.pop("KILN_DIST_SHM")
        if previous is not None:
            os.environ["KILN_DIST_SHM"] = previous
    if mode != "eager":
        graph = step.graph(x, y)
        ops = list(graph.ops)
        windowed = {n.attrs["bucket"] >= 0 for n in graph.nodes if n.op == "allreduce_wait"}
        assert windowed == {path != "mpi"}, (mode, windowed)
        if backend == "c":     # the gradients are computed where the other ranks read them
            source = step._cached.entries[next(iter(step._cached.entries))].program.source
            assert ("computed straight into the shared window" in source) == (path != "mpi")
        assert ops.count("allreduce_wait") >= 1, ops
        # every message is posted before the first is waited on (overlap with backward)
        last_start = max(k for k, op in enumerate(ops) if op == "allreduce_start")
        assert last_start < ops.index("allreduce_wait"), ops


def values(net, trainable_only=False):
    return {k: p.data().asnumpy() for k, p in net.collect_params().items()
            if not trainable_only or p.grad_req != "null"}


def same_on_every_rank(arrays):
    """Assert every rank holds the same values (bit for bit)."""
    for k, a in arrays.items():
        gathered = dist.allgather(kiln.np.array(a[None])).asnumpy()
        for r in range(1, dist.size()):
            onp.testing.assert_array_equal(gathered[r], gathered[0], err_msg=k)


def assert_close(got, want, rtol=2e-4, atol=2e-5):
    assert got.keys() == want.keys()
    for k in want:
        onp.testing.assert_allclose(got[k], want[k], rtol=rtol, atol=atol, err_msg=k)
