"""mx.test_utils' test harness: environment variables for a block, retries of stochastic
tests, silenced stderr, facts about the machine (GPUs, architecture, CD runs), and
DummyIter, an iterator repeating one batch for speed tests."""
import contextlib
import functools
import os
import platform
import sys

from ...io.base import DataIter
from ..util import getenv, setenv  # noqa: F401  (MXNet's test_utils re-exports them)


class DummyIter(DataIter):
    """MXNet's iterator that gives the first batch of `real_iter` forever (never raises
    StopIteration)."""

    def __init__(self, real_iter):
        super().__init__()
        self.real_iter = real_iter
        self.provide_data = real_iter.provide_data
        self.provide_label = real_iter.provide_label
        self.batch_size = real_iter.batch_size
        self.the_batch = next(real_iter)

    def __iter__(self):
        return self

    def next(self):
        return self.the_batch


def list_gpus():
    """The ids of the GPUs: none (an empty range), as kiln runs on the CPU."""
    return range(0)


@contextlib.contextmanager
def environment(*args):
    """`with environment('NAME', 'value'):` or `environment({'A': '1', 'B': None})`: set
    (None: unset) environment variables for the block, then restore them."""
    changes = args[0] if len(args) == 1 and isinstance(args[0], dict) else {args[0]: args[1]}
    saved = {k: os.environ.get(k) for k in changes}
    try:
        for k, v in changes.items():
            setenv(k, v)
        yield
    finally:
        for k, v in saved.items():
            setenv(k, v)


def retry(n):
    """Decorator: run a stochastic test up to `n` times; it fails only when every run fails
    (an AssertionError; any other error propagates at once)."""
    if not isinstance(n, int) or n < 1:
        raise ValueError(f"retry: expected a positive number of runs, got {n!r}")

    def decorate(f):
        @functools.wraps(f)
        def wrapper(*args, **kwargs):
            for attempt in range(n):
                try:
                    return f(*args, **kwargs)
                except AssertionError:
                    if attempt == n - 1:
                        raise
        return wrapper
    return decorate


@contextlib.contextmanager
def discard_stderr():
    """`with discard_stderr():` sends file descriptor 2 (C code's output included) to the
    null device for the block."""
    try:
        fd = sys.stderr.fileno()
    except (AttributeError, OSError, ValueError):   # a stderr with no descriptor (pytest's)
        yield
        return
    sys.stderr.flush()
    saved = os.dup(fd)
    with open(os.devnull, "w") as bit_bucket:
        try:
            os.dup2(bit_bucket.fileno(), fd)
            yield
        finally:
            sys.stderr.flush()
            os.dup2(saved, fd)
            os.close(saved)


def is_cd_run():
    """Whether the tests run in MXNet's continuous-delivery job (CD_JOB=1)."""
    return os.environ.get("CD_JOB", 0) == "1"


def is_aarch64_run():
    """Whether the tests run on an aarch64 machine."""
    return platform.machine() == "aarch64"


def has_tvm_ops():
    """Whether TVM-generated operators are available: never in kiln."""
    return False


def is_op_runnable():
    """Whether TVM operators can run here: kiln has none, so only the CPU question is asked."""
    return True
