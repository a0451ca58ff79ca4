"""Which process this is, and the MPI communicator when there are several.

kiln uses MPI (through mpi4py) only when the process was started by an MPI launcher
(`mpiexec -n N python train.py`, `srun`, an MPI operator) with more than one process, or
when KILN_DIST=mpi forces it. Otherwise there is one process, `size()` is 1, and mpi4py is
never imported, so kiln works the same without the `dist` extra.
"""
import os

from .._core.base import KilnError

# environment variables by which launchers announce the job size: MPICH/Intel MPI (Hydra,
# PMI), Open MPI, MVAPICH
_SIZE_VARS = ("PMI_SIZE", "OMPI_COMM_WORLD_SIZE", "MV2_COMM_WORLD_SIZE")


class _State:
    comm = None          # mpi4py COMM_WORLD when distributed
    node = None          # the ranks on this machine (they can share memory)
    MPI = None           # the mpi4py.MPI module when distributed
    rank = 0
    size = 1
    local_rank = 0
    initialized = False


def launched_size():
    """The process count a launcher announced in the environment (1 when none did)."""
    for var in _SIZE_VARS:
        value = os.environ.get(var)
        if value and value.isdigit():
            return int(value)
    return 1


def _import_mpi():
    try:
        from mpi4py import MPI
    except ImportError as e:
        raise KilnError(
            "kiln.distributed: this process was started by an MPI launcher with "
            f"{launched_size()} processes, but mpi4py cannot be imported ({e}). Install the "
            "extra: pip install 'kiln[dist]' (mpi4py and an MPI library)") from None
    return MPI


def init():
    """Join the MPI job if there is one; safe to call more than once. Returns size()."""
    if _State.initialized:
        return _State.size
    forced = os.environ.get("KILN_DIST", "").lower() == "mpi"
    if forced or launched_size() > 1:
        MPI = _import_mpi()
        comm = MPI.COMM_WORLD
        _State.MPI, _State.comm = MPI, comm
        _State.rank, _State.size = comm.Get_rank(), comm.Get_size()
        _State.node = comm.Split_type(MPI.COMM_TYPE_SHARED, key=_State.rank)
        _State.local_rank = _State.node.Get_rank()
        # an MPI error returns to Python as an exception (then the abort hook below)
        # instead of MPICH's default of printing and exiting this rank alone
        comm.Set_errhandler(MPI.ERRORS_RETURN)
        if _State.size > 1:
            from . import faults
            faults.install(comm)
    _State.initialized = True
    return _State.size


def rank():
    """This process's rank in the MPI job (0 without MPI); starts MPI on first use."""
    init()
    return _State.rank


def size():
    """The number of processes in the MPI job (1 without MPI); starts MPI on first use."""
    init()
    return _State.size


def local_rank():
    """This process's rank among the ranks on the same machine (0 without MPI)."""
    init()
    return _State.local_rank


def is_distributed():
    """Whether the job has more than one process."""
    return size() > 1


def node():
    """The communicator of the ranks on this machine; an error with one process."""
    world()
    return _State.node


def world():
    """(mpi4py.MPI, COMM_WORLD) of a distributed job; an error with one process."""
    if size() == 1:
        raise KilnError("kiln.distributed: not running under MPI with several processes")
    return _State.MPI, _State.comm
