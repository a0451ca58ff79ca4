"""The C backend: generated native code for optimized graphs.

Importing the package registers every op's C lowering (lowering.py lists them), as
importing kiln.ops registers every primitive.
"""
from . import (  # noqa: F401
    attention,
    batchnorm,
    codegen,
    collective,
    control,
    elementwise,
    heavy,
    int8,
    kernels,
    lowp,
    normalization,
    scan,
    slice_views,
    special_ops,
)
