"""Name lookup in MXNet 1.x's NDArray namespace (`nd.X`, and the `F.X` of hybrid_forward):
the functions of functions.py, then the sub-namespaces (random, contrib, linalg, ...) and
their flat 1.x names (`random_normal`, `linalg_gemm2`, ...), then the MXNet op table as
functions (kiln/mx/ops). The sub-namespaces load on first use."""
import importlib

from ..ops import OPS
from . import binary, functions
from .functions import mx_function
from .legacy_array import NDArray


def lookup(name):
    """An nd-namespace name, or None (the caller then tries npx and np)."""
    if name == "random":
        from . import random as nd_random
        return nd_random
    if name == "contrib":
        from . import contrib as nd_contrib
        return nd_contrib
    if name == "image":     # imported by path: `from . import` would ask the package first
        return importlib.import_module(f"{__package__}.image")
    if name == "_internal":
        return importlib.import_module(f"{__package__}.internal")
    if name in _PUBLIC:
        return _PUBLIC[name]
    if name == "NDArray":
        return NDArray
    if name in binary.NAMES:
        return binary.FUNCTIONS[name]
    if name == "linalg" or name.startswith("linalg_"):
        from . import linalg as nd_linalg
        return nd_linalg if name == "linalg" else getattr(nd_linalg, name[7:], None)
    if name.startswith("random_pdf_"):
        from .random import pdf as nd_random_pdf
        return getattr(nd_random_pdf, name, None)
    if name.startswith(("random_", "sample_")) or name in ("uniform", "normal"):
        from .random.samplers import FLAT
        if name in FLAT:
            return FLAT[name]
    if name == "shuffle":
        from .random import shuffle
        return shuffle
    if "_update" in name or name == "multi_lars":
        from . import optimizer_ops as nd_optimizer_ops
        if name in nd_optimizer_ops.NAMES and name not in nd_optimizer_ops.CONTRIB:
            return getattr(nd_optimizer_ops, name)
    if name in ("numpy", "numpy_extension"):        # mx.nd.numpy: the np functions
        from ... import np as _knp, npx as _knpx
        return _knp if name == "numpy" else _knpx
    from . import utils as nd_extras
    if name in nd_extras.NAMES:
        return getattr(nd_extras, name)
    if name in OPS and not name.startswith("_"):
        return mx_function(name)
    return None


_PUBLIC = {n: getattr(functions, n) for n in ("array zeros ones empty full arange "
                                              "zeros_like ones_like waitall save load concat"
                                              ).split()}


_OP_PREFIXES = (("_linalg_", "linalg"), ("linalg_", "linalg"), ("_contrib_", "contrib"),
                ("_image_", "image"))


def resolve_op(name):
    """The nd function computing MXNet op `name` when it is not in the op table
    (`_linalg_gemm2` is nd.linalg.gemm2), or None; kiln/mx/ops/table.py asks here."""
    for prefix, space_name in _OP_PREFIXES:
        if name.startswith(prefix):
            space = lookup(space_name)
            fn = getattr(space, name[len(prefix):], None) if space is not None else None
            return fn if callable(fn) and not isinstance(fn, type) else None
    return None
