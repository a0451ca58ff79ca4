"""The op registry and every primitive. Importing this package registers them all."""
from .registry import REGISTRY, Primitive, register, get  # noqa: F401
from . import elementwise, reduce, shape, linalg, creation, window, conv, pool  # noqa: F401
from . import batchnorm, conv_bias, attention, normalization  # noqa: F401
from . import special, random_gamma  # noqa: F401  (gammaln, erfinv, bitwise; gamma, poisson)
from . import control, scan  # noqa: F401  (cond, while_loop, scan: ops with subgraphs)
from . import collective  # noqa: F401  (allreduce across the ranks of a job)
from . import lowp  # noqa: F401  (matmul_bf16: what mixed precision puts in a graph)
from . import quantized  # noqa: F401  (int8 dense and conv: what quantization puts there)
