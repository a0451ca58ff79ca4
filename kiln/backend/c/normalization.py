"""C for the normalization primitives (kiln/ops/normalization.py): csrc/normalization.h's
row kernels, blocks of rows as tasks on the runtime's pool; registered as the primitives'
C lowerings (lowering.Kernel).

The operands are read where they lie, contiguous rows of the last axis. The kernels are
put into a program once, with the first node that needs them.
"""
from . import fixed_source
from .kernels import c_literal
from .loops import ctype
from .lowering import NotLowerable, register, Kernel
from .runtime import thread_count
from .sizes import is_runtime

ROWS_PARALLEL_MIN = 1 << 15     # elements; fewer run on the calling thread
TASKS_PER_THREAD = 4


def _prepare(node, em):
    T = ctype(node.dtype)
    if T not in ("float", "double"):
        raise NotLowerable(f"{node.op} in {node.dtype}")
    kernels = fixed_source.text("normalization.h")
    if kernels not in em.functions:
        em.functions.append(kernels)
    n = node.shape[-1]
    cap = TASKS_PER_THREAD * thread_count()
    if is_runtime(node.size):
        # sizes read at run time (sizes.py): the same choices, made in C on every call
        size, n = f"({node.size})", f"({n})"
        rows = f"({n} ? {size} / {n} : 0)"
        tasks = (f"({size} >= {ROWS_PARALLEL_MIN} && {rows} > 1 ? "
                 f"({rows} < {cap} ? {rows} : {cap}) : 1)")
        return T, n, rows, tasks, f"(({rows} + {tasks} - 1) / {tasks})"
    rows = node.size // n if n else 0
    tasks = 1
    if node.size >= ROWS_PARALLEL_MIN:
        tasks = max(1, min(rows, cap))
    return T, n, rows, tasks, -(-rows // tasks) if rows else 0


def _run(kind, T, fields, tasks):
    return "\n".join([
        "  {",
        f"    kiln_{kind}_{T} args = {{{', '.join(fields)}}};",
        f"    if (kiln_parallel_ptr && {tasks} > 1) "
        f"kiln_parallel_ptr(kiln_{kind}_task_{T}, &args, {tasks});",
        f"    else for (int64_t t = 0; t < {tasks}; t++) kiln_{kind}_task_{T}(&args, t);",
        "  }"])


def _same_dtype(node):
    """The row kernels read their inputs in the result's type: an integer input (the
    log-softmax of int64 labels is float64) is not theirs; the NumPy executor runs it."""
    for x in node.inputs:
        if x.dtype != node.dtype:
            raise NotLowerable(f"{node.op} of {x.dtype} into {node.dtype}")


def emit_layer_norm(node, ptr, em):
    _same_dtype(node)
    T, n, rows, tasks, per_task = _prepare(node, em)
    if not is_runtime(node.size) and node.size == 0:
        return ""
    x, gamma, beta = node.inputs
    fields = [ptr(x), ptr(gamma), ptr(beta), ptr(node), str(rows), str(n), str(per_task),
              str(int(gamma.size > 1)), str(int(beta.size > 1)),
              c_literal(node.attrs["eps"], node.dtype)]
    return _run("layer_norm", T, fields, tasks)


def emit_softmax(node, ptr, em):
    _same_dtype(node)
    T, n, rows, tasks, per_task = _prepare(node, em)
    if not is_runtime(node.size) and node.size == 0:
        return ""
    fields = [ptr(node.inputs[0]), ptr(node), str(rows), str(n), str(per_task),
              str(int(node.attrs["log"]))]
    return _run("softmax", T, fields, tasks)


register(("layer_norm",), Kernel(emit_layer_norm, with_emitter=True))
register(("softmax",), Kernel(emit_softmax, with_emitter=True))
