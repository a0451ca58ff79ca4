"""kiln: write a model imperatively, hybridize it, and run it as a compiled program."""
__version__ = "0.1.0"

from . import ops  # noqa: F401  (registers every primitive)
from .base import KilnError, MXNetError  # noqa: F401
from .context import Context, Device, cpu, gpu, cpu_pinned, num_gpus, current_context  # noqa
from . import np, npx, autograd  # noqa: F401
from .np import random  # noqa: F401  (mx.random.seed / mx.random.uniform)
from . import ndarray, symbol  # noqa: F401  (the `F` namespaces of hybrid_forward)
from . import ndarray as nd, symbol as sym  # noqa: F401,E402  (MXNet 1.x's names)
from . import init, gluon, optimizer, lr_scheduler  # noqa: F401,E402
from .graph.cached import hybridize  # noqa: F401,E402
from .graph.explain import explain  # noqa: F401,E402
from .fit import fit  # noqa: F401,E402
from . import distributed  # noqa: F401,E402  (MPI only when launched under mpiexec)


def _install_array_cache():
    # large freed NumPy blocks are kept for the next array of their size (eager CNN steps
    # make the same big arrays every step; see kiln/backend/c/array_cache.py)
    import os
    if os.environ.get("KILN_ARRAY_CACHE", "1") != "0":
        from .backend.c import array_cache
        array_cache.install()


_install_array_cache()


def __getattr__(name):
    # optional-dependency modules load on first use: kiln.onnx (onnx), kiln.image (Pillow)
    if name in ("onnx", "image", "mod", "io", "model", "callback"):
        import importlib
        return importlib.import_module("." + name, __name__)
    raise AttributeError(f"module 'kiln' has no attribute {name!r}")
