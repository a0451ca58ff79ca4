"""The C lowering of `slice`. A slice whose items lie contiguously in its input (a range
of rows, one row of a matrix, a block of a flat buffer) costs nothing in generated C: its
step ('window') sets its own table entry to a pointer into the input, and its readers
read there. A scan's results, packed into one flat buffer and sliced apart
(ops/scan.py), and the rows of a sequence are such windows. Any other slice copies
(slice_), unless the elementwise loop that reads it reads its input where its items lie
(slice_layout; graph/passes/fuse.py).

The memory plan treats a window as a view of its input (graph/passes/memory.py): the
input's buffer lives while the window is read, and no step writes in place over a
window. A slice that is a graph output stays a copy (outputs are read from buffers and
parameters, never from pointers the program sets), and so does one an output reshapes."""
from ..._core.symdim import provably
from .kernels import _copy, _slice_geometry
from .loops import contiguous_strides
from .lowering import Kernel, register


def slice_layout(node):
    """(element offset, strides) at which a slice node's items lie in its input."""
    x = node.inputs[0]
    xs = contiguous_strides(x.shape)
    starts, _ = _slice_geometry(x.shape, node.attrs)
    base = sum(b * s for b, s in zip(starts, xs))
    return base, [s * st for s, st in zip(xs, node.attrs["step"])]


def slice_(node, ptr, em=None):
    """The copy (a job of the runtime's pool when large: kernels._copy)."""
    base, strides = slice_layout(node)
    return _copy(node, ptr, node.inputs[0], strides, base, em)


def viewed(node):
    """The values `node` may be a view of in generated C, nearest first: through slices
    (windows), reshapes and transposes (aliases) to the value whose buffer holds it."""
    out = []
    while node.op in ("slice", "reshape", "transpose"):
        node = node.inputs[0]
        out.append(node)
    return out


def window_offset(node):
    """The element offset in its input of a slice node whose items lie there contiguously
    and in order, else None: leading axes of one item, then one axis of step 1, then
    axes taken whole in order."""
    x = node.inputs[0]
    starts, lengths = _slice_geometry(x.shape, node.attrs)
    steps = node.attrs["step"]
    axis = 0
    while axis < x.ndim and provably(lengths[axis], "==", 1):
        axis += 1
    if axis < x.ndim and steps[axis] != 1:
        return None
    for a in range(axis + 1, x.ndim):
        whole = provably(starts[a], "==", 0) and provably(lengths[a], "==", x.shape[a])
        if not (whole and (steps[a] == 1 or provably(lengths[a], "==", 1))):
            return None
    return sum(b * s for b, s in zip(starts, contiguous_strides(x.shape)))


def _reaches_output(node, users, outputs):
    """Is node a graph output, or read by one through reshapes (aliases of its storage)?"""
    if id(node) in outputs:
        return True
    return any(u.op == "reshape" and _reaches_output(u, users, outputs)
               for u in users.get(id(node), ()))


def read_in_place(node, users, outputs):
    return not _reaches_output(node, users, outputs) and window_offset(node) is not None


register(("slice",), Kernel(slice_, with_emitter=True, view_when=read_in_place, view_kind="window"))
