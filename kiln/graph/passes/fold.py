"""Constant folding: evaluate, with the eager kernels, every node whose inputs are constants."""
import numpy as _np

from ...ops.registry import REGISTRY
from ..._core.ir import Node, rewrite
from ..._core.symdim import has_symbolic

# folding must not turn a cheap broadcast into a huge baked array
MAX_FOLDED_ELEMENTS = 1 << 20


def fold_constants(graph):
    def replace(node, inputs):
        if node.is_source or not inputs and node.op != "full":
            return None
        prim = REGISTRY[node.op]
        if prim.random or not all(i.op == "const" for i in inputs):
            return None
        if has_symbolic(node.shape) or node.size > MAX_FOLDED_ELEMENTS:
            return None     # a value of a run-time size is made per call
        value = _np.asarray(prim.impl(*[i.value for i in inputs], **node.attrs))
        if value.dtype != node.dtype:
            value = value.astype(node.dtype)
        # (not ascontiguousarray: it turns a 0-d value into shape (1,))
        value = _np.array(value, order="C", copy=not value.flags.c_contiguous)
        value.setflags(write=False)
        return Node("const", (), {}, node.shape, node.dtype, name=node.name, value=value)
    return rewrite(graph, replace)
