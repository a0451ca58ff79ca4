"""`nd._internal` and `sym._internal` (MXNet's modules of the operators whose names start
with an underscore: `_plus_scalar`, `_maximum`, `_copyto`, ...): the op table's entries by
those names; given Symbols they build nodes, given arrays they compute."""
from ..ops import OPS
from .functions import mx_function


def __getattr__(name):
    if name in OPS:
        return mx_function(name)
    raise AttributeError(f"module 'mx.nd._internal' has no attribute {name!r} (no MXNet op of "
                         f"that name in kiln/mx/ops)")
