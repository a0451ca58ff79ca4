"""Two small-batch Dense layers run as one parallel job, the second split along its inputs.

At batch 1 a Dense layer streams its weight matrix from cache once, so its time is the
time to read the weights, and every core should read its share. Run one layer after the
other, and the second layer (in an MLP often a quarter of the first) either runs on one
core or pays a second handoff to the pool, which here costs about what it saves.

Instead, each block of the job computes a slice of the first layer's outputs (its bias
and activation included) and at once multiplies that slice by the matching columns of the
second layer's weights: a partial product of the second layer, kept in a scratch buffer
of its own. Blocks need nothing from one another, so the pool may run them on any thread
in any order (or all on the caller, when the other core is busy). After the job the
caller adds the partials in block order, so the result never depends on which thread ran
what, and applies the second layer's epilogue.

Measured on the seed MLP at batch 1, two cores, both forms compiled in one process and
timed in alternation: the whole program took 7.0-9.2 us with the layers as two steps and
5.7-7.6 us chained; six runs, five of them 1.0-1.9 us apart, one even.
"""
from .gemm_accumulate import accumulate_form
from .kernels import GEMM_BLAS_MIN_ROWS, GEMV_BLOCK_ROWS, GEMV_PARALLEL_MIN
from .loops import ctype, loop_nest
from .runtime import thread_count
from .sizes import is_runtime


def dense_form(step, is_alias):
    """(matmul, A, W) when `step` computes A @ W.T + epilogue with W read transposed in
    place (a Dense layer), every node of the step in one floating dtype; else None."""
    if step.kind != "matmul":
        return None
    mm = step.nodes[0]
    a, b = mm.inputs
    if mm.ndim != 2 or ctype(mm.dtype) not in ("float", "double"):
        return None
    if any(n.dtype != mm.dtype for n in step.nodes) or a.dtype != mm.dtype \
            or b.dtype != mm.dtype:
        return None
    if a.op == "transpose" and is_alias(a):
        return None
    if not (b.op == "transpose" and b.ndim == 2 and is_alias(b)):
        return None
    return mm, a, b.inputs[0]


def partner(steps, k, is_alias, storage, ptr, written):
    """The step to run in one job with steps[k], or None.

    written: ids of nodes computed straight into a parameter (param_writes.py), which
    keep their own code."""
    pair = _pair(steps, k, is_alias, storage, ptr, written)
    if pair is None:
        return None
    t, M, N1, K1 = pair
    if is_runtime(M) or not 1 <= M < GEMM_BLAS_MIN_ROWS or M * N1 * K1 < GEMV_PARALLEL_MIN:
        return None          # too small to be worth a parallel job at all, or too large
    return t


def partner_at_run_time(steps, k, is_alias, storage, ptr, written):
    """(the step to run in one job with steps[k], the C condition on the run-time rows
    under which the chain pays, as partner decides for a fixed row count), or None."""
    pair = _pair(steps, k, is_alias, storage, ptr, written)
    if pair is None or not is_runtime(pair[1]):
        return None
    t, M, N1, K1 = pair
    return t, (f"({M}) >= 1 && ({M}) < {GEMM_BLAS_MIN_ROWS} && "
               f"({M}) * {int(N1) * int(K1)} >= {GEMV_PARALLEL_MIN}")


def _pair(steps, k, is_alias, storage, ptr, written):
    """(next step, rows, first layer's outputs and inputs) when steps[k] and the next
    step are two Dense layers a chain may run, whatever the row count; else None."""
    first = dense_form(steps[k], is_alias)
    if first is None:
        return None
    nxt = next((s for s in steps[k + 1:] if s.kind not in ("alias", "random")), None)
    second = dense_form(nxt, is_alias) if nxt is not None else None
    if second is None:
        return None
    s, t = steps[k], nxt
    (mm1, a1, _), (mm2, a2, w2) = first, second
    M, K1 = a1.shape
    N1 = mm1.shape[1]
    if mm2.shape[0] is not M and mm2.shape[0] != M or a2 is not s.sink:
        return None
    if any(is_runtime(d) for d in (K1, N1, mm2.shape[1])):
        return None
    if N1 < 2 * GEMV_BLOCK_ROWS or mm2.shape[1] == 0:
        return None          # too small to be worth a parallel job at all
    if any(w2 is n for n in s.nodes) or id(s.sink) in written or id(t.sink) in written:
        return None
    if any(len(x.nodes) > 1 and accumulate_form(x, storage, ptr) is not None
           for x in (s, t)):
        return None
    return t, M, N1, K1


def block_rows(n, threads):
    """Outputs of the first layer per block: one block per thread, of at least
    GEMV_BLOCK_ROWS outputs, rounded to whole vectors of the dot-product kernels (16).
    Fewer, longer blocks pay: each block's partial product sums only its own slice of
    the second layer's inputs, and a short slice spends more on adding up vector lanes
    than on multiplying (on the seed MLP, 4 blocks of 64 took 1 us more than 2 of 128)."""
    rows = max(GEMV_BLOCK_ROWS, -(-n // max(1, threads)))
    return -(-rows // 16) * 16


def emit(em, s, t, is_alias, ptr, epilogue_parts):
    """C statements for kiln_run running steps s and t as one job; adds the job's block
    function to em. epilogue_parts(step) -> (operands, body) of an elementwise chain, as
    codegen's loop nests use them."""
    (mm1, a1, w1), (mm2, _, w2) = dense_form(s, is_alias), dense_form(t, is_alias)
    T = ctype(mm1.dtype)
    M, K1 = a1.shape
    N1, N2 = mm1.shape[1], mm2.shape[1]
    rows = block_rows(N1, thread_count())
    nblocks = -(-N1 // rows)
    partials = em.new_buffer(nblocks * M * N2 * mm1.dtype.itemsize)
    q = f"(({T} *)P[{partials}])"
    name = f"kiln_chain{len(em.functions)}"
    em.functions.append("\n".join([
        f"/* {_describe(s)}, then {_describe(t)}: block b computes outputs",
        f"   [b * {rows}, b * {rows} + {rows}) of the first and their part of the second */",
        f"static void {name}(void *ctx, int64_t b) {{",
        "  void **P = ctx;",
        f"  int64_t n0 = b * {rows}, n1 = n0 + {rows} < {N1} ? n0 + {rows} : {N1};",
        f"  kiln_nt_{T}({M}, n0, n1, {K1}, 1, {ptr(a1)}, {K1}, {ptr(w1)}, {K1}, 0, "
        f"{ptr(mm1)}, {N1});",
        *_column_epilogue(s, epilogue_parts),
        f"  kiln_nt_{T}({M}, 0, {N2}, n1 - n0, 1, {ptr(s.sink)} + n0, {N1}, {ptr(w2)} + n0, "
        f"{N1}, 0, {q} + b * {M * N2}, {N2});",
        "}"]))
    size = M * N2
    lines = [f"  if (kiln_parallel_ptr) kiln_parallel_ptr({name}, (void *)P, {nblocks});",
             f"  else for (int64_t b = 0; b < {nblocks}; b++) {name}((void *)P, b);",
             f"  for (int64_t i = 0; i < {size}; i++) {{",
             f"    {T} sum = {q}[i];",
             f"    for (int64_t b = 1; b < {nblocks}; b++) sum += {q}[b * {size} + i];",
             f"    {ptr(mm2)}[i] = sum;",
             "  }"]
    if len(t.nodes) > 1:
        operands, body = epilogue_parts(t)
        lines.append(loop_nest(t.sink.shape, operands, body))
    return lines


def _describe(step):
    return f"{', '.join(n.op for n in step.nodes)} -> {step.sink.name}"


def _column_epilogue(step, epilogue_parts):
    """The first layer's epilogue on its outputs [n0, n1), every row."""
    if len(step.nodes) < 2:
        return []
    operands, body = epilogue_parts(step)
    offsets = []
    for op in operands:
        terms = [f"m * {op.strides[0]}" if op.strides[0] else "",
                 ("n" if op.strides[1] == 1 else f"n * {op.strides[1]}")
                 if op.strides[1] else ""]
        offsets.append(" + ".join(x for x in terms if x) or "0")
    rows = step.sink.shape[0]
    return [f"  for (int64_t m = 0; m < {rows}; m++) for (int64_t n = n0; n < n1; n++) {{",
            *("    " + line for line in body(offsets)), "  }"]
