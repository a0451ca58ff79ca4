"""kiln: write a model imperatively, hybridize it, and run it as a compiled program."""
__version__ = "0.1.0"

from . import ops  # noqa: F401  (registers every primitive)
from .base import KilnError, MXNetError  # noqa: F401
from .context import Context, Device, cpu, gpu, cpu_pinned, num_gpus, current_context  # noqa
from . import np, autograd  # noqa: F401
from . import ndarray, symbol  # noqa: F401  (the `F` namespaces of hybrid_forward)
from . import init, gluon  # noqa: F401,E402
from .graph.cached import hybridize  # noqa: F401,E402
