"""`python -m kiln demo`: kiln's main job, end to end, on the 8x8 digits from scikit-learn.

1. An MLP trained with compiled steps (forward + backward + update in one native program
   for every batch size), with eager vs compiled step time measured side by side.
2. A small CNN trained the same way.
3. The MLP exported (symbol JSON + npz params), reloaded without its Python class, and
   compiled to a standalone C program that classifies the test set with no Python at all.

Fully seeded; exits non-zero if a model is below 95% test accuracy or a reloaded model
disagrees with the original.
"""
import argparse
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
import warnings

import numpy as _onp

REQUIRED_ACCURACY = 0.95


def parse_args(argv):
    p = argparse.ArgumentParser(prog="python -m kiln demo", description=__doc__.split("\n")[0])
    p.add_argument("--epochs", type=int, default=25)
    p.add_argument("--cnn-epochs", type=int, default=12, help="0 skips the CNN")
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--lr", type=float, default=2e-3)
    p.add_argument("--optimizer", default="adam", help="sgd, nag, adam or adamw")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--num-workers", type=int, default=0,
                   help="DataLoader worker processes (0 loads in the main process)")
    p.add_argument("--eager", action="store_true", help="train with eager steps")
    p.add_argument("--no-export", action="store_true", help="skip export, reload and C")
    p.add_argument("--out", metavar="DIR", help="keep the exported files here")
    p.add_argument("--quiet", action="store_true", help="no progress bars")
    return p.parse_args(argv)


def seed_everything(seed):
    import kiln
    random.seed(seed)
    _onp.random.seed(seed)
    kiln.np.random.seed(seed)


def load_data(batch_size, num_workers=0, flatten=True):
    from kiln.gluon import data as gdata
    train = gdata.DataLoader(gdata.Digits(train=True, flatten=flatten), batch_size=batch_size,
                             shuffle=True, num_workers=num_workers)
    test = gdata.DataLoader(gdata.Digits(train=False, flatten=flatten), batch_size=512)
    return train, test


def build_model():
    from kiln import init
    from kiln.gluon import nn
    net = nn.HybridSequential()
    net.add(nn.Dense(128, activation="relu"), nn.Dense(64, activation="relu"), nn.Dense(10))
    net.initialize(init.Xavier())
    return net


def build_cnn():
    from kiln import init
    from kiln.gluon import nn
    net = nn.HybridSequential()
    net.add(nn.Conv2D(16, kernel_size=3, padding=1, use_bias=False), nn.BatchNorm(),
            nn.Activation("relu"), nn.MaxPool2D(pool_size=2, strides=2),
            nn.Conv2D(32, kernel_size=3, padding=1), nn.Activation("relu"),
            nn.MaxPool2D(pool_size=2, strides=2), nn.Flatten(), nn.Dense(10))
    net.initialize(init.Xavier())
    return net


def step_times(build, x, y, optimizer, lr, repeats=30):
    """(eager, compiled) seconds per training step, on a throwaway copy of the model."""
    from kiln.fit import make_step
    from kiln.gluon import Trainer, loss as gloss
    result = []
    for compiled in (False, True):
        net = build()
        trainer = Trainer(net.collect_params(), optimizer, {"learning_rate": lr})
        step = make_step(net, gloss.SoftmaxCrossEntropyLoss(), trainer, compiled=compiled)
        step(x, y)
        step(x, y)
        start = time.perf_counter()
        for _ in range(repeats):
            step(x, y)
        result.append((time.perf_counter() - start) / repeats)
    return result


def train(name, build, args, flatten=True):
    """Train one model with kiln.fit; returns (net, test loader, accuracy)."""
    import kiln
    from kiln.fit import accuracy
    from kiln.gluon import Trainer, loss as gloss
    seed_everything(args.seed)
    train_loader, test_loader = load_data(args.batch_size, args.num_workers, flatten)
    x, y = next(iter(train_loader))
    eager_s, compiled_s = step_times(build, x, y, args.optimizer, args.lr)
    print(f"  step time, batch {x.shape[0]}: eager {eager_s * 1e3:.2f} ms, compiled "
          f"{compiled_s * 1e3:.2f} ms ({eager_s / compiled_s:.1f}x faster)")
    seed_everything(args.seed)
    net = build()
    trainer = Trainer(net.collect_params(), args.optimizer, {"learning_rate": args.lr})
    epochs = args.epochs if name == "MLP" else args.cnn_epochs
    kiln.fit(net, train_loader, gloss.SoftmaxCrossEntropyLoss(), trainer, epochs=epochs,
             compiled=not args.eager, quiet=args.quiet)
    train_loader.close()
    acc = accuracy(net, test_loader)
    print(f"{name} test accuracy {acc:.2%} on {len(test_loader._dataset)} held-out digits")
    return net, test_loader, acc


def export_and_reload(net, test_loader, out_dir):
    """Export, reload without the class, and run as a standalone C program."""
    from kiln.fit import accuracy
    from kiln.gluon import nn
    x_all = _onp.concatenate([x.asnumpy() for x, _ in test_loader])
    y_all = _onp.concatenate([y.asnumpy() for _, y in test_loader]).astype(_onp.int64)
    import kiln
    x = kiln.np.array(x_all)
    net.hybridize()
    original = net(x).asnumpy()
    prefix = os.path.join(out_dir, "digits_mlp")
    sym_file, par_file = net.export(prefix)
    print(f"exported {os.path.basename(sym_file)} and {os.path.basename(par_file)}")
    loaded = nn.SymbolBlock.imports(sym_file, ["data"], par_file)
    reloaded = loaded(x).asnumpy()
    same = _onp.allclose(reloaded, original, rtol=1e-5, atol=1e-5)
    acc = float((reloaded.argmax(axis=1) == y_all).mean())
    print(f"reloaded without its class: test accuracy {acc:.2%} "
          f"({'identical outputs' if same else 'OUTPUTS DIFFER'})")
    ok = same and abs(acc - accuracy(net, test_loader)) < 1e-12
    return ok and _standalone_c(sym_file, par_file, x_all, original, y_all, out_dir)


def _standalone_c(sym_file, par_file, x_all, original, y_all, out_dir):
    from kiln.export.standalone_c import build_c
    if not (shutil.which("make") and shutil.which(os.environ.get("CC") or "cc")):
        print("standalone C: skipped (no C compiler or make here)")
        return True
    c_dir = os.path.join(out_dir, "digits_c")
    build_c(sym_file, par_file, c_dir)
    res = subprocess.run(["make", "-s", "-C", c_dir], capture_output=True, text=True)
    if res.returncode != 0:
        print(f"standalone C: make failed:\n{res.stderr[-2000:]}", file=sys.stderr)
        return False
    run = subprocess.run([os.path.join(c_dir, "model")],
                         input=_onp.ascontiguousarray(x_all, "<f4").tobytes(),
                         capture_output=True)
    if run.returncode != 0:
        print(f"standalone C: the program failed: {run.stderr.decode()[-500:]}", file=sys.stderr)
        return False
    out = _onp.frombuffer(run.stdout, dtype="<f4").reshape(original.shape)
    acc = float((out.argmax(axis=1) == y_all).mean())
    same = _onp.allclose(out, original, rtol=1e-4, atol=1e-4)
    print(f"standalone C program ({c_dir}/model, no Python): test accuracy {acc:.2%} "
          f"({'same outputs' if same else 'OUTPUTS DIFFER'})")
    return same


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    from kiln.graph.capture import KilnTraceWarning
    # the demo compiles on purpose; the "side effects run only while tracing" note is for
    # people hybridizing their own code
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", KilnTraceWarning)
        return _run(args)


def _run(args):
    from kiln._core.base import KilnError
    start = time.perf_counter()
    mode = "eager" if args.eager else "compiled"
    print(f"kiln demo: 8x8 digits, {args.optimizer} lr={args.lr}, batch {args.batch_size}, "
          f"{mode} training steps")
    try:
        print("[1] MLP 64-128-64-10")
        net, test_loader, acc = train("MLP", build_model, args)
        accuracies = [acc]
        if args.cnn_epochs:
            print("[2] CNN conv16-pool-conv32-pool-dense10")
            accuracies.append(train("CNN", build_cnn, args, flatten=False)[2])
        ok = True
        if not args.no_export:
            print("[3] export, reload without the class, standalone C")
            out_dir = args.out or tempfile.mkdtemp(prefix="kiln-demo-")
            os.makedirs(out_dir, exist_ok=True)
            try:
                ok = export_and_reload(net, test_loader, out_dir)
            finally:
                if not args.out:
                    shutil.rmtree(out_dir, ignore_errors=True)
    except KilnError as exc:
        print(f"kiln demo: {exc}", file=sys.stderr)
        return 2
    elapsed = time.perf_counter() - start
    print(f"test accuracy {min(accuracies):.2%} (lowest of the models), {elapsed:.1f} s in all")
    if min(accuracies) < REQUIRED_ACCURACY or not ok:
        print(f"kiln demo: FAILED, accuracy below {REQUIRED_ACCURACY:.0%} or a reloaded model "
              "disagrees", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
