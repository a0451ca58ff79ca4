"""Two processes under mpiexec (skipped without mpi4py and a launcher: the `dist` extra).

- tests/distributed/ranks/ (equivalence with one process, BatchNorm) run under `mpiexec -n 2`;
- a rank that is killed, raises, or hangs ends the job non-zero with a message within 30 s;
- a checkpoint written by rank 0 and loaded by a restarted job continues the run exactly;
- kiln.fit on every rank prints no KilnTraceWarning about kiln's own compiled step.
"""
import os
import subprocess
import time

import numpy as onp
import pytest

from kiln.backend.c import build as c_build
from kiln.distributed import launch
from paths import ROOT

pytestmark = pytest.mark.skipif(not launch.available(),
                                reason="needs mpi4py and mpiexec: pip install 'kiln[dist]'")

WORKERS = os.path.join(ROOT, "tests", "distributed", "ranks")


def _mpiexec(argv, timeout, cwd=WORKERS, **env):
    full = dict(os.environ, PYTHONPATH=ROOT, KILN_DIST_TIMEOUT="60")
    full.update(env)
    start = time.monotonic()
    done = subprocess.run(launch.command(2, argv), capture_output=True, text=True, cwd=cwd,
                          env=full, timeout=timeout)
    return done, time.monotonic() - start


def test_distributed_suite_under_mpiexec():
    done, _ = _mpiexec(["-m", "pytest", "-q", "-p", "no:cacheprovider", WORKERS],
                       timeout=600, cwd=ROOT)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    assert done.stdout.count(" passed") == 2, done.stdout[-2000:]   # one summary per rank


@pytest.mark.parametrize("how,mode,message", [
    ("kill", "compiled", "signal 9"),                       # the launcher ends the job
    ("raise", "eager", "rank 1: uncaught RuntimeError"),    # excepthook -> MPI_Abort
    ("stuck", "compiled", "rank 0: allreduce in a compiled step waited"),  # C deadline
    ("stuck", "eager", "rank 0: allreduce waited"),         # Python deadline
])
def test_a_failing_rank_ends_the_job_with_a_message(how, mode, message):
    if "compiled step" in message and not c_build.available():
        pytest.skip("no working C compiler: the C deadline is not in play")
    done, seconds = _mpiexec(["fault_worker.py", how, mode], timeout=120,
                             KILN_DIST_TIMEOUT="5")
    out = done.stdout + done.stderr
    assert "injecting fault" in out
    assert done.returncode != 0, out[-3000:]
    assert message in out, out[-3000:]
    assert "finished without noticing" not in out
    assert seconds < 30, f"took {seconds:.1f} s"


def test_resume_from_a_rank0_checkpoint_equals_an_uninterrupted_run(tmp_path):
    d = str(tmp_path)
    for what, steps in [("full", 14), ("first", 7), ("second", 7)]:
        done, _ = _mpiexec(["resume_worker.py", d, what, str(steps)], timeout=300)
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    full = onp.load(os.path.join(d, "full.params"))
    resumed = onp.load(os.path.join(d, "resumed.params"))
    assert sorted(full.files) == sorted(resumed.files)
    for k in full.files:
        # the same programs on the same data and state: bit for bit
        onp.testing.assert_array_equal(resumed[k], full[k], err_msg=k)


def test_fit_on_every_rank_gives_no_trace_warning():
    done, _ = _mpiexec(["fit_worker.py"], timeout=300)
    out = done.stdout + done.stderr
    assert done.returncode == 0, out[-3000:]
    assert "rank 0: trained" in out and "rank 1: trained" in out, out[-3000:]
    assert "KilnTraceWarning" not in out, out[-3000:]
