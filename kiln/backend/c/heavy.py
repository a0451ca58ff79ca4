"""Heavy ops (conv, pool and their gradients) in generated C: calls into the oneDNN shim.

Each call site owns its shim op, made when the program is built (so primitives are
created once per program and shape). Weights are reordered into oneDNN's layout once and
reused while kiln's write counter (kiln/_core/writes.py) and the weight's address are unchanged:
the generated code passes `count + 1` as the weight's stamp, the shim reorders again only
when the stamp or the pointer moved. A parameter the program itself writes gets no stamp.
`emit` is registered as the C lowering of OPS (lowering.Heavy), for the nodes `lowerable`
takes.
"""
import ctypes
import weakref

import numpy as _np

from ..._core.base import KilnError
from . import fixed_source
from .lowering import Heavy, register
from ...ops.registry import REGISTRY

OPS = ("conv", "conv_bias", "conv_grad_data", "conv_grad_weight", "pool", "pool_grad")

DNNL_FAILED = -70       # kiln_run's return code when a oneDNN call fails


def lowerable(node):
    if node.op not in OPS:      # a heavy op of another module's (lowp.py): its own test
        low = REGISTRY[node.op].lowerings.get("c")
        return isinstance(low, Heavy) and low.accepts(node)
    if node.dtype != _np.float32:
        return False
    if any(i.dtype != _np.float32 for i in node.inputs):
        return False
    from .. import dnnl
    from ..dnnl.ops import spatial_ok
    return spatial_ok(node.attrs["stride"]) and dnnl.available()


def _pool_key(x, attrs):
    return (id(x), attrs["kind"], attrs["kernel"], attrs["stride"], attrs["pad"],
            bool(attrs.get("channels_last")))


def pair_max_pools(em, nodes):
    """Share oneDNN's workspace between a max pool and the later gradients of the same
    pooling, so that a training step does not run the forward pass again for each
    gradient. nodes: the heavy nodes of one graph, in the order they run. Records on `em`
    the buffer slot each paired node reads or writes."""
    shared = em.__dict__.setdefault("pool_workspaces", {})
    first = {}
    for node in nodes:
        if node.op not in ("pool", "pool_grad") or node.attrs["kind"] != "max":
            continue
        x = node.inputs[0] if node.op == "pool" else node.inputs[1]
        key = _pool_key(x, node.attrs)
        if node.op == "pool":
            first.setdefault(key, node)
        elif key in first:
            pool = first[key]
            if id(pool) not in shared:
                shared[id(pool)] = em.new_buffer(max(_workspace_bytes(
                    _pool_maker(1, pool.inputs[0], pool.shape, pool.attrs)), 64))
            shared[id(node)] = shared[id(pool)]


def _nchw(shape, attrs):
    """An activation's dims as the shim takes them (NCHW order, whatever the layout)."""
    from ..dnnl.ops import channels_first
    return channels_first(shape) if attrs.get("channels_last") else tuple(shape)


def _pool_maker(which, x, y_shape, attrs):
    from ..dnnl import ops
    geo = (attrs["kernel"], attrs["stride"], attrs["pad"])
    xs, ys, last = _nchw(x.shape, attrs), _nchw(y_shape, attrs), bool(attrs.get("channels_last"))
    return lambda lib: ops.make_pool(lib, which, attrs["kind"], xs, ys, *geo,
                                     channels_last=last)


def _makers(node, workspace=None):
    """[(maker, argument nodes or workspace sizes)] for the shim calls of one node;
    workspace: the buffer slot of a workspace shared with the node's partner
    (pair_max_pools)."""
    from ..dnnl import ops
    a = node.attrs
    if node.op == "conv_bias":
        x, w, b = node.inputs
        geo = (a["stride"], a["dilation"], a["pad"], a.get("groups", 1))
        shapes = (0, _nchw(x.shape, a), w.shape, _nchw(node.shape, a))
        flags = dict(channels_last=bool(a.get("channels_last")), bias=True,
                     relu=bool(a.get("relu")))
        return [(lambda lib: ops.make_conv(lib, *shapes, *geo, **flags), [x, w, b, node])]
    if node.op in ("conv", "conv_grad_data", "conv_grad_weight"):
        geo = (a["stride"], a["dilation"], a["pad"], a.get("groups", 1))
        first, second = node.inputs
        if node.op == "conv":
            shapes = (0, _nchw(first.shape, a), second.shape, _nchw(node.shape, a))
        elif node.op == "conv_grad_data":
            shapes = (1, _nchw(node.shape, a), second.shape, _nchw(first.shape, a))
        else:
            shapes = (2, _nchw(first.shape, a), node.shape, _nchw(second.shape, a))
        last = bool(a.get("channels_last"))
        return [(lambda lib: ops.make_conv(lib, *shapes, *geo, channels_last=last),
                 [first, second, node])]
    kind = a["kind"]
    if node.op == "pool":
        x = node.inputs[0]
        if workspace is not None:
            return [(_pool_maker(1, x, node.shape, a), [x, node, ("shared", workspace)])]
        return [(_pool_maker(0, x, node.shape, a), [x, node])]
    g, x = node.inputs
    if workspace is not None:
        return [(_pool_maker(2, x, g.shape, a), [g, ("shared", workspace), node])]
    if kind != "max":
        return [(_pool_maker(2, x, g.shape, a), [g, node])]
    # max: the forward pass again, keeping where each maximum was, then the backward
    fwd, bwd = _pool_maker(1, x, g.shape, a), _pool_maker(2, x, g.shape, a)
    return [(fwd, [x, ("scratch", g.size * 4), ("workspace", fwd)]),
            (bwd, [g, ("workspace", fwd), node])]


def _workspace_bytes(make):
    from ..dnnl.library import shim
    lib = shim()
    op = _new(lib, make)
    try:
        return int(lib.kd_arg_size(op, 2))
    finally:
        lib.kd_free(op)


def _new(lib, make):
    op = make(lib)
    if not op:
        raise KilnError(f"C backend: oneDNN could not make a kernel: {lib.kd_error().decode()}; "
                        "set KILN_DNNL=0 to use kiln's own kernels")
    return op


def emit(em, node, storage, weight_ok):
    """C statements for one heavy node. weight_ok(input node): may its reordered copy be
    kept between calls (a parameter the program does not write)?"""
    lines, extra = [], {}
    workspace = em.__dict__.get("pool_workspaces", {}).get(id(node))
    for make, args in _makers(node, workspace):
        slots, stamps = [], []
        for arg in args:
            if isinstance(arg, tuple) and arg[0] == "shared":
                slots.append(f"P[{arg[1]}]")
                stamps.append("0")
            elif isinstance(arg, tuple):
                if id(arg[1]) not in extra:
                    size = arg[1] if arg[0] == "scratch" else _workspace_bytes(arg[1])
                    extra[id(arg[1])] = em.new_buffer(max(size, 64))
                slots.append(f"P[{extra[id(arg[1])]}]")
                stamps.append("0")
            else:
                slots.append(f"P[{storage(arg)}]")
                stamps.append("kiln_weight_stamp()" if arg is not node and weight_ok(arg)
                              else "0")
        op = em.add_slot(("dnnl_op", make))
        lines += ["  {", f"    void *a[{len(slots)}] = {{{', '.join(slots)}}};",
                  f"    int64_t s[{len(slots)}] = {{{', '.join(stamps)}}};",
                  f"    if (kiln_dnnl_run(P[{op}], a, s) != 0) return {DNNL_FAILED};", "  }"]
    return "\n".join(lines)


register(OPS, Heavy(emit, accepts=lowerable))


def prelude():
    """What a program with heavy ops declares first, csrc/heavy.h: the shim's run function
    and write count (set by kiln_set_dnnl after loading), and the weight stamp."""
    return fixed_source.text("heavy.h")


def uses_heavy(slots):
    return any(entry[0] in ("dnnl_op", "dnnl_rows") for entry in slots)


def bind(lib, program):
    """Point a loaded program at the shim and kiln's write counter."""
    from ..dnnl.library import shim
    from ..._core import writes
    sh = shim()
    counter = writes.counter()
    lib.kiln_set_dnnl.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
    lib.kiln_set_dnnl(ctypes.cast(sh.kd_run, ctypes.c_void_p),
                      ctypes.addressof(counter) if counter is not None else None)
    if hasattr(lib, "kiln_set_dnnl_rows"):      # Dense layers of run-time rows
        lib.kiln_set_dnnl_rows.argtypes = [ctypes.c_void_p]
        lib.kiln_set_dnnl_rows(ctypes.cast(sh.kd_matmul_rows_op, ctypes.c_void_p))


def new_op(make, program):
    """The shim op for one call site, freed with the program."""
    from ..dnnl.library import shim
    lib = shim()
    op = _new(lib, make)
    weakref.finalize(program, lib.kd_free, op)
    return op
