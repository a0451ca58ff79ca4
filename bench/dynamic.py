"""Benchmark: one compiled program for every batch size (issue 29), on the C backend.

python -m kiln bench dynamic [--batches 1,64,1024] [--sweep 64] [--quick]
The issue's MLP (784-256-128-10, float32) three ways, in one process:
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


def get_net(weights=None):
    net = nn.HybridSequential()
    net.add(nn.Dense(256, activation="relu", in_units=IN_UNITS),
            nn.Dense(128, activation="relu", in_units=256), nn.Dense(10, in_units=128))
    net.initialize()
    if weights is not None:
        for p, q in zip(net.collect_params().values(), weights.collect_params().values()):
            p.set_data(q.data())
    return net


def _x(batch):
    return np.array(onp.random.RandomState(batch).randn(batch, IN_UNITS).astype("float32"))


def sweep(weights, sizes, **flags):
    """(programs made, seconds) calling a fresh hybridized net at each size in order."""
    net = get_net(weights)
    net.hybridize(backend="c", **flags)
    start = time.perf_counter()
    for batch in sizes:
        net(_x(batch))
    return len(kiln.programs(net)), time.perf_counter() - start


def steady_rows(weights, batches):
    """Rows for side_by_side: per batch, the specialized and the symbolic program."""
    symbolic = get_net(weights)
    symbolic.hybridize(backend="c", dynamic_axes={"x": {0: "batch"}})
    eager = get_net(weights)
    rows = []
    for batch in batches:
        x = _x(batch)
        special = get_net(weights)
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
    args = parser.parse_args(argv)
    batches = [int(b) for b in args.batches.split(",")]
    weights = get_net()
    print(f"kiln {kiln.__version__} benchmark: run-time sizes in generated C, MLP "
          f"784-256-128-10 float32; {harness.setup_line()}; load average "
          f"{os.getloadavg()[0]:.1f}\n")
    sizes = list(range(1, args.sweep + 1))
    lines = ["### programs for batch sizes 1..%d, called in order" % args.sweep, "",
             "| policy | programs | sweep wall time |", "| --- | ---: | ---: |"]
    n, seconds = sweep(weights, sizes)
    lines.append(f"| default (symbolic once sizes vary) | {n} | {seconds:.2f} s |")
    if not args.no_static_sweep:
        n, seconds = sweep(weights, sizes, static_shape=True)
        lines.append(f"| static_shape=True (one per size) | {n} | {seconds:.2f} s |")
    print("\n".join(lines) + "\n")
    rows, n_symbolic, kinds = steady_rows(weights, batches)
    timed = dict((name, t) for name, t, _ in harness.side_by_side(
        rows, min_time=0.05 if args.quick else 0.3, rounds=5 if args.quick else 9))
    print(f"### steady state per call: {n_symbolic} symbolic program(s) ({', '.join(kinds)}) "
          f"served {', '.join(map(str, batches))}; load average {os.getloadavg()[0]:.1f}\n")
    print("| batch | specialized | symbolic | symbolic / specialized |")
    print("| ---: | ---: | ---: | ---: |")
    for batch in batches:
        spec, sym = timed[f"batch {batch} specialized"], timed[f"batch {batch} symbolic"]
        print(f"| {batch} | {harness.fmt_time(spec)} | {harness.fmt_time(sym)} | "
              f"{sym / spec:.3f} |")


if __name__ == "__main__":
    main()
