"""mx.kv.create('dist_sync') over two MPI ranks (skipped without the `dist` extra): init
takes rank 0's value, push sums over devices and ranks, set_optimizer updates identically."""
import os
import subprocess

import pytest

from kiln.distributed import launch
from paths import ROOT

pytestmark = pytest.mark.skipif(not launch.available(),
                                reason="needs mpi4py and mpiexec: pip install 'kiln[dist]'")



def test_dist_sync_kvstore_sums_over_ranks():
    worker = os.path.join(ROOT, "tests", "distributed", "kvstore_worker.py")
    env = dict(os.environ, PYTHONPATH=ROOT, KILN_DIST_TIMEOUT="60")
    done = subprocess.run(launch.command(2, [worker]), capture_output=True, text=True,
                          env=env, timeout=300, cwd=ROOT)
    out = done.stdout + done.stderr
    assert done.returncode == 0, out[-3000:]
    assert "rank 0: kvstore ok" in out and "rank 1: kvstore ok" in out, out[-3000:]
