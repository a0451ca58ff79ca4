"""Invariants' gradients of a scan, summed once after the loop instead of at every step.

A recurrent layer's weight gradient is a sum over time: dW_hh = sum_t dgates_t^T h_{t-1}.
Computed inside the backward loop, each step runs a thin matmul (the batch is the inner
dimension) and adds a weight-sized result into the total, so every step reads and writes
the whole weight gradient. Both factors are rows the loop has anyway: h_{t-1} is the
carried state's history the forward kept, and dgates_t is computed by the step. Stacking
them over time turns the T thin products into one matmul with T times the inner dimension
after the loop, which is how cuDNN and oneDNN's RNN primitives compute weight gradients.
A bias gradient (the step's rows summed) likewise becomes one sum over the stacked rows.

plan() finds, in the optimized gradient graph of the body, the invariants' gradients of the
forms matmul(transpose(A), B) and sum(A, axis=0) over 2-D per-step rows, and says where
each factor's rows lie: the carried state's history (row i: the state before step i), a
sequence operand (row t), or a stack the loop fills with a copy of the row after each step.
The summation order changes (one long dot product per element instead of T partial sums),
so results match the per-step loop within float rounding, not bit for bit.
"""
from . import dnnl_dense
from .kernels import ROW_BLOCK, rows_reduced
from .loops import ctype, pool_job
from .runtime import thread_count
from .sizes import is_runtime, maybe_nonempty

# memory the loop may take for stacks of rows it copies (a reversed layer's gradient rows);
# rows the forward or the result keep anyway cost nothing
MAX_STACK_BYTES = 1 << 28
# a sum of stacked rows over this many elements (an LSTM's bias gradient: T x batch rows of
# 4 x hidden) is split over the runtime's threads by blocks of columns
COLUMN_SUMS_PARALLEL_MIN = 1 << 16


class Factor:
    """Where one factor's rows come from: kind 'history' (carried k, row i), 'xs' (sequence
    k, row t), 'xsgrad' (sequence k's gradient in the result, row t) or 'copy' (a stack the
    loop fills by step from the body's gradient output or input named by `index`)."""

    def __init__(self, kind, index, node):
        self.kind, self.index, self.node = kind, index, node
        self.row_bytes = node.size * node.dtype.itemsize


class Hoisted:
    """Invariant k's gradient: 'matmul' (sum_t A_t^T B_t) or 'sum' (column sums of A_t)."""

    def __init__(self, k, form, factors):
        self.k, self.form, self.factors = k, form, factors


def _factor(node, g, n, nx, n_inv):
    """The Factor of a per-step row, or None when its rows are the same at every step."""
    for p, x in enumerate(g.inputs):
        if x is node:
            if p < n:
                return Factor("history", p, node)
            if p < n + nx:
                return Factor("xs", p - n, node)
            if p < n + nx + n_inv:
                return None          # an invariant: not a per-step row
            return Factor("copy", ("input", p), node)
    return Factor("copy", ("output", node), node)


def _match(o):
    """('matmul', A, B) / ('sum', A) for the hoistable forms, else None."""
    if o.op == "matmul" and o.ndim == 2 and len(o.inputs) == 2:
        t, b = o.inputs
        if (t.op == "transpose" and t.attrs.get("axes") == (1, 0) and t.inputs[0].ndim == 2
                and b.ndim == 2 and t.inputs[0].shape[0] == b.shape[0]):
            return ("matmul", t.inputs[0], b)
    if (o.op == "sum" and o.ndim == 1 and len(o.inputs) == 1 and o.inputs[0].ndim == 2
            and tuple(o.attrs.get("axis") or ()) == (0,) and not o.attrs.get("keepdims")):
        return ("sum", o.inputs[0])
    return None


def _in_result(f, g, n, nx, grad_offsets):
    """A copied row that is also a sequence's gradient: read from the result's rows instead."""
    if f.kind == "copy" and f.index[0] == "output":
        for j in range(nx):
            if g.outputs[n + j] is f.node and grad_offsets[n + j] is not None:
                return Factor("xsgrad", j, f.node)
    return f


def plan(g, n, nx, n_inv, length, reverse, grad_offsets):
    """(hoisted invariants, outputs the step must still produce) for the optimized
    gradient graph g; grad_offsets[p] is the byte offset of operand p's gradient in the
    result, None for an operand that gets none."""
    if not maybe_nonempty(length):
        return [], list(g.outputs)
    outputs = list(g.outputs)
    hoisted = []
    for k in range(n_inv):
        o = outputs[n + nx + k]
        found = _match(o) if grad_offsets[n + nx + k] is not None else None
        if found is None or ctype(o.dtype) not in ("float", "double"):
            continue
        form, operands = found[0], found[1:]
        if any(x.dtype != o.dtype for x in operands):
            continue
        factors = [_factor(x, g, n, nx, n_inv) for x in operands]
        if any(f is None for f in factors):
            continue
        factors = [_in_result(f, g, n, nx, grad_offsets) for f in factors]
        by_time = [f.kind in ("xs", "xsgrad") for f in factors]
        if reverse and any(by_time) and not all(by_time):
            # sequence rows go by time (t = T-1-i), the others by step (i): pair them by
            # copying the sequence's row into a stack by step
            factors = [Factor("copy", ("input", n + f.index), f.node) if f.kind == "xs" else
                       Factor("copy", ("output", f.node), f.node) if f.kind == "xsgrad" else
                       f for f in factors]
        stacks = {Stacks._key(f): length * f.row_bytes for h in hoisted + [Hoisted(k, form,
                  factors)] for f in h.factors if f.kind == "copy"}
        if stacks and (is_runtime(length) or sum(stacks.values()) > MAX_STACK_BYTES):
            continue     # a long (or run-time) sequence: the per-step sum needs no stack
        hoisted.append(Hoisted(k, form, factors))
    for h in hoisted:       # the step no longer computes the per-step product (a placeholder
                            # the loop never reads stands in its output place) ...
        outputs[n + nx + h.k] = g.inputs[0]
    extra = []
    for h in hoisted:       # ... but hands over the rows the stacks copy
        for f in h.factors:
            if f.kind == "copy" and f.index[0] == "output" and \
                    not any(x is f.index[1] for x in extra):
                extra.append(f.index[1])
    return hoisted, outputs + extra


class Stacks:
    """The C of a plan inside one scan_grad loop: stacks, per-step copies, final sums."""

    def __init__(self, em, hoisted, length, out_slots, placed=None):
        """out_slots: the Sub's output slot of each extra output node (by id); placed: the
        slot of each the body writes where the caller points it (its stack's row)."""
        self.em, self.hoisted, self.length = em, hoisted, length
        self.stack = {}      # id(factor source) -> buffer slot
        for h in hoisted:
            for f in h.factors:
                key = self._key(f)
                if f.kind == "copy" and key not in self.stack:
                    self.stack[key] = em.new_buffer(length * f.row_bytes)
        self.out_slots = out_slots
        self.placed = placed or {}

    def _copied(self):
        """(stack key, factor, where, what) of each stack the loop fills, once each."""
        done = set()
        for h in self.hoisted:
            for f in h.factors:
                key = self._key(f)
                if f.kind == "copy" and key not in done:
                    done.add(key)
                    yield key, f, f.index[0], f.index[1]

    def place(self):
        """C pointing the body's placed outputs at this step's rows of their stacks."""
        return [f"    P[{self.placed[id(what)]}] = (char *)P[{self.stack[key]}] + "
                f"i * {f.row_bytes};" for key, f, where, what in self._copied()
                if where == "output" and id(what) in self.placed]

    @staticmethod
    def _key(f):
        where, what = f.index if f.kind == "copy" else (f.kind, f.index)
        return (where, id(what) if where == "output" else what)

    def per_step(self, input_slots):
        """C copying this step's rows into their stacks (after the body's gradient ran)."""
        lines = []
        for key, f, where, what in self._copied():
            if where == "output" and id(what) in self.placed:
                continue            # written there by the body
            src = self.out_slots[id(what)] if where == "output" else input_slots[what]
            lines.append(f"    memcpy((char *)P[{self.stack[key]}] + i * {f.row_bytes}, "
                         f"P[{src}], {f.row_bytes});")
        return lines

    def after(self, out_ptr, rows_ptr):
        """C computing each hoisted gradient into out_ptr(k) from the full stacks;
        rows_ptr(kind, index) is where the rows of a 'history', 'xs' or 'xsgrad' factor start."""
        lines = []
        for h in self.hoisted:
            T = ctype(h.factors[0].node.dtype)
            out = f"(({T} *)({out_ptr(h.k)}))"
            bases = [f"(const {T} *)(" + (f"(char *)P[{self.stack[self._key(f)]}]"
                                          if f.kind == "copy" else rows_ptr(f.kind, f.index))
                     + ")" for f in h.factors]
            rows = self.length * h.factors[0].node.shape[0]
            if h.form == "matmul":
                a, b = (f.node.shape[1] for f in h.factors)
                # sum_t A_t^T B_t = A^T B over the stacked rows: a's columns are the rows
                on_dnnl = dnnl_dense.matmul_code(self.em, a, b, rows, bases[0], (1, a),
                                                 bases[1], (b, 1), out) if T == "float" \
                    else None
                lines.append(on_dnnl or f"  kiln_gemm_{T}(1, 0, {a}, {b}, {rows}, 1, "
                             f"{bases[0]}, {a}, {bases[1]}, {b}, 0, {out});")
                continue
            lines.append(self._column_sums(bases[0], out, T, rows, h.factors[0].node.shape[1]))
        return lines

    def _column_sums(self, x, out, T, rows, cols):
        """C summing the rows of x into out; a large sum as a job of the runtime's pool, a
        block of ROW_BLOCK columns per task (each column's order of additions unchanged)."""
        blocks = 0 if is_runtime(rows) or is_runtime(cols) else -(-cols // ROW_BLOCK)
        if blocks < 2 or rows * cols < COLUMN_SUMS_PARALLEL_MIN or thread_count() < 2:
            return rows_reduced(x, out, T, T, rows, cols)
        return pool_job(self.em, "column_sums", f"the column sums of {rows} stacked rows",
                        blocks, lambda b: [rows_reduced(x, out, T, T, rows, cols, block=b)])
