"""Never a silent hang: how a failure on one rank ends the whole job.

- An uncaught exception on any rank prints its traceback, then MPI_Abort ends every rank
  (the other ranks would otherwise wait forever in their next collective).
- A killed rank: the launcher (Hydra, Open MPI's mpirun, Slurm) ends the job.
- A rank that stops taking part without dying (stuck, or caught in a `try`): every
  collective kiln runs is nonblocking and polled against a deadline, KILN_DIST_TIMEOUT
  seconds (default 300); past it the waiting rank names the collective and aborts the job.
  The compiled step's allreduce does the same in C (kiln/distributed/lowering.py).
"""
import os
import sys
import threading
import time

from .._core.base import KilnError

DEFAULT_TIMEOUT = 300.0
ABORT_CODE = 70
# A waiting rank polls MPI without pause this long before it starts yielding its core.
# The peers of a step arrive within a fraction of a millisecond of each other; yielding
# sooner hands the core to any other runnable process for a whole time slice (milliseconds),
# which on a loaded machine cost more than the allreduce itself. Ranks that outnumber the
# cores still get to run: past this, every poll yields.
SPIN_SECONDS = 0.002


def timeout():
    """Seconds a collective may wait for the other ranks before the job is aborted."""
    raw = os.environ.get("KILN_DIST_TIMEOUT", "")
    if not raw:
        return DEFAULT_TIMEOUT
    try:
        value = float(raw)
    except ValueError:
        raise KilnError(f"KILN_DIST_TIMEOUT must be a number of seconds, got {raw!r}") from None
    if value <= 0:
        raise KilnError(f"KILN_DIST_TIMEOUT must be positive, got {raw!r}")
    return value


_comm = []


def install(comm):
    """Abort the whole job on an uncaught exception in this rank."""
    _comm[:] = [comm]
    previous = sys.excepthook

    def abort_on_exception(kind, value, tb):
        previous(kind, value, tb)
        abort(f"uncaught {kind.__name__} (traceback above)")
    def abort_on_thread_exception(args):
        sys.__excepthook__(args.exc_type, args.exc_value, args.exc_traceback)
        abort(f"uncaught {args.exc_type.__name__} in thread {args.thread.name}")
    sys.excepthook = abort_on_exception
    threading.excepthook = abort_on_thread_exception


def abort(reason):
    """Print why on stderr, then end every rank of the job with a non-zero exit code."""
    rank = _comm[0].Get_rank() if _comm else 0
    sys.stderr.write(f"kiln.distributed: rank {rank}: {reason}; aborting all ranks\n")
    sys.stderr.flush()
    sys.stdout.flush()
    if _comm:
        # MPI_Abort asks the launcher to end everyone; if the launcher is gone too, exit alone
        killer = threading.Timer(5.0, os._exit, (ABORT_CODE,))
        killer.daemon = True
        killer.start()
        _comm[0].Abort(ABORT_CODE)
    os._exit(ABORT_CODE)


def wait(request, what):
    """Wait for a nonblocking MPI request, aborting the job past the timeout."""
    limit = timeout()
    start = time.monotonic()
    polls, waited = 0, 0.0
    while not request.Test():
        polls += 1
        if polls % 16 == 0:
            waited = time.monotonic() - start
            if waited > limit:
                abort(f"{what} waited {waited:.0f} s for the other ranks (KILN_DIST_TIMEOUT="
                      f"{limit:g}): another rank has failed, exited or is stuck")
        if waited > 0.1:     # a long wait (a slow rank, a checkpoint): stop spinning
            time.sleep(0.0005)
        elif waited > SPIN_SECONDS:     # the peers may share these cores: let them run
            os.sched_yield()
