"""C text for the non-elementwise ops: matmul, reductions, data movement, gather/scatter,
and the sliding windows that convolution and pooling are made of; registered at the end as
those primitives' C lowerings (lowering.py).

Each kernel takes the node and ptr(node) -> C pointer expression, and returns C statements.
Index arithmetic is static (shapes are known), and every gather clips or wraps its indices,
so generated code cannot read or write out of bounds.
"""
import math

import numpy as _np

from . import dot, row_reductions
from .loops import (Operand, loop_nest, contiguous_strides, broadcast_strides, ctype,
                    pool_job)
from .lowering import MATMUL, VIEW, Kernel, NotLowerable, register, register_kernels
from .runtime import thread_count
from .sizes import is_runtime, maybe_nonempty
from ...ops.shape import slice_len, slice_start

# below this many multiply-adds kiln's own loops beat a BLAS call's fixed cost
GEMM_BLAS_MIN_FLOPS = 1 << 17
GEMM_BLAS_MIN_ROWS = 8


def c_literal(value, dtype):
    v = float(value)
    if math.isnan(v):
        return "NAN"
    if math.isinf(v):
        return "INFINITY" if v > 0 else "(-INFINITY)"
    if _np.dtype(dtype).kind == "f":
        return repr(v) + ("f" if _np.dtype(dtype) == _np.float32 else "")
    return str(int(value))


# ---- matmul -------------------------------------------------------------------------------

def gemm_prelude():
    """Declarations for calling the runtime (kiln/backend/c/runtime.py) through pointers set
    after loading, and kiln's own matmul loops for when no BLAS pays or exists."""
    parts = ["typedef void (*kiln_block_fn)(void *, int64_t);",
             "typedef void (*kiln_parallel_t)(kiln_block_fn, void *, int64_t);",
             "static kiln_parallel_t kiln_parallel_ptr = 0;"]
    for T, name in (("float", "s"), ("double", "d")):
        parts.append(
            f"typedef void (*kiln_{name}gemm_t)(int, int, int64_t, int64_t, int64_t, {T}, "
            f"const {T} *, int64_t, const {T} *, int64_t, {T}, {T} *);\n"
            f"static kiln_{name}gemm_t kiln_{name}gemm_ptr = 0;")
    parts.append("typedef void (*kiln_sgemm_cached_t)(void *, int, int, int64_t, int64_t, "
                 "int64_t, float, const float *, int64_t, const float *, int64_t, float, "
                 "float *);\nstatic kiln_sgemm_cached_t kiln_sgemm_cached_ptr = 0;")
    parts.append("void kiln_set_runtime(void *s, void *d, void *par, void *cached) {\n"
                 "  kiln_sgemm_ptr = (kiln_sgemm_t)s; kiln_dgemm_ptr = (kiln_dgemm_t)d;\n"
                 "  kiln_parallel_ptr = (kiln_parallel_t)par;\n"
                 "  kiln_sgemm_cached_ptr = (kiln_sgemm_cached_t)cached;\n}")
    parts.append(dot.source())
    for T, name in (("float", "s"), ("double", "d")):
        parts.append(_gemm_function(T, name))
    parts.append(f"""
/* kiln_gemm_float for a B that is a parameter the program never writes: the runtime may
   keep it packed between calls (packed.py); `cache` is this call site's table entry */
static void kiln_gemm_cached_float(void *cache, int ta, int tb, int64_t M, int64_t N,
    int64_t K, float alpha, const float *A, int64_t lda, const float *B, int64_t ldb,
    float beta, float *C) {{
  if (cache && kiln_sgemm_cached_ptr && M >= {GEMM_BLAS_MIN_ROWS}
      && M * N * K >= {GEMM_BLAS_MIN_FLOPS}) {{
    kiln_sgemm_cached_ptr(cache, ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C);
    return;
  }}
  kiln_gemm_float(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C);
}}""")
    return "\n".join(parts)


# a batch-1 layer this big (multiply-adds) is split over the runtime's threads, in blocks
# of this many output features: each core then streams its own part of the weights
GEMV_PARALLEL_MIN = 1 << 16
GEMV_BLOCK_ROWS = 64


def _gemm_function(T, name):
    # beta == 0 must not read C (it may hold anything, NaN included), as in BLAS
    store = "(beta == 0 ? alpha * ({s}) : alpha * ({s}) + beta * ({c}))"
    dot4 = dot1 = ""
    if T == "float":    # the vectorized dot products of dot.py, where the machine has them
        dot4 = f"""#ifdef KILN_HAVE_DOT4
    for (; n + 4 <= n1; n += 4) {{
      float s[4];
      kiln_dot4_float(K, a, B + n * ldb, ldb, s);
      float *c = C + m * ldc + n;
      for (int j = 0; j < 4; j++) c[j] = {store.format(s="s[j]", c="c[j]")};
    }}
#endif"""
        dot1 = f"""#ifdef KILN_HAVE_DOT4
      C[m * ldc + n] = {store.format(s="kiln_dot1_float(K, a, b)", c="C[m * ldc + n]")};
      continue;
#endif"""
    return f"""
/* C[m, n0:n1] = alpha A[m, :] . B[n, :] + beta C[m, n] for the rows m < M: the Dense form */
static void kiln_nt_{T}(int64_t M, int64_t n0, int64_t n1, int64_t K, {T} alpha,
                        const {T} *A, int64_t lda, const {T} *B, int64_t ldb, {T} beta,
                        {T} *C, int64_t ldc) {{
  for (int64_t m = 0; m < M; m++) {{
    const {T} *a = A + m * lda;
    int64_t n = n0;
{dot4}
    for (; n + 8 <= n1; n += 8) {{     /* eight weight rows share each load of a */
      const {T} *b = B + n * ldb;
      {T} s[8];
      {T} s0 = 0, s1 = 0, s2 = 0, s3 = 0, s4 = 0, s5 = 0, s6 = 0, s7 = 0;
#pragma omp simd reduction(+:s0,s1,s2,s3,s4,s5,s6,s7)
      for (int64_t k = 0; k < K; k++) {{
        {T} av = a[k];
        s0 += av * b[k]; s1 += av * b[ldb + k]; s2 += av * b[2 * ldb + k];
        s3 += av * b[3 * ldb + k]; s4 += av * b[4 * ldb + k]; s5 += av * b[5 * ldb + k];
        s6 += av * b[6 * ldb + k]; s7 += av * b[7 * ldb + k];
      }}
      s[0] = s0; s[1] = s1; s[2] = s2; s[3] = s3; s[4] = s4; s[5] = s5; s[6] = s6; s[7] = s7;
      {T} *c = C + m * ldc + n;
      for (int j = 0; j < 8; j++) c[j] = {store.format(s="s[j]", c="c[j]")};
    }}
    for (; n < n1; n++) {{
      const {T} *b = B + n * ldb; {T} acc = 0;
{dot1}
#pragma omp simd reduction(+:acc)
      for (int64_t k = 0; k < K; k++) acc += a[k] * b[k];
      C[m * ldc + n] = {store.format(s="acc", c="C[m * ldc + n]")};
    }}
  }}
}}

typedef struct {{ int64_t M, N, K, lda, ldb; {T} alpha, beta; const {T} *A, *B; {T} *C; }}
  kiln_nt_job_{T};

static void kiln_nt_block_{T}(void *ctx, int64_t b) {{
  const kiln_nt_job_{T} *j = ctx;
  int64_t n0 = b * {GEMV_BLOCK_ROWS}, n1 = n0 + {GEMV_BLOCK_ROWS};
  if (n1 > j->N) n1 = j->N;
  kiln_nt_{T}(j->M, n0, n1, j->K, j->alpha, j->A, j->lda, j->B, j->ldb, j->beta, j->C, j->N);
}}

/* C[M,N] = alpha op(A) op(B) + beta C; row-major; ta/tb: A is stored (K,M) / B is (N,K) */
__attribute__((noinline)) static void kiln_gemm_{T}(int ta, int tb, int64_t M, int64_t N,
    int64_t K, {T} alpha, const {T} *A, int64_t lda, const {T} *B, int64_t ldb, {T} beta,
    {T} *C) {{
  if (kiln_{name}gemm_ptr && M >= {GEMM_BLAS_MIN_ROWS} && M * N * K >= {GEMM_BLAS_MIN_FLOPS}) {{
    kiln_{name}gemm_ptr(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C);
    return;
  }}
  if (!ta && tb) {{
    if (kiln_parallel_ptr && M * N * K >= {GEMV_PARALLEL_MIN} && N >= 2 * {GEMV_BLOCK_ROWS}) {{
      kiln_nt_job_{T} job = {{M, N, K, lda, ldb, alpha, beta, A, B, C}};
      kiln_parallel_ptr(kiln_nt_block_{T}, &job, (N + {GEMV_BLOCK_ROWS - 1}) / {GEMV_BLOCK_ROWS});
    }} else {{
      kiln_nt_{T}(M, 0, N, K, alpha, A, lda, B, ldb, beta, C, N);
    }}
  }} else if (!ta && !tb) {{
    for (int64_t m = 0; m < M; m++) {{
      {T} *c = C + m * N;
      for (int64_t n = 0; n < N; n++) c[n] = beta == 0 ? 0 : beta * c[n];
      for (int64_t k = 0; k < K; k++) {{
        {T} av = alpha * A[m * lda + k]; const {T} *b = B + k * ldb;
        for (int64_t n = 0; n < N; n++) c[n] += av * b[n];
      }}
    }}
  }} else {{
    for (int64_t m = 0; m < M; m++)
      for (int64_t n = 0; n < N; n++) {{
        {T} acc = 0;
        for (int64_t k = 0; k < K; k++)
          acc += A[ta ? k * lda + m : m * lda + k] * B[tb ? n * ldb + k : k * ldb + n];
        C[m * N + n] = {store.format(s="acc", c="C[m * N + n]")};
      }}
  }}
}}"""


def rows_times_matrix(node):
    """Is the matmul a stack of matrices (a contiguous (..., M, K)) times one matrix, so
    that it is one (rows, K) x (K, N) product over all the stack's rows?"""
    a, b = node.inputs
    return node.ndim > 2 and b.ndim == 2 and a.shape[:-2] == node.shape[:-2]


def matmul(node, ptr, is_alias, alpha="1", beta="0", out=None, cache=None):
    """is_alias(n): n is a transpose left unmaterialized, to be read transposed in place.
    Computes out = alpha * node + beta * out (out: a C pointer, default node's storage).
    cache: C expression for a pack cache (packed.py) when B is a parameter nothing writes."""
    out = out or ptr(node)
    a, b = node.inputs
    ta = a.op == "transpose" and a.ndim == 2 and a.attrs["axes"] == (1, 0) and is_alias(a)
    tb = b.op == "transpose" and b.ndim == 2 and b.attrs["axes"] == (1, 0) and is_alias(b)
    pa = ptr(a.inputs[0]) if ta else ptr(a)
    pb = ptr(b.inputs[0]) if tb else ptr(b)
    M, K = a.shape[-2], a.shape[-1]
    N = b.shape[-1]
    lda = M if ta else K
    ldb = K if tb else N
    T = ctype(node.dtype)
    if T not in ("float", "double") or a.dtype != node.dtype or b.dtype != node.dtype:
        raise NotLowerable(f"matmul of {a.dtype} and {b.dtype}")
    if not maybe_nonempty(K) and beta == "0":
        return f"  memset({out}, 0, {node.size * node.dtype.itemsize});"
    batch = node.shape[:-2]
    if rows_times_matrix(node):     # Dense on a sequence: one gemm over all the rows
        M, batch = math.prod(a.shape[:-1]), ()     # (a run-time K may be 0)
    if not batch:
        if cache is not None and T == "float":
            return f"  kiln_gemm_cached_float({cache}, {int(ta)}, {int(tb)}, {M}, {N}, {K}, " \
                   f"{alpha}, {pa}, {lda}, {pb}, {ldb}, {beta}, {out});"
        return f"  kiln_gemm_{T}({int(ta)}, {int(tb)}, {M}, {N}, {K}, {alpha}, {pa}, {lda}, " \
               f"{pb}, {ldb}, {beta}, {out});"
    if not maybe_nonempty(K) or beta != "0" or out != ptr(node):
        raise NotLowerable("accumulating batched matmul")
    sa = [s * M * K for s in broadcast_strides(a.shape[:-2], batch)]
    sb = [s * K * N for s in broadcast_strides(b.shape[:-2], batch)]
    so = [s * M * N for s in contiguous_strides(batch)]
    ops = [Operand(ptr(node), 0, so), Operand(pa, 0, sa), Operand(pb, 0, sb)]
    return loop_nest(batch, ops, lambda o: [
        f"kiln_gemm_{T}({int(ta)}, {int(tb)}, {M}, {N}, {K}, 1, {pa} + {o[1]}, {lda}, "
        f"{pb} + {o[2]}, {ldb}, 0, {ptr(node)} + {o[0]});"])


# ---- reductions ---------------------------------------------------------------------------

def _reduce_axes(node):
    x = node.inputs[0]
    axis = node.attrs.get("axis")
    if axis is None:
        return tuple(range(x.ndim))
    return tuple(a % x.ndim for a in (axis if isinstance(axis, tuple) else (axis,)))


def reduction(node, ptr):
    x = node.inputs[0]
    axes = _reduce_axes(node)
    kept = [d for d in range(x.ndim) if d not in axes]
    xs = contiguous_strides(x.shape)
    T = ctype(node.dtype)
    acc_t = "double" if node.dtype.kind == "f" else T
    op = node.op
    init = {"sum": "0", "prod": "1"}.get(op)
    if x.size == 0:
        return f"  /* empty reduction */ for (int64_t j = 0; j < {node.size}; j++) " \
               f"{ptr(node)}[j] = {init or '0'};"
    if op in ("sum", "prod") and kept and axes == tuple(range(len(axes))):
        return _leading_reduction(node, ptr, x.size // node.size, node.size, acc_t, init)
    outer_ops = [Operand(ptr(node), 0, contiguous_strides([x.shape[d] for d in kept])),
                 Operand(ptr(x), 0, [xs[d] for d in kept])]

    row = row_reductions.contiguous_row(node, x, axes)

    def body(o):
        if row is not None:
            return row_reductions.emit(node, ptr, o, row, acc_t, init)
        inner_ops = [Operand(ptr(x), o[1], [xs[d] for d in axes])]
        if op in ("sum", "prod"):
            sym = "+" if op == "sum" else "*"
            inner = loop_nest([x.shape[d] for d in axes], inner_ops,
                              lambda io: [f"acc {sym}= ({acc_t}){ptr(x)}[{io[0]}];"],
                              var="j")
            return [f"{acc_t} acc = {init};", inner, f"{ptr(node)}[{o[0]}] = ({T})acc;"]
        cmp = ">" if op == "max" else "<"
        inner = loop_nest([x.shape[d] for d in axes], inner_ops, lambda io: [
            f"{T} v = {ptr(x)}[{io[0]}];",
            f"if (v {cmp} acc || (v != v && acc == acc)) acc = v;"], var="j")
        return [f"{T} acc = {ptr(x)}[{o[1]}];", inner, f"{ptr(node)}[{o[0]}] = acc;"]
    return loop_nest([x.shape[d] for d in kept], outer_ops, body)


ROW_BLOCK = 256     # accumulators on the stack: 2 KB of doubles


def _leading_reduction(node, ptr, rows, cols, acc_t, init):
    """A sum or product over the leading axes (a bias gradient: the batch's rows summed)."""
    return rows_reduced(ptr(node.inputs[0]), ptr(node), ctype(node.inputs[0].dtype),
                        ctype(node.dtype), rows, cols, acc_t, init,
                        "+" if node.op == "sum" else "*")


def rows_reduced(x, out, X, T, rows, cols, acc_t="double", init="0", sym="+", block=None):
    """C: out[j] = x[0, j] sym x[1, j] sym ... over `rows` rows of `cols` elements (C pointer
    expressions of element types X and T), accumulated in acc_t. Walking down each column
    reads one element per row, a cache line apart; this walks the rows, a block of columns
    at a time, in the same order of operations per element. block: a C expression b; only
    block b of the ROW_BLOCK-column blocks (a parallel job's share)."""
    first, stop = ("0", f"c0 < {cols}") if block is None else \
        (f"({block}) * {ROW_BLOCK}", f"c0 < {cols} && c0 < (({block}) + 1) * {ROW_BLOCK}")
    return f"""  for (int64_t c0 = {first}; {stop}; c0 += {ROW_BLOCK}) {{
    int64_t width = {cols} - c0 < {ROW_BLOCK} ? {cols} - c0 : {ROW_BLOCK};
    {acc_t} acc[{ROW_BLOCK}];
    for (int64_t j = 0; j < width; j++) acc[j] = {init};
    for (int64_t r = 0; r < {rows}; r++) {{
      const {X} *row = {x} + r * {cols} + c0;
      for (int64_t j = 0; j < width; j++) acc[j] {sym}= ({acc_t})row[j];
    }}
    for (int64_t j = 0; j < width; j++) {out}[c0 + j] = ({T})acc[j];
  }}"""


def arg_reduction(node, ptr):
    x = node.inputs[0]
    axis = node.attrs.get("axis")
    shape = (x.size,) if axis is None else x.shape
    axis = 0 if axis is None else axis % x.ndim
    xs = contiguous_strides(shape)
    kept = [d for d in range(len(shape)) if d != axis]
    cmp = ">" if node.op == "argmax" else "<"
    T = ctype(x.dtype)
    n, step = shape[axis], xs[axis]
    ops = [Operand(ptr(node), 0, contiguous_strides([shape[d] for d in kept])),
           Operand(ptr(x), 0, [xs[d] for d in kept])]
    return loop_nest([shape[d] for d in kept], ops, lambda o: [
        f"{T} best = {ptr(x)}[{o[1]}]; int64_t bi = 0;",
        f"for (int64_t j = 1; j < {n}; j++) {{ {T} v = {ptr(x)}[{o[1]} + j * {step}];",
        f"  if (v {cmp} best || (v != v && best == best)) {{ best = v; bi = j; }} }}",
        f"{ptr(node)}[{o[0]}] = bi;"])


# ---- data movement ------------------------------------------------------------------------

# a copy of this many elements or more (a slice of a layer's gradient rows out of a scan's
# result: 1120x1024 floats) runs as a job of the runtime's pool, in blocks of COPY_BLOCK_MIN
COPY_PARALLEL_MIN = 1 << 16
COPY_BLOCK_MIN = 1 << 14


def _copy(node, ptr, src, strides, base=0, em=None):
    """The loop writing node from src read at `strides`; with `em`, a large one is a
    parallel job: a static function copying one block of its outermost dimension."""
    T = ctype(node.dtype)
    ops = [Operand(ptr(node), 0, contiguous_strides(node.shape)), Operand(ptr(src), base, strides)]

    def nest(block=None):
        return loop_nest(node.shape, ops, lambda o: [
            f"{ptr(node)}[{o[0]}] = ({T}){ptr(src)}[{o[1]}];"], block=block)
    threads = thread_count()
    if em is None or is_runtime(node.size) or node.size < COPY_PARALLEL_MIN or threads < 2:
        return nest()
    blocks = min(node.size // COPY_BLOCK_MIN, 4 * threads)
    return pool_job(em, "copy", f"a copy: {node.op} -> {node.name}", blocks,
                    lambda b: [nest((b, blocks))])


def transpose(node, ptr):
    x = node.inputs[0]
    xs = contiguous_strides(x.shape)
    return _copy(node, ptr, x, [xs[a] for a in node.attrs["axes"]])


def broadcast_to(node, ptr):
    x = node.inputs[0]
    return _copy(node, ptr, x, broadcast_strides(x.shape, node.shape))


def _slice_geometry(shape, attrs):
    """Per axis, the first index read and the number of items of a slice node's window:
    the op's own clamping (ops/shape.py), so a begin or end past the axis reads and writes
    nothing outside it."""
    triples = list(zip(shape, attrs["begin"], attrs["end"], attrs["step"]))
    return ([slice_start(*t) for t in triples], tuple(slice_len(*t) for t in triples))


def slice_assign(node, ptr):
    x, v = node.inputs
    a = node.attrs
    T = ctype(node.dtype)
    starts, target = _slice_geometry(node.shape, a)
    os_ = contiguous_strides(node.shape)
    base = sum(b * s for b, s in zip(starts, os_))
    copy = f"  memcpy({ptr(node)}, {ptr(x)}, {node.size * node.dtype.itemsize});"
    ops = [Operand(ptr(node), base, [s * st for s, st in zip(os_, a["step"])]),
           Operand(ptr(v), 0, broadcast_strides(v.shape, target))]
    return copy + "\n" + loop_nest(target, ops,
                                   lambda o: [f"{ptr(node)}[{o[0]}] = ({T}){ptr(v)}[{o[1]}];"])


def concatenate(node, ptr):
    axis = node.attrs["axis"] % node.ndim
    os_ = contiguous_strides(node.shape)
    T = ctype(node.dtype)
    parts, start = [], 0
    for x in node.inputs:
        ops = [Operand(ptr(node), start * os_[axis], os_),
               Operand(ptr(x), 0, contiguous_strides(x.shape))]
        parts.append(loop_nest(x.shape, ops,
                               lambda o, x=x: [f"{ptr(node)}[{o[0]}] = ({T}){ptr(x)}[{o[1]}];"]))
        start += x.shape[axis]
    return "\n".join(p for p in parts if p)


def _gather_dims(x_shape, axis, idx_size):
    pre = int(_np.prod(x_shape[:axis], dtype=_np.int64))
    post = int(_np.prod(x_shape[axis + 1:], dtype=_np.int64))
    return pre, x_shape[axis], idx_size, post


def take(node, ptr):
    x, idx = node.inputs
    axis = node.attrs["axis"] % x.ndim
    pre, n, ni, post = _gather_dims(x.shape, axis, idx.size)
    fix = "kiln_wrap_index" if node.attrs.get("mode") == "wrap" else "kiln_clip_index"
    return (f"  for (int64_t p = 0; p < {pre}; p++) for (int64_t i = 0; i < {ni}; i++) {{\n"
            f"    int64_t j = {fix}((int64_t){ptr(idx)}[i], {n});\n"
            f"    for (int64_t q = 0; q < {post}; q++) {ptr(node)}[(p * {ni} + i) * {post} + q] = "
            f"{ptr(x)}[(p * {n} + j) * {post} + q];\n  }}")


def scatter_add(node, ptr):
    g, idx = node.inputs
    axis = node.attrs["axis"] % node.ndim
    n = node.attrs["size"]
    pre, _, ni, post = _gather_dims(node.shape, axis, idx.size)
    fix = "kiln_wrap_index" if node.attrs.get("mode") == "wrap" else "kiln_clip_index"
    return (f"  memset({ptr(node)}, 0, {node.size * node.dtype.itemsize});\n"
            f"  for (int64_t p = 0; p < {pre}; p++) for (int64_t i = 0; i < {ni}; i++) {{\n"
            f"    int64_t j = {fix}((int64_t){ptr(idx)}[i], {n});\n"
            f"    for (int64_t q = 0; q < {post}; q++) {ptr(node)}[(p * {n} + j) * {post} + q] += "
            f"{ptr(g)}[(p * {ni} + i) * {post} + q];\n  }}")


def full(node, ptr):
    value = c_literal(node.attrs["value"], node.dtype)
    return f"  for (int64_t j = 0; j < {node.size}; j++) {ptr(node)}[j] = {value};"


# ---- sliding windows ----------------------------------------------------------------------

def _window_loops(x_shape, out_sp, a):
    """Loop headers over (n, o..., c, k...) and the input coordinate expressions."""
    nsp = len(a["kernel"])
    heads = [f"for (int64_t n = 0; n < {x_shape[0]}; n++)"]    # (a run-time batch too)
    heads += [f"for (int64_t o{d} = 0; o{d} < {out_sp[d]}; o{d}++)" for d in range(nsp)]
    heads += [f"for (int64_t c = 0; c < {x_shape[1]}; c++)"]
    heads += [f"for (int64_t k{d} = 0; k{d} < {a['kernel'][d]}; k{d}++)" for d in range(nsp)]
    coords = [f"(o{d} * {a['stride'][d]} + k{d} * {a['dilation'][d]} - {a['pad'][2 * d]})"
              for d in range(nsp)]
    inside = " && ".join(f"p{d} >= 0 && p{d} < {x_shape[2 + d]}" for d in range(nsp))
    xs = contiguous_strides(x_shape)
    offset = " + ".join([f"n * {xs[0]}", f"c * {xs[1]}"] +
                        [f"p{d} * {xs[2 + d]}" for d in range(nsp)])
    decl = " ".join(f"int64_t p{d} = {coords[d]};" for d in range(nsp))
    return heads, decl, inside, offset


def windows(node, ptr):
    x = node.inputs[0]
    a = node.attrs
    nsp = len(a["kernel"])
    heads, decl, inside, offset = _window_loops(x.shape, node.shape[1:1 + nsp], a)
    T = ctype(node.dtype)
    pad = c_literal(a.get("pad_value", 0.0), node.dtype)
    return (f"  {{ {T} *dst = {ptr(node)};\n  " + "\n  ".join(heads)
            + f" {{\n    {decl}\n    *dst++ = ({inside}) ? {ptr(x)}[{offset}] : ({T}){pad};\n"
            + "  } }")


def unwindows(node, ptr):
    g = node.inputs[0]
    a = node.attrs
    nsp = len(a["kernel"])
    heads, decl, inside, offset = _window_loops(node.shape, g.shape[1:1 + nsp], a)
    T = ctype(node.dtype)
    return (f"  memset({ptr(node)}, 0, {node.size * node.dtype.itemsize});\n"
            f"  {{ const {T} *src = {ptr(g)};\n  " + "\n  ".join(heads)
            + f" {{\n    {decl}\n    if ({inside}) {ptr(node)}[{offset}] += *src;\n"
            + "    src++;\n  } }")


def read_transposed_by_matmuls(node, users, outputs):
    """A 2-D transpose read only by matmuls costs nothing: they read it transposed."""
    return (node.ndim == 2 and node.attrs["axes"] == (1, 0)
            and id(node) not in outputs and users[id(node)]
            and all(u.op == "matmul" for u in users[id(node)]))


register_kernels({
    "sum": reduction, "prod": reduction, "max": reduction, "min": reduction,
    "argmax": arg_reduction, "argmin": arg_reduction,
    "broadcast_to": broadcast_to, "slice_assign": slice_assign,
    "concatenate": concatenate, "take": take, "scatter_add": scatter_add, "full": full,
    "windows": windows, "unwindows": unwindows,
})
register(("transpose",), Kernel(transpose, view_when=read_transposed_by_matmuls))
register(("reshape",), VIEW)
register(("matmul",), MATMUL)
