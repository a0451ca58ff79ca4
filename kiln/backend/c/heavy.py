"""Heavy ops (conv, pool and their gradients) in generated C: calls into the oneDNN shim.
Mixed precision's convolutions too (conv_bf16, with or without a bias, and conv_grad_*
with bf16): the same calls with the shim's bfloat16 flag.

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
from ..dnnl import lowp as dnnl_lowp
from .sizes import is_runtime
from ...ops.registry import REGISTRY

OPS = ("conv", "conv_bf16", "conv_bias", "conv_grad_data", "conv_grad_weight", "pool",
       "pool_grad")
# the ISAs on which oneDNN runs bfloat16 convolutions with its own kernels (natively, or
# emulated on AVX-512): elsewhere a bfloat16 conv runs its decomposition (the same values)
BF16_ISAS = ("avx512_core", "avx512_core_vnni", "avx512_core_bf16", "avx512_core_fp16",
             "avx512_core_amx", "avx512_core_amx_fp16")

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
    if not (spatial_ok(node.attrs["stride"]) and dnnl.available()):
        return False
    return not _bf16(node) or dnnl_lowp.isa() in BF16_ISAS


def _bf16(node):
    """Does the node compute its products in bfloat16 (mixed precision)?"""
    return node.op == "conv_bf16" or bool(node.attrs.get("bf16"))


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
    if node.op == "conv_bias" or (node.op == "conv_bf16" and len(node.inputs) == 3):
        x, w, b = node.inputs
        geo = (a["stride"], a["dilation"], a["pad"], a.get("groups", 1))
        shapes = (0, _nchw(x.shape, a), w.shape, _nchw(node.shape, a))
        flags = dict(channels_last=bool(a.get("channels_last")), bias=True,
                     relu=bool(a.get("relu")), bf16=_bf16(node))
        return [(lambda lib: ops.make_conv(lib, *shapes, *geo, **flags), [x, w, b, node])]
    if node.op in ("conv", "conv_bf16", "conv_grad_data", "conv_grad_weight"):
        geo = (a["stride"], a["dilation"], a["pad"], a.get("groups", 1))
        first, second = node.inputs
        if node.op in ("conv", "conv_bf16"):
            shapes = (0, _nchw(first.shape, a), second.shape, _nchw(node.shape, a))
        elif node.op == "conv_grad_data":
            shapes = (1, _nchw(node.shape, a), second.shape, _nchw(first.shape, a))
        else:
            shapes = (2, _nchw(first.shape, a), node.shape, _nchw(second.shape, a))
        last, bf16 = bool(a.get("channels_last")), _bf16(node)
        return [(lambda lib: ops.make_conv(lib, *shapes, *geo, channels_last=last, bf16=bf16),
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
    if any(is_runtime(d) for n in (node,) + node.inputs for d in n.shape):
        code = _emit_batch(em, node, storage, weight_ok)
        if code is not None:
            return code
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
        op = op_slot(em, make, node)
        lines += ["  {", f"    void *a[{len(slots)}] = {{{', '.join(slots)}}};",
                  f"    int64_t s[{len(slots)}] = {{{', '.join(stamps)}}};",
                  f"    if (kiln_dnnl_run(P[{op}], a, s) != 0) return {DNNL_FAILED};", "  }"]
    return "\n".join(lines)


def _batch_args(node):
    """The shim's arguments of a convolution or pooling (forward, no workspace) whose batch
    is its only run-time size, the batch left 0; else None."""
    from ..dnnl import ops
    a = node.attrs
    if node.op not in ("conv", "conv_bias", "pool"):
        return None
    x = node.inputs[0]
    xs, ys = _nchw(x.shape, a), _nchw(node.shape, a)
    if xs[0] is not ys[0] and xs[0] != ys[0] or any(
            is_runtime(d) for d in xs[1:] + ys[1:] + sum((i.shape for i in node.inputs[1:]),
                                                          ())):
        return None
    xs, ys = (0,) + tuple(int(d) for d in xs[1:]), (0,) + tuple(int(d) for d in ys[1:])
    last = ops.CHANNELS_LAST if a.get("channels_last") else 0
    lo, hi = a["pad"][0::2], a["pad"][1::2]
    if node.op == "pool":
        return ("pool", 0, ops.POOL_KINDS[a["kind"]], len(a["kernel"]), xs, ys, a["kernel"],
                a["stride"], lo, hi, last)
    flags = last | (ops.BIAS | (ops.RELU if a.get("relu") else 0)
                    if node.op == "conv_bias" else 0)
    return ("conv", 0, len(a["stride"]), xs, tuple(node.inputs[1].shape), ys, a["stride"],
            a["dilation"], lo, hi, a.get("groups", 1), flags)


def _emit_batch(em, node, storage, weight_ok):
    """C for a convolution or pooling whose batch is a run-time size: the op for the
    call's batch from its call site's cache in the shim (dnnl/batch.c), or None when the
    node needs more (a gradient, a workspace, another run-time size)."""
    if id(node) in em.__dict__.get("pool_workspaces", {}):
        return None       # a max pooling whose gradient reads its workspace: training
    args = _batch_args(node)
    if args is None:
        return None
    batch = _nchw(node.inputs[0].shape, node.attrs)[0]
    slot = em.add_slot(("dnnl_batch", args))
    em.sized_dnnl = True
    operands = list(node.inputs) + [node]
    slots = ", ".join(f"P[{storage(x)}]" for x in operands)
    stamps = ", ".join("kiln_weight_stamp()" if x is not node and weight_ok(x) else "0"
                       for x in operands)
    n = len(operands)
    return "\n".join([
        f"  if (({batch}) > 0) {{",
        f"    void *op = kiln_batch_op(P[{slot}], {batch});",
        f"    if (!op) return {DNNL_FAILED};",
        f"    void *a[{n}] = {{{slots}}};", f"    int64_t s[{n}] = {{{stamps}}};",
        f"    if (kiln_dnnl_run(op, a, s) != 0) return {DNNL_FAILED};", "  }"])


def new_batch_cache(lib, args):
    """The shim's op cache of one _emit_batch call site (args: its slot's)."""
    from ..dnnl.ops import _i64
    if args[0] == "pool":
        _, which, alg, nsp, xs, ys, kernel, stride, lo, hi, flags = args
        return lib.kd_pool_batch_new(which, alg, nsp, _i64(xs), _i64(ys), _i64(kernel),
                                     _i64(stride), _i64(lo), _i64(hi), flags)
    _, which, nsp, xs, ws, ys, stride, dilation, lo, hi, groups, flags = args
    return lib.kd_conv_batch_new(which, nsp, _i64(xs), _i64(ws), _i64(ys), _i64(stride),
                                 _i64(dilation), _i64(lo), _i64(hi), groups, flags)


register(OPS, Heavy(emit, accepts=lowerable))


def prelude():
    """What a program with heavy ops declares first, csrc/heavy.h: the shim's run function
    and write count (set by kiln_set_dnnl after loading), and the weight stamp."""
    return fixed_source.text("heavy.h")


def op_slot(em, make, node):
    """The table slot of a oneDNN op made once, for the shapes of `node` as traced: marked
    'pinned' when one of them is a run-time size, whose value the op then fixed (a
    program of run-time sizes is refused, sized_program.py); an op of fixed shapes (a
    Dense layer inside a loop over a run-time length) serves every size."""
    pinned = any(is_runtime(d) for n in (node,) + tuple(node.inputs) for d in n.shape)
    return em.add_slot(("dnnl_op", make) + (("pinned",) if pinned else ()))


def uses_heavy(slots):
    return any(entry[0] in ("dnnl_op", "dnnl_rows", "dnnl_batch", "dnnl_bmm")
               for entry in slots)


def bind(lib, program):
    """Point a loaded program at the shim and kiln's write counter."""
    from ..dnnl.library import shim
    from ..._core import writes
    sh = shim()
    counter = writes.counter()
    lib.kiln_set_dnnl.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
    lib.kiln_set_dnnl(ctypes.cast(sh.kd_run, ctypes.c_void_p),
                      ctypes.addressof(counter) if counter is not None else None)
    if hasattr(lib, "kiln_set_dnnl_rows"):      # oneDNN calls of run-time sizes
        lib.kiln_set_dnnl_rows.argtypes = [ctypes.c_void_p]
        lib.kiln_set_dnnl_rows(ctypes.cast(sh.kd_matmul_rows_op, ctypes.c_void_p))
        lib.kiln_set_dnnl_batch.argtypes = [ctypes.c_void_p]
        lib.kiln_set_dnnl_batch(ctypes.cast(sh.kd_batch_op, ctypes.c_void_p))
        lib.kiln_set_dnnl_bmm.argtypes = [ctypes.c_void_p]
        lib.kiln_set_dnnl_bmm(ctypes.cast(sh.kd_bmm_op, ctypes.c_void_p))


def new_op(make, program):
    """The shim op for one call site, freed with the program."""
    from ..dnnl.library import shim
    lib = shim()
    op = _new(lib, make)
    weakref.finalize(program, lib.kd_free, op)
    return op
