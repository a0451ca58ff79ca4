"""Benchmark: forward + backward of a 2-layer LSTM (hidden 256, batch 32, 35 time steps,
input 256, layout TNC), in ms per call: kiln eager, kiln hybridized per backend, PyTorch's
nn.LSTM eager, and JAX (lax.scan under jit) when installed.

python -m kiln bench lstm [--quick] [--threads N]

--threads N gives kiln's pool (KILN_NUM_THREADS) and PyTorch N threads; NumPy's OpenBLAS
(kiln eager and the NumPy executor) reads OPENBLAS_NUM_THREADS when it loads, so set that
in the environment too. On a machine shared with other work, one thread each compares the
code rather than how each runtime's thread pool copes with cores it does not get.
"""
import argparse
import os
import sys
import time

import numpy as onp

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402

import kiln  # noqa: E402
from kiln import np
from kiln import autograd  # noqa: E402
from kiln.gluon import rnn  # noqa: E402

STEPS, BATCH, INPUT, HIDDEN, LAYERS = 35, 32, 256, 256, 2


def kiln_call(backend, xv):
    np.random.seed(0)
    net = rnn.LSTM(HIDDEN, num_layers=LAYERS, input_size=INPUT)
    net.initialize()
    if backend is not None:
        net.hybridize(backend=backend)
    x = np.array(xv)
    x.attach_grad()

    def run():
        with autograd.record():
            loss = net(x).sum()
        loss.backward()
    return run


def torch_call(xv, threads):
    try:
        import torch
    except ImportError:
        return []
    torch.set_num_threads(threads or 2)
    torch.manual_seed(0)
    net = torch.nn.LSTM(INPUT, HIDDEN, LAYERS)
    x = torch.tensor(xv, requires_grad=True)

    def run():
        net.zero_grad(set_to_none=True)
        x.grad = None
        net(x)[0].sum().backward()
    return [("PyTorch nn.LSTM eager", run, "")]


def jax_call(xv):
    try:
        import jax
        import jax.numpy as jnp
    except ImportError:
        return []
    key = jax.random.PRNGKey(0)
    params = []
    for layer in range(LAYERS):
        n_in = INPUT if layer == 0 else HIDDEN
        key, k1, k2 = jax.random.split(key, 3)
        params.append((jax.random.normal(k1, (n_in, 4 * HIDDEN)) * 0.05,
                       jax.random.normal(k2, (HIDDEN, 4 * HIDDEN)) * 0.05,
                       jnp.zeros(4 * HIDDEN)))

    def forward(p, x):
        for wi, wh, b in p:
            xs = x @ wi + b

            def step(carry, xt):
                h, c = carry
                i, f, g, o = jnp.split(xt + h @ wh, 4, axis=-1)
                c = jax.nn.sigmoid(f) * c + jax.nn.sigmoid(i) * jnp.tanh(g)
                h = jax.nn.sigmoid(o) * jnp.tanh(c)
                return (h, c), h
            zeros = jnp.zeros((x.shape[1], HIDDEN), x.dtype)
            _, x = jax.lax.scan(step, (zeros, zeros), xs)
        return x.sum()

    grad = jax.jit(jax.grad(forward, argnums=(0, 1)))
    x = jnp.asarray(xv)

    def run():
        jax.block_until_ready(grad(params, x))
    run()
    return [("JAX jit (lax.scan)", run, "")]


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m kiln bench lstm")
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--threads", type=int, default=None,
                        help="threads for every runtime (set before they load)")
    args = parser.parse_args(argv)
    if args.threads:
        os.environ["KILN_NUM_THREADS"] = str(args.threads)   # read when the pool starts
    xv = onp.random.default_rng(0).normal(size=(STEPS, BATCH, INPUT)).astype(onp.float32)
    from kiln.backend import BACKENDS
    rows = [("kiln eager", kiln_call(None, xv), "")]
    for backend in BACKENDS:
        run = kiln_call(backend, xv)
        start = time.perf_counter()
        run()
        rows.append((f"kiln hybridized ({backend})", run,
                     f"first call {time.perf_counter() - start:.2f} s"))
    rows += torch_call(xv, args.threads)
    rows += jax_call(xv)
    timed = harness.side_by_side(rows, min_time=0.3 if args.quick else 1.0, warmup=2,
                                 rounds=3 if args.quick else 5)
    threads = f"{args.threads} thread(s) per runtime" if args.threads else "default threads"
    print(f"kiln {kiln.__version__}: forward + backward, LSTM {LAYERS} layers, hidden "
          f"{HIDDEN}, input {INPUT}, batch {BATCH}, {STEPS} steps, {threads}; "
          f"{harness.setup_line()}\n")
    print(harness.markdown_table("ms per forward + backward", timed,
                                 "PyTorch nn.LSTM eager"))


if __name__ == "__main__":
    main()
