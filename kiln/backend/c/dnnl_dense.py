"""Dense layers in generated C on oneDNN's matmul primitive (kiln/backend/dnnl/matmul.c).

A float32 matmul step of at least DNNL_MIN_ROWS rows runs on shim ops: oneDNN's brgemm
kernels, the weight reordered into their packed layout once and kept while kiln's write
counter and the weight's address are unchanged (the stamps of heavy.py), and the bias add
and ReLU that follow the matmul inside the primitive, so the output is written once.
Whatever else the step's elementwise chain does stays with kiln's loop, run after it.
A 2-D matmul is split into blocks for kiln's pool (grid below); one over batch dims
(attention's batch_dot) is one op, on oneDNN's own threads.

Below DNNL_MIN_ROWS rows (batch 1 above all) kiln's own kernels stay: there a layer is a
stream over the weights, which kiln's dot products and dense chains (dense_chain.py) do
without a library call's fixed cost.

Every op is made once at code generation to learn which kernel oneDNN picks: a shape it
only has a reference kernel for keeps kiln's path.
"""
import ctypes
import math
import threading

import numpy as _np

from .heavy import DNNL_FAILED
from .kernels import GEMM_BLAS_MIN_FLOPS, rows_times_matrix
from .sizes import is_runtime
from ..._core.symdim import provably

# rows from which oneDNN takes a matmul (seed MLP, side by side under load: batch 16 in
# 36 us against 52 on MKL in kiln's pool, batch 8 even within the noise), and the
# multiply-adds below which the call's fixed cost (3-4 us) is not worth it
DNNL_MIN_ROWS = 8
DNNL_MIN_FLOPS = GEMM_BLAS_MIN_FLOPS

# A layer runs as a grid of blocks in kiln's pool, each a one-thread oneDNN op, so a core
# that another process holds only delays the blocks it takes (an OpenMP team waits for it
# at the end). Few rows: the columns are split, one block per thread, each core then
# reading its share of the weights. Many rows: the rows, ROW_BLOCKS_PER_THREAD blocks per
# thread, each with whole rows of output (oneDNN's brgemm kernel wants its output rows
# contiguous: on a column block it falls back to a gemm 5-10% slower).
ROW_SPLIT_MIN = 256
ROW_BLOCKS_PER_THREAD = 2
MIN_BLOCK_COLUMNS = 64
MIN_BLOCK_ROWS = 32

_usable = {}          # op arguments -> did oneDNN make it with a real kernel
_lock = threading.Lock()


def _i64(values):
    values = tuple(int(v) for v in values)
    return (ctypes.c_int64 * len(values))(*values)


def _new_op(lib, args):
    """args: (nd, a dims, a strides, b dims, b strides, ldc, bias?, act, pack?, single?,
    ldr: the residual's row stride, 0 for none), as kd_matmul takes them."""
    nd, ad, as_, bd, bs, ldc, bias, act, pack, single, ldr = args
    return lib.kd_matmul(nd, _i64(ad), _i64(as_), _i64(bd), _i64(bs), ldc, bias, act, pack,
                         single, ldr)


def _probe(args):
    """Does oneDNN make this op with a real (not reference) kernel?"""
    with _lock:
        got = _usable.get(args)
        if got is None:
            from ..dnnl.library import shim
            lib = shim()
            op = _new_op(lib, args)
            got = _usable[args] = bool(op)
            if op:
                lib.kd_free(op)
    return got


def grid(m, n, threads):
    """(rows, columns) per block of an m x n output on `threads` threads."""
    if threads <= 1:
        return m, n
    if m >= ROW_SPLIT_MIN:
        rows = -(-m // (ROW_BLOCKS_PER_THREAD * threads))
        return max(MIN_BLOCK_ROWS, -(-rows // 8) * 8), n
    cols = -(-n // threads)
    return m, max(MIN_BLOCK_COLUMNS, -(-cols // 16) * 16)


def _operand(node, is_alias):
    """(node whose storage holds it, element strides) of a matmul operand read as one
    matrix (a stack's rows one after another), reading an unmaterialized transpose in
    place."""
    if node.op == "transpose" and node.ndim == 2 and node.attrs["axes"] == (1, 0) \
            and is_alias(node):
        base = node.inputs[0]
        return base, (1, base.shape[1])
    return node, (node.shape[-1], 1)


def _added(node, current):
    """The other operand of `node` when it adds a float32 value to `current`, else None."""
    if node.op != "add" or len(node.inputs) != 2 or node.shape != current.shape:
        return None
    x, y = node.inputs
    other = y if x is current else x if y is current else None
    return None if other is None or other is current or other.dtype != _np.float32 \
        else other


def _epilogue(mm, chain, is_alias, residuals=True):
    """(bias node or None, relu?, residual node or None, nodes taken): the bias add, ReLU
    and (with residuals) add of a tensor of the output's shape (an LSTM step's input
    projection, a residual connection) that directly follow the matmul, as the primitive
    can run them."""
    n = mm.shape[-1]
    taken, bias, relu, residual, current = 0, None, False, None, mm
    if chain and (other := _added(chain[0], mm)) is not None \
            and other.shape in ((n,), (1,) * (mm.ndim - 1) + (n,)):
        bias, current, taken = other, chain[0], 1
    if len(chain) > taken and chain[taken].op == "relu" and chain[taken].inputs[0] is current:
        relu, current, taken = True, chain[taken], taken + 1
    # a residual of the output's shape, laid out as a matrix of its own (not a view that
    # reads elsewhere, such as a transpose)
    if residuals and len(chain) > taken and (other := _added(chain[taken], current)) \
            is not None and other.shape == mm.shape and not is_alias(other):
        residual, current, taken = other, chain[taken], taken + 1
    # the rest of the chain may read only the last value computed here (they share storage)
    last = chain[taken - 1] if taken else mm
    inner = {id(mm)} | {id(c) for c in chain[:taken]}
    if any(id(i) in inner and i is not last for c in chain[taken:] for i in c.inputs):
        return None, False, None, 0
    return bias, relu, residual, taken


def emit(em, step, storage, is_alias, weight_stays):
    """(C statements, the chain's nodes still to run) computing a matmul step's head on
    oneDNN, or None when kiln's own kernels should run it. weight_stays(node): is node a
    parameter the program never writes (its packed copy may be kept between calls)?
    A weight that stays the same over a loop's steps (a recurrent layer's, in a scan body:
    em.loop_stamps, control.Sub) gets its packed copy once per loop run, under the run's
    stamp, instead of being read as it lies at every step (transposed, oneDNN reorders it
    at every call anyway)."""
    mm, chain = step.nodes[0], step.nodes[1:]
    if mm.ndim < 2 or mm.dtype != _np.float32 \
            or any(i.dtype != _np.float32 or i.ndim < 2 for i in mm.inputs):
        return None
    if any(is_runtime(d) for d in mm.shape + mm.inputs[0].shape + mm.inputs[1].shape):
        if mm.ndim > 2 and not rows_times_matrix(mm):
            return sized_batched(em, step, storage, is_alias)
        return sized_dense(em, step, storage, is_alias, weight_stays)
    K, N = mm.inputs[0].shape[-1], mm.shape[-1]
    one_matrix = mm.ndim == 2 or rows_times_matrix(mm)
    M = mm.size // N if one_matrix else mm.shape[-2]
    if mm.size * K < DNNL_MIN_FLOPS or (one_matrix and M < DNNL_MIN_ROWS):
        return None
    from .. import dnnl
    if not dnnl.available():
        return None
    if not one_matrix:
        return _batched(em, step, storage, is_alias)
    (a, sa), (b, sb) = _operand(mm.inputs[0], is_alias), _operand(mm.inputs[1], is_alias)
    bias, relu, residual, taken = _epilogue(mm, chain, is_alias)
    # the rest of the chain reads the primitive's result where the matmul's value is kept,
    # which is not the step's result when that goes straight into a parameter
    out = storage(step.sink) if taken == len(chain) else storage(chain[taken - 1] if taken
                                                                   else mm)
    if any(storage(x) == out for x in (a, b, bias, residual) if x is not None):
        return None          # oneDNN's output may not overlap its inputs
    stamp = "kiln_weight_stamp()" if weight_stays(b) else em.loop_stamps.get(storage(b))
    pointers = [None if x is None else f"P[{storage(x)}]" for x in (a, b, bias)] + [
        f"P[{out}]", None if residual is None else f"P[{storage(residual)}]"]
    code = _dense_code(em, M, N, K, sa, sb, pointers, relu, stamp)
    return None if code is None else (code, chain[taken:])


def matmul_code(em, M, N, K, a, sa, b, sb, out):
    """C computing out = a . b on oneDNN in kiln's pool, or None where kiln's gemm should
    (no oneDNN, a small or run-time size, only a reference kernel): a, b, out are C
    expressions of float32 pointers, sa and sb the element strides of a's rows and
    columns and of b's, the output's rows N apart (scan_hoist's weight gradients)."""
    if any(is_runtime(d) for d in (M, N, K)) or M * N * K < DNNL_MIN_FLOPS \
            or M < DNNL_MIN_ROWS:
        return None
    from .. import dnnl
    if not dnnl.available():
        return None
    return _dense_code(em, M, N, K, sa, sb, [a, b, None, out, None], False, None)


def _dense_code(em, M, N, K, sa, sb, pointers, relu, stamp):
    """C computing an M x N float32 product on one-thread oneDNN ops, a grid of blocks in
    kiln's pool, or None where oneDNN has only its reference kernel. pointers: C
    expressions of a, b, the bias (or None), the output and the residual (or None); stamp:
    the weight's (b's) stamp expression when its packed copy may be kept, else None."""
    from .runtime import thread_count
    a, b, bias, out, residual = pointers
    rows, cols = grid(M, N, thread_count())
    # row blocks read the weight as it lies: a packed copy per block would hold the
    # weight once per block (the same speed here: 1024 x 512 x 256 in 256-row blocks on
    # one thread, 2.54 ms unpacked, 2.66 packed)
    pack = stamp is not None and rows == M
    blocks = [(m0, n0, min(rows, M - m0), min(cols, N - n0))
              for m0 in range(0, M, rows) for n0 in range(0, N, cols)]
    single = int(len(blocks) > 1)
    shapes = [(2, (mb, K), sa, (K, nb), sb, N, int(bias is not None), int(relu), int(pack),
               single, N if residual is not None else 0) for _, _, mb, nb in blocks]
    if not all(_probe(args) for args in set(shapes)):
        return None
    ops = [em.add_slot(("dnnl_op", lambda lib, args=args: _new_op(lib, args)))
           for args in shapes]
    stamp = stamp if pack else "0"
    if len(ops) == 1:
        given = [p for p in (a, b, bias, out, residual) if p is not None]
        return _call(ops[0], given, ["0", stamp] + ["0"] * (len(given) - 2))
    return _blocks(em, ops, (rows, cols, -(-N // cols)), pointers, (sa[0], sb[1], N), stamp)


def _batched(em, step, storage, is_alias):
    """A matmul over batch dims (attention's batch_dot): one op over the flattened batch,
    an operand without batch dims (or all ones) broadcast to every matrix."""
    mm = step.nodes[0]
    batch = int(_np.prod(mm.shape[:-2]))
    dims = []
    for x in mm.inputs:
        if x.op == "transpose" and is_alias(x):
            return None      # a transposed view: kiln's loops read it in place
        lead = int(_np.prod(x.shape[:-2]))
        if lead not in (1, batch) or (lead == batch and x.shape[:-2] != mm.shape[:-2][
                len(mm.shape) - x.ndim:]):
            return None      # broadcast along some batch dims only
        dims.append((lead,) + x.shape[-2:])
    (ba, M, K), (bb, _, N) = dims
    out = storage(step.sink if len(step.nodes) == 1 else mm)    # as in emit
    if any(storage(x) == out for x in mm.inputs):
        return None
    args = (3, (ba, M, K), (M * K, K, 1), (bb, K, N), (K * N, N, 1), N, 0, 0, 0, 0, 0)
    if not _probe(args):
        return None
    op = em.add_slot(("dnnl_op", lambda lib: _new_op(lib, args)))
    pointers = [f"P[{storage(x)}]" for x in mm.inputs] + [f"P[{out}]"]
    return _call(op, pointers, ["0"] * 3), step.nodes[1:]


def _call(op, pointers, stamps):
    """C calling one shim op on the values at `pointers` (C expressions)."""
    return "\n".join(["  {", f"    void *a[{len(pointers)}] = {{{', '.join(pointers)}}};",
                      f"    int64_t s[{len(pointers)}] = {{{', '.join(stamps)}}};",
                      f"    if (kiln_dnnl_run(P[{op}], a, s) != 0) return {DNNL_FAILED};",
                      "  }"])


def _blocks(em, ops, grid_, pointers, steps, stamp):
    """C running one op per block through kiln's pool; ops are consecutive slots.
    grid_: (rows, columns) per block and blocks per row of the grid; pointers: C
    expressions of a, b, the bias or None, the output, the residual or None; steps:
    elements between rows of a, columns of b, rows of the output (and of the residual)."""
    rows, cols, across = grid_
    a_row, b_col, out_row = steps
    a, b, bias, out, residual = pointers
    name = f"kiln_dnnl_blocks{len(em.functions)}"
    bias = "" if bias is None else f", (float *)({bias}) + n0"
    res = "" if residual is None else f", (float *)({residual}) + m0 * {out_row} + n0"
    n_args = 3 + bool(bias) + bool(res)
    job = "" if any("} kiln_dnnl_job;" in f for f in em.functions) else \
        "typedef struct { void **P; int failed; } kiln_dnnl_job;\n"
    em.functions.append("\n".join([
        f"{job}/* block b of a layer on oneDNN: op P[{ops[0]} + b] */",
        f"static void {name}(void *ctx, int64_t b) {{",
        "  kiln_dnnl_job *job = ctx;",
        "  void **P = job->P;",
        f"  int64_t m0 = b / {across} * {rows}, n0 = b % {across} * {cols};",
        f"  void *a[{n_args}] = {{(float *)({a}) + m0 * {a_row}, "
        f"(float *)({b}) + n0 * {b_col}{bias}, "
        f"(float *)({out}) + m0 * {out_row} + n0{res}}};",
        f"  int64_t s[{n_args}] = {{0, {stamp}{', 0' * (n_args - 2)}}};",
        f"  if (kiln_dnnl_run(P[{ops[0]} + b], a, s) != 0) "
        "__atomic_store_n(&job->failed, 1, __ATOMIC_RELAXED);",
        "}"]))
    n = len(ops)
    return "\n".join([
        "  {",
        "    kiln_dnnl_job job = {P, 0};",
        f"    if (kiln_parallel_ptr) kiln_parallel_ptr({name}, &job, {n});",
        f"    else for (int64_t b = 0; b < {n}; b++) {name}(&job, b);",
        f"    if (job.failed) return {DNNL_FAILED};",
        "  }"])


def grid_defines():
    """grid()'s constants for csrc/sized_dnnl.h, which splits a layer of run-time rows."""
    from .runtime import thread_count
    return {"KILN_GRID_THREADS": thread_count(), "KILN_GRID_ROW_SPLIT_MIN": ROW_SPLIT_MIN,
            "KILN_GRID_ROW_BLOCKS": ROW_BLOCKS_PER_THREAD,
            "KILN_GRID_MIN_COLUMNS": MIN_BLOCK_COLUMNS, "KILN_GRID_MIN_ROWS": MIN_BLOCK_ROWS}


def sized_dense(em, step, storage, is_alias, weight_stays):
    """(C setting kiln_rc, the chain's nodes still to run, True) for a Dense layer whose
    row count is a run-time size: where the rows are as many as emit would take, oneDNN
    runs it in the blocks emit would make for that count (csrc/sized_dnnl.h; each block's
    op from the call site's cache in the shim); kiln_rc is then 0, -1 if oneDNN failed,
    and 1 where kiln's own gemm should run (codegen emits that branch). None: kiln's gemm
    always (batched matmuls, a run-time K or N, no oneDNN)."""
    mm, chain = step.nodes[0], step.nodes[1:]
    a_node, b_node = mm.inputs
    if mm.ndim < 2 or not (mm.ndim == 2 or rows_times_matrix(mm)) \
            or mm.dtype != _np.float32 \
            or any(i.dtype != _np.float32 or i.ndim != 2 and i is b_node for i in mm.inputs):
        return None
    K, N = a_node.shape[-1], mm.shape[-1]
    if is_runtime(K) or is_runtime(N) or any(is_runtime(d) for d in b_node.shape):
        return None
    from .. import dnnl
    if not dnnl.available():
        return None
    (a, sa), (b, sb) = _operand(a_node, is_alias), _operand(b_node, is_alias)
    if any(is_runtime(x) for x in sa + sb):
        return None
    bias, relu, _, taken = _epilogue(mm, chain, is_alias, residuals=False)
    out = storage(step.sink) if taken == len(chain) else storage(chain[taken - 1] if taken
                                                                   else mm)
    if any(storage(x) == out for x in (a, b, bias) if x is not None):
        return None
    args = (int(K), tuple(sa), tuple(sb), int(N), int(bias is not None), int(relu))
    cache = em.add_slot(("dnnl_rows", args))
    em.sized_dnnl = True
    M = 1
    for d in mm.shape[:-1]:
        M = M * d
    bias_ptr = f"(const float *)P[{storage(bias)}]" if bias is not None else "0"
    code = "\n".join([
        "  int kiln_rc = 1;",
        f"  if (({M}) >= {DNNL_MIN_ROWS} && ({M}) * {int(N) * int(K)} >= {DNNL_MIN_FLOPS})",
        f"    kiln_rc = kiln_dense_rows(P[{cache}], {M}, {N}, (const float *)P[{storage(a)}], "
        f"{sa[0]}, (const float *)P[{storage(b)}], {sb[1]}, {bias_ptr}, (float *)P[{out}], "
        f"{N}, {int(weight_stays(b))}, kiln_parallel_ptr);"])
    return code, chain[taken:], True


def new_rows_cache(lib, args):
    """The shim's op cache of one sized_dense call site (args: its slot's)."""
    K, sa, sb, ldc, bias, relu = args
    return lib.kd_matmul_rows_new(K, _i64(sa), _i64(sb), ldc, bias, relu)


def sized_batched(em, step, storage, is_alias):
    """(C setting kiln_rc, the chain's nodes still to run, True) for a matmul over batch
    dims of run-time sizes (attention's batch_dot written out), as _batched makes for fixed
    ones: one oneDNN op over every matrix, for the call's sizes from the call site's cache
    (csrc/sized_dnnl.h, kiln_dense_batched); kiln_rc as sized_dense's. None: kiln's loop
    always (a transposed view, an operand broadcast along some batch dims only, no
    oneDNN)."""
    mm = step.nodes[0]
    lead = mm.shape[:-2]
    counts = []
    for x in mm.inputs:
        if x.op == "transpose" and is_alias(x):
            return None      # a transposed view: kiln's loops read it in place
        mine = x.shape[:-2]
        if all(not is_runtime(d) and d == 1 for d in mine):
            counts.append(1)
        elif len(mine) == len(lead) and all(provably(a, "==", b) for a, b in zip(mine, lead)):
            counts.append(math.prod(lead))
        else:
            return None      # broadcast along some batch dims only
    from .. import dnnl
    if not dnnl.available():
        return None
    out = storage(step.sink if len(step.nodes) == 1 else mm)    # as in emit
    if any(storage(x) == out for x in mm.inputs):
        return None
    M, K, N = mm.inputs[0].shape[-2], mm.inputs[0].shape[-1], mm.shape[-1]
    cache = em.add_slot(("dnnl_bmm",))
    em.sized_dnnl = True
    a, b = (f"(const float *)P[{storage(x)}]" for x in mm.inputs)
    code = "\n".join([
        "  int kiln_rc = 1;",
        f"  if (({math.prod(lead)}) * ({M}) * ({N}) * ({K}) >= {DNNL_MIN_FLOPS})",
        f"    kiln_rc = kiln_dense_batched(P[{cache}], {counts[0]}, {counts[1]}, {M}, {K}, "
        f"{N}, {a}, {b}, (float *)P[{out}]);"])
    return code, step.nodes[1:], True
