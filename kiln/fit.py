"""A small training loop: compiled steps, a progress bar, per-epoch metrics.

    history = kiln.fit(net, train_loader, loss_fn, trainer, epochs=10, val_data=test_loader)

Each step (forward, backward, optimizer update) is compiled whole with kiln.hybridize, its
batch a run-time size: one native program serves every batch of an epoch, the last
smaller one included (static_shape=True compiles one per batch size instead). Pass
compiled=False to train eagerly with the same loop (for debugging, or to compare).

Under `mpiexec` (kiln.distributed) the loop is unchanged: the loss and accuracy are summed
over the ranks, and only rank 0 shows progress and logs.
"""
import time

from ._core import autograd
from .hybrid.cached import hybridize


# the batch axis of a step's data and labels: a run-time size from the first call on
BATCH_AXES = {0: {0: "batch"}, 1: {0: "batch"}}


def make_step(net, loss_fn, trainer, compiled=True, backend=None, static_shape=False):
    """step(x, y) -> per-sample loss; one optimizer update per call. Compiled, one
    program serves every batch size (a step whose code needs the batch's value, or a
    backend that cannot take it at run time, says why in kiln.programs(step) and
    specializes); static_shape=True: one program per batch size."""
    def step(x, y):
        with autograd.record():
            loss = loss_fn(net(x), y)
        loss.backward()
        trainer.step(x.shape[0])
        return loss
    # the step is kiln's code: the user is not told its side effects run only in tracing
    if not compiled:
        return step
    shapes = {"static_shape": True} if static_shape else {"dynamic_axes": BATCH_AXES}
    return hybridize(step, backend=backend, trace_warning=False, **shapes)


def accuracy(net, loader):
    """Top-1 classification accuracy of `net` over `loader` (over every rank's loader
    in a distributed job)."""
    from .distributed import sum_over_ranks
    correct, count = 0, 0
    for x, y in loader:
        pred = net(x).argmax(axis=1).asnumpy()
        correct += int((pred == y.asnumpy().reshape(pred.shape)).sum())
        count += len(pred)
    correct, count = sum_over_ranks(correct, count)
    return correct / max(count, 1)


def fit(net, train_data, loss_fn, trainer, epochs=1, val_data=None, compiled=True,
        backend=None, quiet=False, log=print, static_shape=False):
    """Train `net`; returns a list of per-epoch dicts (loss, seconds, and val accuracy)."""
    from .utils.progress import progress
    from .distributed import rank, sum_over_ranks
    if rank() != 0:
        quiet, log = True, None
    step = make_step(net, loss_fn, trainer, compiled=compiled, backend=backend,
                     static_shape=static_shape)
    history = []
    for epoch in range(1, epochs + 1):
        start = time.perf_counter()
        total, count = 0.0, 0
        bar = progress(train_data, desc=f"epoch {epoch}/{epochs}", disable=quiet, leave=False,
                       unit="batch")
        for x, y in bar:
            loss = step(x, y)
            total += float(loss.sum())
            count += x.shape[0]
            bar.set_postfix(loss=total / max(count, 1), refresh=False)
        total, count = sum_over_ranks(total, count)
        record = {"epoch": epoch, "loss": total / max(count, 1),
                  "seconds": time.perf_counter() - start}
        if val_data is not None:
            record["val_accuracy"] = accuracy(net, val_data)
        history.append(record)
        if log is not None:
            extra = (f"  val accuracy {record['val_accuracy']:.2%}"
                     if "val_accuracy" in record else "")
            log(f"epoch {epoch:3d}  loss {record['loss']:.4f}{extra}  "
                f"({record['seconds']:.2f} s)")
    return history
