"""`python -m kiln demo`: train an MLP on the 8x8 digits bundled with scikit-learn.

Everything a Gluon user writes is here in small pieces (data, model, one epoch, evaluation),
so later steps (hybridize, export, C) can reuse or swap single pieces.  Fully seeded: the same
machine prints the same losses every run.  Exits non-zero if test accuracy < 95%.
"""
import argparse
import random
import sys
import time

import numpy as _onp

REQUIRED_ACCURACY = 0.95


def parse_args(argv):
    p = argparse.ArgumentParser(prog="python -m kiln demo", description=__doc__.split("\n")[0])
    p.add_argument("--epochs", type=int, default=25)
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--lr", type=float, default=2e-3)
    p.add_argument("--optimizer", default="adam", help="sgd, nag, adam or adamw")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--num-workers", type=int, default=0,
                   help="DataLoader worker processes (0 loads in the main process)")
    p.add_argument("--quiet", action="store_true", help="no progress bars")
    return p.parse_args(argv)


def seed_everything(seed):
    import kiln
    random.seed(seed)
    _onp.random.seed(seed)
    kiln.np.random.seed(seed)


def load_data(batch_size, num_workers=0):
    from kiln.gluon import data as gdata
    train = gdata.DataLoader(gdata.Digits(train=True), batch_size=batch_size, shuffle=True,
                             num_workers=num_workers)
    test = gdata.DataLoader(gdata.Digits(train=False), batch_size=256)
    return train, test


def build_model():
    from kiln import init
    from kiln.gluon import nn
    net = nn.HybridSequential()
    net.add(nn.Dense(128, activation="relu"), nn.Dense(64, activation="relu"), nn.Dense(10))
    net.initialize(init.Xavier())
    return net


def train_epoch(net, loader, loss_fn, trainer, desc=None, quiet=False):
    """One pass over `loader`; returns the mean training loss."""
    from kiln import autograd
    from kiln.utils.progress import progress
    total, count = 0.0, 0
    bar = progress(loader, desc=desc, disable=quiet, leave=False, unit="batch")
    for x, y in bar:
        with autograd.record():
            loss = loss_fn(net(x), y)
        loss.backward()
        trainer.step(x.shape[0])
        total += float(loss.sum())
        count += x.shape[0]
        bar.set_postfix(loss=total / count, refresh=False)
    return total / max(count, 1)


def evaluate(net, loader):
    """Classification accuracy of `net` on `loader`."""
    correct, count = 0, 0
    for x, y in loader:
        pred = net(x).argmax(axis=1).asnumpy()
        correct += int((pred == y.asnumpy()).sum())
        count += len(pred)
    return correct / max(count, 1)


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    from kiln.base import KilnError
    from kiln.gluon import Trainer, loss as gloss
    start = time.perf_counter()
    seed_everything(args.seed)
    try:
        train_loader, test_loader = load_data(args.batch_size, args.num_workers)
    except KilnError as exc:
        print(f"kiln demo: {exc}", file=sys.stderr)
        return 2
    net = build_model()
    loss_fn = gloss.SoftmaxCrossEntropyLoss()
    trainer = Trainer(net.collect_params(), args.optimizer, {"learning_rate": args.lr})
    print(f"kiln demo: MLP 64-128-64-10 on {len(train_loader._dataset)} digits, "
          f"{args.optimizer} lr={args.lr}, batch {args.batch_size}, {args.epochs} epochs")
    for epoch in range(1, args.epochs + 1):
        loss = train_epoch(net, train_loader, loss_fn, trainer,
                           desc=f"epoch {epoch}/{args.epochs}", quiet=args.quiet)
        print(f"epoch {epoch:3d}  loss {loss:.4f}", flush=True)
    accuracy = evaluate(net, test_loader)
    train_loader.close()
    elapsed = time.perf_counter() - start
    print(f"test accuracy {accuracy:.2%} on {len(test_loader._dataset)} held-out digits "
          f"({elapsed:.1f} s)")
    if accuracy < REQUIRED_ACCURACY:
        print(f"kiln demo: FAILED, accuracy below {REQUIRED_ACCURACY:.0%}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
