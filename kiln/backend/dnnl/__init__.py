"""The kernel layer for heavy ops (convolution, pooling): oneDNN through a small C shim.

library.py finds and loads oneDNN and the shim; ops.py makes and caches one op per shape.
Everything here is optional: when `available()` is false, callers use kiln's own kernels.
"""
from .library import available, disabled, unavailable_reason  # noqa: F401
