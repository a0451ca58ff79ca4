"""These tests run under MPI: `mpiexec -n 2 python -m pytest tests/distributed/ranks`
(tests/distributed/test_distributed_mpi.py launches that from the default suite). In a plain
pytest run there is nothing to test here, so nothing is collected."""
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))

from kiln.distributed.comm import launched_size  # noqa: E402

if launched_size() < 2:
    collect_ignore_glob = ["test_*.py"]
