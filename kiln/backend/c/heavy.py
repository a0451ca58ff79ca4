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
from ..._core.symdim import provably
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
                spec = _pool_spec(1, pool.inputs[0], pool.shape, pool.attrs)
                shared[id(pool)] = em.new_buffer(_workspace_bytes(spec))
            shared[id(node)] = shared[id(pool)]


def _nchw(shape, attrs):
    """An activation's dims as the shim takes them (NCHW order, whatever the layout)."""
    from ..dnnl.ops import channels_first
    return channels_first(shape) if attrs.get("channels_last") else tuple(shape)


# A shim op is described by a spec, the arguments of the shim's kd_conv or kd_pool:
#   ("conv", which, nsp, x dims, w dims, y dims, stride, dilation, lo, hi, groups, flags)
#   ("pool", which, alg, nsp, x dims, y dims, kernel, stride, lo, hi, flags)
# (activation dims in NCHW order; which: 0 forward, 1 data gradient / forward keeping the
# max workspace, 2 weights' gradient / pooling's backward). The same spec with its batch
# left 0 describes a call site's cache of one op per batch size (dnnl/batch.c).

def _conv_spec(which, x_shape, w_shape, y_shape, attrs, bias=False, relu=False, bf16=False):
    from ..dnnl import ops
    flags = ((ops.CHANNELS_LAST if attrs.get("channels_last") else 0)
             | (ops.BIAS if bias else 0) | (ops.RELU if relu else 0)
             | (ops.BF16 if bf16 else 0))
    return ("conv", which, len(attrs["stride"]), _nchw(x_shape, attrs), tuple(w_shape),
            _nchw(y_shape, attrs), attrs["stride"], attrs["dilation"], attrs["pad"][0::2],
            attrs["pad"][1::2], attrs.get("groups", 1), flags)


def _pool_spec(which, x, y_shape, attrs):
    from ..dnnl import ops
    return ("pool", which, ops.POOL_KINDS[attrs["kind"]], len(attrs["kernel"]),
            _nchw(x.shape, attrs), _nchw(y_shape, attrs), attrs["kernel"], attrs["stride"],
            attrs["pad"][0::2], attrs["pad"][1::2],
            ops.CHANNELS_LAST if attrs.get("channels_last") else 0)


def _dims(spec):
    """The positions of the spec's activation dims (x, and y; w has no batch)."""
    return (3, 5) if spec[0] == "conv" else (4, 5)


def _with_batch(spec, n):
    spec = list(spec)
    for at in _dims(spec):
        spec[at] = (n,) + tuple(spec[at][1:])
    return tuple(spec)


def _call_shim(lib, spec, batch_cache=False):
    """A new shim op for `spec` (or, batch_cache, the call site's cache of ops per batch
    for the spec with its batch left 0); 0 on failure."""
    from ..dnnl.ops import _i64
    if spec[0] == "pool":
        _, which, alg, nsp, xs, ys, kernel, stride, lo, hi, flags = spec
        new = lib.kd_pool_batch_new if batch_cache else lib.kd_pool
        return new(which, alg, nsp, _i64(xs), _i64(ys), _i64(kernel), _i64(stride),
                   _i64(lo), _i64(hi), flags)
    _, which, nsp, xs, ws, ys, stride, dilation, lo, hi, groups, flags = spec
    new = lib.kd_conv_batch_new if batch_cache else lib.kd_conv
    return new(which, nsp, _i64(xs), _i64(ws), _i64(ys), _i64(stride), _i64(dilation),
               _i64(lo), _i64(hi), groups, flags)


def _makers(node, workspace=None):
    """[(spec, argument nodes or workspace sizes)] for the shim calls of one node;
    workspace: the buffer slot of a workspace shared with the node's partner
    (pair_max_pools)."""
    a = node.attrs
    if node.op == "conv_bias" or (node.op == "conv_bf16" and len(node.inputs) == 3):
        x, w, b = node.inputs
        spec = _conv_spec(0, x.shape, w.shape, node.shape, a, bias=True,
                          relu=bool(a.get("relu")), bf16=_bf16(node))
        return [(spec, [x, w, b, node])]
    if node.op in ("conv", "conv_bf16", "conv_grad_data", "conv_grad_weight"):
        first, second = node.inputs
        if node.op in ("conv", "conv_bf16"):
            shapes = (0, first.shape, second.shape, node.shape)
        elif node.op == "conv_grad_data":
            shapes = (1, node.shape, second.shape, first.shape)
        else:
            shapes = (2, first.shape, node.shape, second.shape)
        return [(_conv_spec(*shapes, a, bf16=_bf16(node)), [first, second, node])]
    kind = a["kind"]
    if node.op == "pool":
        x = node.inputs[0]
        if workspace is not None:
            return [(_pool_spec(1, x, node.shape, a), [x, node, ("shared", workspace)])]
        return [(_pool_spec(0, x, node.shape, a), [x, node])]
    g, x = node.inputs
    if workspace is not None:
        return [(_pool_spec(2, x, g.shape, a), [g, ("shared", workspace), node])]
    if kind != "max":
        return [(_pool_spec(2, x, g.shape, a), [g, node])]
    # max: the forward pass again, keeping where each maximum was, then the backward
    fwd, bwd = _pool_spec(1, x, g.shape, a), _pool_spec(2, x, g.shape, a)
    return [(fwd, [x, ("scratch", g.size * 4), ("workspace", fwd)]),
            (bwd, [g, ("workspace", fwd), node])]


def _batch(spec):
    """The spec's run-time batch when it is its only run-time size (the same in x and y),
    else None (a spec of fixed sizes, or one oneDNN's ops per batch cannot serve)."""
    xs, ys = (spec[at] for at in _dims(spec))
    if not is_runtime(xs[0]):
        return None
    rest = [d for at, part in enumerate(spec) if isinstance(part, tuple)
            for k, d in enumerate(part) if not (at in _dims(spec) and k == 0)]
    if not provably(xs[0], "==", ys[0]) or any(is_runtime(d) for d in rest):
        return None
    return xs[0]


def _workspace_bytes(spec):
    """The bytes of the workspace of a max pool's op, at least 64; of a run-time batch, a
    size expression in it (oneDNN's workspace grows by the same bytes per image)."""
    from ..dnnl.library import shim
    lib = shim()

    def size(s):
        op = _new(lib, lambda lib: _call_shim(lib, s))
        try:
            return int(lib.kd_arg_size(op, 2))
        finally:
            lib.kd_free(op)
    batch = _batch(spec)
    if batch is None:
        return max(size(spec), 64)
    one, two, three = (size(_with_batch(spec, n)) for n in (1, 2, 3))
    per_image = two - one
    if three - two != per_image:
        raise KilnError("oneDNN's max pooling workspace does not grow by the same bytes per "
                        "image; a run-time batch cannot size it")
    return batch * per_image + (one - per_image) + 64


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
    for spec, args in _makers(node, workspace):
        slots, stamps = [], []
        for arg in args:
            if isinstance(arg, tuple) and arg[0] == "shared":
                slots.append(f"P[{arg[1]}]")
                stamps.append("0")
            elif isinstance(arg, tuple):
                if id(arg[1]) not in extra:
                    size = (arg[1] + 64 if arg[0] == "scratch"
                            else _workspace_bytes(arg[1]))
                    extra[id(arg[1])] = em.new_buffer(size)
                slots.append(f"P[{extra[id(arg[1])]}]")
                stamps.append("0")
            else:
                slots.append(f"P[{storage(arg)}]")
                stamps.append("kiln_weight_stamp()" if arg is not node and weight_ok(arg)
                              else "0")
        call = [f"    void *a[{len(slots)}] = {{{', '.join(slots)}}};",
                f"    int64_t s[{len(slots)}] = {{{', '.join(stamps)}}};"]
        batch = _batch(spec)
        if batch is None:
            op = op_slot(em, lambda lib, spec=spec: _call_shim(lib, spec), node)
            lines += ["  {", *call,
                      f"    if (kiln_dnnl_run(P[{op}], a, s) != 0) return {DNNL_FAILED};",
                      "  }"]
            continue
        # the op for the call's batch from this call site's cache (dnnl/batch.c)
        slot = em.add_slot(("dnnl_batch", _with_batch(spec, 0)))
        em.sized_dnnl = True
        lines += [f"  if (({batch}) > 0) {{",
                  f"    void *op = kiln_batch_op(P[{slot}], {batch});",
                  f"    if (!op) return {DNNL_FAILED};", *call,
                  f"    if (kiln_dnnl_run(op, a, s) != 0) return {DNNL_FAILED};", "  }"]
        if node.op == "conv_grad_weight":    # no images: the weights' gradient is 0
            nbytes = node.size * _np.dtype(node.dtype).itemsize
            lines += [f"  else memset(P[{storage(node)}], 0, {nbytes});"]
    return "\n".join(lines)


def new_batch_cache(lib, spec):
    """The shim's op cache of one call site of a run-time batch (spec: its slot's)."""
    return _call_shim(lib, spec, batch_cache=True)


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
