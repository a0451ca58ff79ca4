"""kiln: write a model imperatively, hybridize it, and run it as a compiled program.

This module is a face: the names users reach as `kiln.X`. The code lives in the packages
(ARCHITECTURE.md has the map); `kiln.nd`, `kiln.image`, `kiln.autograd` and the other
public module paths whose files live in a package resolve through kiln/mx/alias.py.
"""
from ._version import __version__  # noqa: F401

from . import ops  # noqa: F401  (registers every primitive)
from . import backend  # noqa: F401  (registers eager kernels and the subgraph runner into ops)
from ._core.base import KilnError, MXNetError  # noqa: F401
from ._core.context import Context, Device, cpu, gpu, cpu_pinned, num_gpus, current_context  # noqa
from ._core import autograd  # noqa: F401
from . import np, npx  # noqa: F401
from .np import random  # noqa: F401  (mx.random.seed / mx.random.uniform)
from . import init, gluon, optimizer  # noqa: F401
from .optimizer import lr_scheduler  # noqa: F401
from .hybrid.cached import hybridize  # noqa: F401
from .hybrid.explain import explain  # noqa: F401
from .hybrid.programs import programs  # noqa: F401
from .fit import fit  # noqa: F401
from . import distributed  # noqa: F401  (MPI only when launched under mpiexec)
from .gluon import trainer as _trainer  # noqa: F401,E402  (sets distributed.DistributedTrainer)
# MXNet 1.x's namespaces, and the `F` of hybrid_forward (kiln/mx: nothing below imports it)
from .mx import nd, sym, alias as _alias  # noqa: E402
ndarray, symbol = nd, sym
_alias.install_paths()


def _install_array_cache():
    # large freed NumPy blocks are kept for the next array of their size (eager CNN steps
    # make the same big arrays every step; see kiln/backend/c/array_cache.py)
    import os
    if os.environ.get("KILN_ARRAY_CACHE", "1") != "0":
        from .backend.c import array_cache
        array_cache.install()


_install_array_cache()


def __getattr__(name):
    # public modules load on first use: kiln.io, and the faces of modules that live in a
    # package (kiln.onnx, kiln.image, kiln.base, kiln.metric, ...: kiln/mx/alias.py)
    import importlib
    if name == "io" or f"kiln.{name}" in _alias.FACES or f"kiln.{name}" in _alias.MOVED:
        return importlib.import_module(f"kiln.{name}")
    raise AttributeError(f"module 'kiln' has no attribute {name!r}")
