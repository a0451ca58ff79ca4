"""Benchmark: one compiled program for every batch size (issue 29), on the C backend.

python -m kiln bench dynamic [--model mlp|cnn|both] [--batches 1,64,1024] [--sweep 64]
                             [--quick]
The issue's MLP (784-256-128-10, float32) and a small CNN (LeNet on 1x28x28: two 5x5
convolutions with ReLU and 2x2 max pooling, two Dense layers; and the same with a BatchNorm
in inference after the first convolution), each three ways, in one process:
- the programs hybridize makes for batch sizes 1..SWEEP called in order, with the default
  policy (sizes become symbolic once they vary) and with static_shape=True (one program
  per size, as before), and the wall time of each sweep (C compiles included; the disk
  cache is as this machine has it);
- the steady-state time per call at each of --batches of a specialized program
  (static_shape=True) and of the one symbolic program (dynamic_axes, run-time sizes),
  timed side by side (harness.side_by_side), with their ratio.
"""
import argparse
import os
import sys
import time

import numpy as onp

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402

import kiln  # noqa: E402
from kiln import np  # noqa: E402
from kiln.gluon import nn  # noqa: E402

IN_UNITS = 784


def _mlp():
    net = nn.HybridSequential()
    net.add(nn.Dense(256, activation="relu", in_units=IN_UNITS),
            nn.Dense(128, activation="relu", in_units=256), nn.Dense(10, in_units=128))
    return net


def _lenet(batch_norm=False):
    net = nn.HybridSequential()
    net.add(nn.Conv2D(6, 5, padding=2, activation="relu", in_channels=1))
    if batch_norm:
        net.add(nn.BatchNorm(in_channels=6))
    net.add(nn.MaxPool2D(2), nn.Conv2D(16, 5, activation="relu", in_channels=6),
            nn.MaxPool2D(2), nn.Flatten(), nn.Dense(120, activation="relu", in_units=400),
            nn.Dense(10, in_units=120))
    return net


# name -> (a new network, the input row's shape)
MODELS = {"MLP 784-256-128-10": (_mlp, (IN_UNITS,)),
          "LeNet CNN": (_lenet, (1, 28, 28)),
          "LeNet CNN with BatchNorm": (lambda: _lenet(batch_norm=True), (1, 28, 28))}


def get_net(weights=None, model="MLP 784-256-128-10"):
    net = MODELS[model][0]()
    net.initialize()
    if weights is not None:
        for p, q in zip(net.collect_params().values(), weights.collect_params().values()):
            p.set_data(q.data())
    return net


def _x(batch, model="MLP 784-256-128-10"):
    shape = (batch,) + MODELS[model][1]
    return np.array(onp.random.RandomState(batch).randn(*shape).astype("float32"))


def sweep(weights, sizes, model, **flags):
    """(programs made, seconds) calling a fresh hybridized net at each size in order."""
    net = get_net(weights, model)
    net.hybridize(backend="c", **flags)
    start = time.perf_counter()
    for batch in sizes:
        net(_x(batch, model))
    return len(kiln.programs(net)), time.perf_counter() - start


def steady_rows(weights, batches, model):
    """Rows for side_by_side: per batch, the specialized and the symbolic program."""
    symbolic = get_net(weights, model)
    symbolic.hybridize(backend="c", dynamic_axes={"x": {0: "batch"}})
    eager = get_net(weights, model)
    rows = []
    for batch in batches:
        x = _x(batch, model)
        special = get_net(weights, model)
        special.hybridize(backend="c", static_shape=True)
        want = eager(x).asnumpy()
        for net in (special, symbolic):
            if not onp.allclose(net(x).asnumpy(), want, rtol=1e-4, atol=1e-5):
                raise SystemExit(f"batch {batch}: a compiled program disagrees with eager")
        rows.append((f"batch {batch} specialized", lambda net=special, x=x: net(x), ""))
        rows.append((f"batch {batch} symbolic", lambda x=x: symbolic(x), ""))
    listing = kiln.programs(symbolic)
    kinds = {type(p.entry.program).__name__ for p in listing.programs}
    return rows, len(listing), kinds


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m kiln bench dynamic")
    parser.add_argument("--batches", default="1,64,1024")
    parser.add_argument("--sweep", type=int, default=64, help="batch sizes 1..N in order")
    parser.add_argument("--quick", action="store_true", help="shorter timing rounds")
    parser.add_argument("--no-static-sweep", action="store_true",
                        help="skip the sweep that compiles one program per size")
    parser.add_argument("--model", choices=("mlp", "cnn", "both"), default="both")
    args = parser.parse_args(argv)
    batches = [int(b) for b in args.batches.split(",")]
    models = [m for m in MODELS if args.model == "both" or (args.model == "mlp") == ("MLP" in m)]
    print(f"kiln {kiln.__version__} benchmark: run-time sizes in generated C, float32; "
          f"{harness.setup_line()}; load average {os.getloadavg()[0]:.1f}\n")
    for model in models:
        run_model(model, batches, args)


def run_model(model, batches, args):
    weights = get_net(model=model)
    sizes = list(range(1, args.sweep + 1))
    lines = [f"### {model}: programs for batch sizes 1..{args.sweep}, called in order", "",
             "| policy | programs | sweep wall time |", "| --- | ---: | ---: |"]
    n, seconds = sweep(weights, sizes, model)
    lines.append(f"| default (symbolic once sizes vary) | {n} | {seconds:.2f} s |")
    if not args.no_static_sweep:
        n, seconds = sweep(weights, sizes, model, static_shape=True)
        lines.append(f"| static_shape=True (one per size) | {n} | {seconds:.2f} s |")
    print("\n".join(lines) + "\n")
    rows, n_symbolic, kinds = steady_rows(weights, batches, model)
    timed = dict((name, t) for name, t, _ in harness.side_by_side(
        rows, min_time=0.05 if args.quick else 0.3, rounds=5 if args.quick else 9))
    print(f"### {model}: steady state per call, {n_symbolic} symbolic program(s) "
          f"({', '.join(kinds)}) served {', '.join(map(str, batches))}; load average "
          f"{os.getloadavg()[0]:.1f}\n")
    print("| batch | specialized | symbolic | symbolic / specialized |")
    print("| ---: | ---: | ---: | ---: |")
    for batch in batches:
        spec, sym = timed[f"batch {batch} specialized"], timed[f"batch {batch} symbolic"]
        print(f"| {batch} | {harness.fmt_time(spec)} | {harness.fmt_time(sym)} | "
              f"{sym / spec:.3f} |")
    print()

if __name__ == "__main__":
    main()
