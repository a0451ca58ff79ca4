"""Benchmark: one compiled program for every batch size (issue 29), on the C backend.

python -m kiln bench dynamic [--model mlp|cnn|both] [--batches 1,64,1024] [--sweep 64]
                             [--quick]
The models, float32, each three ways in one process:
- mlp: the issue's MLP (784-256-128-10);
- lenet: d2l's LeNet (bench/cnn_models.py: Conv/MaxPool/Dense, ReLU) on 1x28x28 images;
- cnn-bn: Conv/BatchNorm/ReLU/MaxPool, Conv/BatchNorm/ReLU/AvgPool, Dense, BatchNorm in
  inference (running statistics) on 1x28x28 images;
`--model cnn` runs lenet and cnn-bn, `both` (the default) all three. For each:
- the programs hybridize makes for batch sizes 1..SWEEP called in order, with the default
  policy (sizes become symbolic once they vary) and with static_shape=True (one program
  per size, as before), and the wall time of each sweep (C compiles included; the disk
  cache is as this machine has it);
- the steady-state time per call at each of --batches (per model by default: 1, 64 and
  1024 for the MLP, 1, 64 and 256 for the CNNs) of a specialized program
  (static_shape=True) and of the one symbolic program (dynamic_axes, run-time sizes),
  timed side by side (harness.side_by_side), with their ratio, and the CPU time per call
  (time.process_time, every thread of the process) beside it;
- for mlp and lenet, one whole compiled training step (kiln.fit.make_step: forward,
  backward, SGD update) over batches of 64 and a last one of 17: the programs it makes
  with a run-time batch (make_step's default) and with static_shape=True, and the time
  per step of each at both batches, side by side.
"""
import argparse
import os
import sys
import time

import numpy as onp

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from cnn_models import kiln_lenet  # noqa: E402

import kiln  # noqa: E402
from kiln import np  # noqa: E402
from kiln.gluon import nn  # noqa: E402

IN_UNITS = 784
IMAGE = (1, 28, 28)


def _mlp():
    net = nn.HybridSequential()
    net.add(nn.Dense(256, activation="relu", in_units=IN_UNITS),
            nn.Dense(128, activation="relu", in_units=256), nn.Dense(10, in_units=128))
    return net


def _cnn_bn():
    net = nn.HybridSequential()
    net.add(nn.Conv2D(8, kernel_size=3, padding=1), nn.BatchNorm(), nn.Activation("relu"),
            nn.MaxPool2D(pool_size=2, strides=2),
            nn.Conv2D(16, kernel_size=3, padding=1), nn.BatchNorm(), nn.Activation("relu"),
            nn.AvgPool2D(pool_size=2, strides=2), nn.Dense(10))
    return net


MODELS = {   # name: (maker, shape of one example, batches timed by default, description)
    "mlp": (_mlp, (IN_UNITS,), (1, 64, 1024), "MLP 784-256-128-10"),
    "lenet": (kiln_lenet, IMAGE, (1, 64, 256), "LeNet (Conv/MaxPool/Dense) on 1x28x28"),
    "cnn-bn": (_cnn_bn, IMAGE, (1, 64, 256),
               "Conv/BatchNorm/ReLU/Pool x2 + Dense on 1x28x28, BatchNorm in inference"),
}
CHOICES = {"mlp": ("mlp",), "cnn": ("lenet", "cnn-bn"), "both": ("mlp", "lenet", "cnn-bn")}


def _x(name, batch):
    shape = (batch,) + MODELS[name][1]
    return np.array(onp.random.RandomState(batch).randn(*shape).astype("float32"))


def get_net(name, weights=None):
    """A fresh model; its parameters (running statistics included) those of `weights`, or
    random ones, so that BatchNorm's inference is not the identity."""
    net = MODELS[name][0]()
    net.initialize()
    net(_x(name, 1))                 # eager: deferred shapes become concrete
    rng = onp.random.RandomState(7)
    for k, p in enumerate(net.collect_params().values()):
        if weights is not None:
            p.set_data(list(weights.collect_params().values())[k].data())
        elif p.name.endswith("running_var"):
            p.set_data(np.array(rng.uniform(0.5, 2, p.shape).astype("float32")))
        elif p.name.endswith("running_mean"):
            p.set_data(np.array(rng.uniform(-0.5, 0.5, p.shape).astype("float32")))
    return net


def sweep(name, weights, sizes, **flags):
    """(programs made, seconds) calling a fresh hybridized net at each size in order."""
    net = get_net(name, weights)
    net.hybridize(backend="c", **flags)
    start = time.perf_counter()
    for batch in sizes:
        net(_x(name, batch))
    return len(kiln.programs(net)), time.perf_counter() - start


def steady_rows(name, weights, batches):
    """Rows for side_by_side: per batch, the specialized and the symbolic program."""
    symbolic = get_net(name, weights)
    symbolic.hybridize(backend="c", dynamic_axes={"x": {0: "batch"}})
    eager = get_net(name, weights)
    rows = []
    for batch in batches:
        x = _x(name, batch)
        special = get_net(name, weights)
        special.hybridize(backend="c", static_shape=True)
        want = eager(x).asnumpy()
        for net in (special, symbolic):
            if not onp.allclose(net(x).asnumpy(), want, rtol=1e-4, atol=1e-5):
                raise SystemExit(f"{name} batch {batch}: a compiled program disagrees "
                                 "with eager")
        rows.append((f"batch {batch} specialized", lambda net=special, x=x: net(x), ""))
        rows.append((f"batch {batch} symbolic", lambda x=x: symbolic(x), ""))
    listing = kiln.programs(symbolic)
    kinds = {type(p.entry.program).__name__ for p in listing.programs}
    return rows, len(listing), kinds


def cpu_per_call(fn, seconds):
    """CPU time per call (every thread of the process), over about `seconds` of wall time."""
    n, wall, cpu = 0, time.perf_counter(), time.process_time()
    while time.perf_counter() - wall < seconds:
        fn()
        n += 1
    return (time.process_time() - cpu) / n


def report(name, args):
    maker, _, default_batches, description = MODELS[name]
    batches = [int(b) for b in args.batches.split(",")] if args.batches else default_batches
    weights = get_net(name)
    sizes = list(range(1, args.sweep + 1))
    print(f"## {name}: {description}\n")
    lines = ["### programs for batch sizes 1..%d, called in order" % args.sweep, "",
             "| policy | programs | sweep wall time |", "| --- | ---: | ---: |"]
    n, seconds = sweep(name, weights, sizes)
    lines.append(f"| default (symbolic once sizes vary) | {n} | {seconds:.2f} s |")
    if not args.no_static_sweep:
        n, seconds = sweep(name, weights, sizes, static_shape=True)
        lines.append(f"| static_shape=True (one per size) | {n} | {seconds:.2f} s |")
    print("\n".join(lines) + "\n")
    rows, n_symbolic, kinds = steady_rows(name, weights, batches)
    timed = dict((row, t) for row, t, _ in harness.side_by_side(
        rows, min_time=0.05 if args.quick else 0.3, rounds=5 if args.quick else 9))
    cpu = {row: cpu_per_call(fn, 0.02 if args.quick else 0.1) for row, fn, _ in rows}
    print(f"### {name}: steady state per call, {n_symbolic} symbolic program(s) "
          f"({', '.join(sorted(kinds))}) served {', '.join(map(str, batches))}; load "
          f"average {os.getloadavg()[0]:.1f}\n")
    print("| batch | specialized | symbolic | symbolic / specialized | CPU time "
          "specialized / symbolic |")
    print("| ---: | ---: | ---: | ---: | ---: |")
    for batch in batches:
        spec, sym = f"batch {batch} specialized", f"batch {batch} symbolic"
        print(f"| {batch} | {harness.fmt_time(timed[spec])} | {harness.fmt_time(timed[sym])} "
              f"| {timed[sym] / timed[spec]:.3f} | {harness.fmt_time(cpu[spec])} / "
              f"{harness.fmt_time(cpu[sym])} |")
    print()


def training_rows(name, weights, batches):
    """Rows for side_by_side: a whole compiled training step (kiln.fit.make_step, SGD) with
    a run-time batch (make_step's default) and one per batch size (static_shape=True), at
    each batch; and the programs each made for an epoch of these batches."""
    from kiln import gluon
    from kiln.fit import make_step
    steps, rows = {}, []
    for static in (True, False):
        net = get_net(name, weights)
        trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.01})
        steps[static] = make_step(net, gluon.loss.SoftmaxCrossEntropyLoss(), trainer,
                                  backend="c", static_shape=static)
    rng = onp.random.RandomState(0)
    for batch in batches:
        y = np.array(rng.randint(0, 10, batch).astype("float32"))
        for static, label in ((True, "one per batch size"), (False, "run-time batch")):
            rows.append((f"batch {batch} {label}",
                         lambda s=steps[static], x=_x(name, batch), y=y: s(x, y), ""))
    for _, fn, _ in rows:
        fn()
    return rows, {static: len(kiln.programs(s)) for static, s in steps.items()}


def report_training(name, args):
    """The training step of `name` over an epoch of batches 64 and a last one of 17."""
    batches = (64, 17)
    rows, programs = training_rows(name, get_net(name), batches)
    timed = dict((row, t) for row, t, _ in harness.side_by_side(
        rows, min_time=0.05 if args.quick else 0.3, rounds=5 if args.quick else 9))
    print(f"### {name}: one compiled training step (kiln.fit.make_step, SGD) over batches of "
          f"64 and a last one of 17: {programs[False]} program(s) with a run-time batch, "
          f"{programs[True]} with static_shape=True; load average "
          f"{os.getloadavg()[0]:.1f}\n")
    print("| batch | one per batch size | run-time batch | run-time / per size |")
    print("| ---: | ---: | ---: | ---: |")
    for batch in batches:
        spec, sym = (timed[f"batch {batch} {k}"] for k in ("one per batch size",
                                                             "run-time batch"))
        print(f"| {batch} | {harness.fmt_time(spec)} | {harness.fmt_time(sym)} | "
              f"{sym / spec:.3f} |")
    print()


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m kiln bench dynamic")
    parser.add_argument("--model", choices=sorted(CHOICES), default="both",
                        help="mlp, cnn (LeNet and a CNN with BatchNorm) or both")
    parser.add_argument("--batches", default=None,
                        help="batch sizes timed (default per model: 1,64,1024 for the MLP, "
                             "1,64,256 for the CNNs)")
    parser.add_argument("--sweep", type=int, default=64, help="batch sizes 1..N in order")
    parser.add_argument("--quick", action="store_true", help="shorter timing rounds")
    parser.add_argument("--no-static-sweep", action="store_true",
                        help="skip the sweep that compiles one program per size")
    args = parser.parse_args(argv)
    print(f"kiln {kiln.__version__} benchmark: run-time sizes in generated C, float32; "
          f"{harness.setup_line()}; load average {os.getloadavg()[0]:.1f}\n")
    for name in CHOICES[args.model]:
        report(name, args)
        if name != "cnn-bn":      # (its BatchNorm is for inference)
            report_training(name, args)


if __name__ == "__main__":
    main()
