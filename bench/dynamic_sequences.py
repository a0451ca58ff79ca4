"""Benchmark: one compiled program for every batch and sequence length (issue 29), for
sequence models on the C backend (bench/dynamic.py does the MLP).

python -m kiln bench dynamic_sequences [--model encoder|lstm|lstm-train|both] [--quick]
- encoder: a BERT-style layer (bench/transformer_models.py's BertLayer, hidden 256, 4
  heads, ffn 1024) over batch x length pairs; lstm: a 2-layer LSTM (hidden 128, input
  64, batch 16, TNC) over lengths 1..100; lstm-train: its training step (forward and
  backward under autograd.record(), the gradients of the input and the weights);
- the programs hybridize makes for the sweep of sizes in order, with the default policy
  (symbolic once sizes vary) and with static_shape=True (one program per size);
- the steady-state time per call (per training step for lstm-train) at a few sizes of a
  specialized program (static_shape=True) and of the one symbolic program, timed side by side
  (harness.side_by_side), with their ratio.
"""
import argparse
import os
import sys
import time

import numpy as onp

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from transformer_models import BertLayer  # noqa: E402

import kiln  # noqa: E402
from kiln import autograd, np  # noqa: E402
from kiln.gluon import rnn  # noqa: E402


def _encoder():
    np.random.seed(0)
    net = BertLayer(hidden=256, heads=4, ffn=1024)
    net.initialize()
    return net


def _lstm():
    np.random.seed(0)
    net = rnn.LSTM(128, num_layers=2, input_size=64)
    net.initialize()
    return net


MODELS = {
    # name: (maker, input shape of a size, sweep of sizes, sizes timed, dynamic_axes)
    "encoder": (_encoder, lambda bs: (bs[0], bs[1], 256),
                [(b, s) for s in (8, 16, 33, 64) for b in (1, 2, 5, 8)],
                [(1, 16), (8, 32), (4, 128)], {0: {0: "batch", 1: "seq"}}),
    "lstm": (_lstm, lambda t: (t, 16, 64), list(range(1, 101)), [10, 35, 100],
             {0: {0: "length"}}),
}
MODELS["lstm-train"] = MODELS["lstm"]
TRAINING = {"lstm-train"}


def _x(shape):
    return np.array(onp.random.RandomState(sum(shape)).randn(*shape).astype("float32"))


def _call(name, net, x):
    """The model's output (inference), or the input's gradient after one training step."""
    if name not in TRAINING:
        return net(x)
    x.attach_grad()
    with autograd.record():
        y = (net(x) ** 2).sum()
    y.backward()
    return x.grad


def sweep(name, **flags):
    """(programs made, seconds) calling a fresh hybridized model at each size in order."""
    make, shape, sizes, _, _ = MODELS[name]
    net = make()
    net.hybridize(backend="c", **flags)
    start = time.perf_counter()
    for size in sizes:
        _call(name, net, _x(shape(size)))
    return len(kiln.programs(net)), time.perf_counter() - start


def steady_rows(name):
    make, shape, _, timed, axes = MODELS[name]
    symbolic, eager = make(), make()
    symbolic.hybridize(backend="c", dynamic_axes=axes)
    rows = []
    for size in timed:
        x = _x(shape(size))
        special = make()
        special.hybridize(backend="c", static_shape=True)
        want = _call(name, eager, x).asnumpy()
        for net in (special, symbolic):
            if not onp.allclose(_call(name, net, x).asnumpy(), want, rtol=1e-3, atol=1e-4):
                raise SystemExit(f"{name} {size}: a compiled program disagrees with eager")
        rows.append((f"{size} specialized", lambda net=special, x=x: _call(name, net, x), ""))
        rows.append((f"{size} symbolic", lambda x=x: _call(name, symbolic, x), ""))
    listing = kiln.programs(symbolic)
    kinds = {type(p.entry.program).__name__ for p in listing.programs}
    return rows, len(listing), kinds


def report(name, quick):
    _, _, sizes, timed_sizes, _ = MODELS[name]
    print(f"### {name}: programs for {len(sizes)} sizes called in order\n")
    print("| policy | programs | sweep wall time |\n| --- | ---: | ---: |")
    n, seconds = sweep(name)
    print(f"| default (symbolic once sizes vary) | {n} | {seconds:.2f} s |")
    n, seconds = sweep(name, static_shape=True)
    print(f"| static_shape=True (one per size) | {n} | {seconds:.2f} s |\n")
    rows, n_symbolic, kinds = steady_rows(name)
    timed = dict((row, t) for row, t, _ in harness.side_by_side(
        rows, min_time=0.05 if quick else 0.3, rounds=5 if quick else 9))
    print(f"### {name}: steady state per call, {n_symbolic} symbolic program(s) "
          f"({', '.join(sorted(kinds))}); load average {os.getloadavg()[0]:.1f}\n")
    print("| size | specialized | symbolic | symbolic / specialized |")
    print("| ---: | ---: | ---: | ---: |")
    for size in timed_sizes:
        spec, sym = timed[f"{size} specialized"], timed[f"{size} symbolic"]
        print(f"| {size} | {harness.fmt_time(spec)} | {harness.fmt_time(sym)} | "
              f"{sym / spec:.3f} |")
    print()


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m kiln bench dynamic_sequences")
    parser.add_argument("--model", choices=("encoder", "lstm", "lstm-train", "both"),
                        default="both")
    parser.add_argument("--quick", action="store_true", help="shorter timing rounds")
    args = parser.parse_args(argv)
    print(f"kiln {kiln.__version__} benchmark: run-time sizes in generated C for sequence "
          f"models; {harness.setup_line()}; load average {os.getloadavg()[0]:.1f}\n")
    for name in (("encoder", "lstm") if args.model == "both" else (args.model,)):
        report(name, args.quick)


if __name__ == "__main__":
    main()
