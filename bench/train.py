"""Benchmark: one training step of an MLP 784-256-128-10, batch 128, softmax cross-entropy
and SGD, in ms/step: kiln eager, kiln compiled step per backend, and installed peers.

python -m kiln bench train [--steps N] [--no-compile]
"""
import argparse
import os
import sys
import time

import numpy as onp

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402

import kiln  # noqa: E402
from kiln import np, gluon, init  # noqa: E402
from kiln.fit import make_step  # noqa: E402
from kiln.gluon import nn  # noqa: E402

SIZES = (784, 256, 128, 10)
BATCH = 128
LR = 0.05


def kiln_step(backend):
    np.random.seed(0)
    net = nn.HybridSequential()
    net.add(nn.Dense(SIZES[1], activation="relu"), nn.Dense(SIZES[2], activation="relu"),
            nn.Dense(SIZES[3]))
    net.initialize(init.Xavier())
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": LR})

    return make_step(net, loss_fn, trainer, compiled=backend is not None, backend=backend)


def torch_steps(xv, yv, with_compile):
    try:
        import torch
    except ImportError:
        return []
    torch.set_num_threads(2)

    def make():
        torch.manual_seed(0)
        net = torch.nn.Sequential(torch.nn.Linear(SIZES[0], SIZES[1]), torch.nn.ReLU(),
                                  torch.nn.Linear(SIZES[1], SIZES[2]), torch.nn.ReLU(),
                                  torch.nn.Linear(SIZES[2], SIZES[3]))
        opt = torch.optim.SGD(net.parameters(), lr=LR)
        loss_fn = torch.nn.CrossEntropyLoss()

        def step(x, y):
            opt.zero_grad(set_to_none=True)
            loss = loss_fn(net(x), y)
            loss.backward()
            opt.step()
            return loss
        return step

    x, y = torch.from_numpy(xv), torch.from_numpy(yv.astype(onp.int64))
    rows = [("PyTorch eager", lambda s=make(): s(x, y), "")]
    if with_compile:
        compiled = torch.compile(make())
        start = time.perf_counter()
        compiled(x, y)
        rows.append(("torch.compile", lambda: compiled(x, y),
                     f"first call {time.perf_counter() - start:.1f} s"))
    return rows


def jax_step(xv, yv):
    try:
        import jax
        import jax.numpy as jnp
    except ImportError:
        return []
    key = jax.random.PRNGKey(0)
    params = []
    for a, b in zip(SIZES[:-1], SIZES[1:]):
        key, sub = jax.random.split(key)
        params.append((jax.random.normal(sub, (a, b)) * (2.0 / (a + b)) ** 0.5, jnp.zeros(b)))

    def loss_fn(p, x, y):
        h = x
        for k, (w, b) in enumerate(p):
            h = h @ w + b
            if k < len(p) - 1:
                h = jax.nn.relu(h)
        logp = jax.nn.log_softmax(h)
        return -jnp.mean(jnp.take_along_axis(logp, y[:, None], axis=1))

    return harness.jax_sgd_row(loss_fn, params, xv, yv, LR)


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m kiln bench train")
    parser.add_argument("--no-compile", action="store_true", help="skip torch.compile")
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args(argv)
    rng = onp.random.default_rng(0)
    xv = rng.normal(size=(BATCH, SIZES[0])).astype(onp.float32)
    yv = rng.integers(0, SIZES[-1], size=BATCH).astype(onp.float32)
    x, y = np.array(xv), np.array(yv)
    from kiln.backend import BACKENDS
    rows = [("kiln eager step", lambda s=kiln_step(None): s(x, y), "")]
    for backend in BACKENDS:
        step = kiln_step(backend)
        start = time.perf_counter()
        step(x, y)
        rows.append((f"kiln compiled step ({backend})", lambda s=step: s(x, y),
                     f"first call {time.perf_counter() - start:.2f} s"))
    rows += torch_steps(xv, yv, not args.no_compile)
    rows += jax_step(xv, yv)
    min_time = 0.1 if args.quick else 0.5
    timed = harness.side_by_side(rows, min_time=min_time, warmup=5)
    ref = min((t for t in timed if t[0].startswith("kiln compiled")), key=lambda t: t[1])[0]
    print(f"kiln {kiln.__version__}: training step, MLP {'-'.join(map(str, SIZES))}, batch "
          f"{BATCH}, softmax cross-entropy, SGD lr={LR}; {harness.setup_line()}\n")
    print(harness.markdown_table("ms per step", timed, ref))


if __name__ == "__main__":
    main()
