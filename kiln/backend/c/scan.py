"""Lowering `scan` and `scan_grad` (kiln/ops/scan.py) into the generated C source.

The body (and, for scan_grad, the body's gradient graph) is one static function, as for
while_loop (control.py). Its inputs are bound table slots pointed at their data, so a row
x[t] of a sequence, a row of the incoming gradient or a recorded state costs a pointer
assignment, not a copy; so are the outputs it can write where they go (Sub's placed
outputs): the rest are copied there after the step.

  scan       the state before step i is its row i of the history in the node's flat
             result, where the step reads it; the step writes its new state into row
             i + 1 (the last step into the final pieces) and y_t into its row.
  scan_grad  walks the steps in reverse through the body's gradient graph, reading the
             states from the forward result's history: x[t]'s gradient goes into its row
             of the result, the invariants' gradients add up, the carried gradients flow
             to the step before (two buffers each: a step reads one, writes the other).

Both group classes are registered as their ops' C lowerings (lowering.Control).
"""
from ..._core.ir import Graph
from ..._core.symdim import provably
from ...graph.passes.pipeline import run_pipeline
from ...ops.scan import layout, grad_dtype, saved_nodes
from . import scan_hoist
from .control import Sub
from .loops import ctype
from .lowering import Control, register


def _nbytes(shape, dtype):
    """Bytes of a shape; with a run-time length, an expression the C computes per call."""
    n = dtype.itemsize
    for d in shape:
        n = n * d
    return n


def _point(dst, src, offset):
    return f"P[{dst}] = (char *)P[{src}] + {offset};"


def _accumulate(dst, src, x):
    """C statement: dst[j] += src[j] over x.size elements of x's type (pointer exprs)."""
    c = ctype(x.dtype)
    return (f"    {{ {c} *acc = ({c} *)({dst}); const {c} *d = (const {c} *)({src}); "
            f"for (int64_t j = 0; j < {x.size}; j++) acc[j] += d[j]; }}")


class _ScanBase:
    @staticmethod
    def key(node):
        return (node.op, id(node))     # one node per construct (see kiln/ops/scan.py)

    def __init__(self, em, node, operands, fwd=True):
        a = node.attrs
        self.em, self.node = em, node
        self.body, self.n, self.n_xs, self.reverse = (a["body"], a["n_carried"], a["n_xs"],
                                                      a["reverse"])
        self.carried = operands[:self.n]
        self.xs = operands[self.n:self.n + self.n_xs]
        self.invariants = operands[self.n + self.n_xs:]
        self.length = self.xs[0].shape[0]      # the trip count, maybe a run-time size
        self.row_bytes = [_nbytes(x.shape[1:], x.dtype) for x in self.xs]
        self.sizes = [_nbytes(c.shape, c.dtype) for c in self.carried]
        pieces = layout(self.body, self.n, self.length)
        dtype = self.body.outputs[0].dtype
        self.offsets, offset = [], 0
        for shape in pieces:
            self.offsets.append(offset)
            offset += _nbytes(shape, dtype)
        self.y_bytes = [_nbytes(o.shape, o.dtype) for o in self.body.outputs[self.n:]]
        self.history = self.offsets[len(self.body.outputs):]
        self.out = em.new_buffer(_nbytes(node.shape, node.dtype))
        first = self.n + self.n_xs        # the invariants follow the carried values and rows
        self.invariant_inputs = range(first, first + len(self.invariants))
        self.fwd = Sub(em, self.body, self.body.outputs, "scan body", self.invariant_inputs,
                       placed=range(len(self.body.outputs))) if fwd else None

    def output_slot(self, node):
        return self.out

    def time(self):
        """C expression of the time index t at processing step i."""
        return f"({self.length - 1} - i)" if self.reverse else "i"

    def bind_rows(self, sub, storage, indent="    "):
        rows = sub.inputs[self.n:self.n + self.n_xs]
        return [indent + _point(d, storage(x), f"t * {b}")
                for d, x, b in zip(rows, self.xs, self.row_bytes)]


def _if_steps(length, test, statement):
    """statement where `length test 0` holds (a run-time length tests it when it runs)."""
    if isinstance(length, int):
        holds = length > 0 if test == ">" else length == 0
        return [f"  {statement}"] if holds else []
    return [f"  if ({length} {test} 0) {statement}"]


class ScanGroup(_ScanBase):
    """The state before step i lies in its history row i, where the step reads it: row 0
    starts as the initial value, and step i writes its carried results into row i + 1
    (the last step into their final pieces), its outputs into their rows, each computed
    there where the body can (Sub's placed outputs), else copied after the step."""

    def __init__(self, em, node, members):
        super().__init__(em, node, node.inputs)

    def _destination(self, k):
        """C address where step i writes body output k."""
        out, T = self.out, self.length
        if k < self.n:
            h, b = self.history[k], self.sizes[k]
            return f"(char *)P[{out}] + (i + 1 < {T} ? {h} + (i + 1) * {b} : {self.offsets[k]})"
        return f"(char *)P[{out}] + {self.offsets[k]} + t * {self.y_bytes[k - self.n]}"

    def code(self, storage):
        n, nx, out, fwd = self.n, self.n_xs, self.out, self.fwd
        lines = []
        for c, h, off, b in zip(self.carried, self.history, self.offsets, self.sizes):
            if b:
                copy = f"memcpy((char *)P[{out}] + {{}}, P[{storage(c)}], {b});"
                lines += _if_steps(self.length, ">", copy.format(h))
                lines += _if_steps(self.length, "==", copy.format(off))   # no step runs
        inv = fwd.inputs[n + nx:n + nx + len(self.invariants)]
        lines += [f"  P[{d}] = P[{storage(x)}];" for d, x in zip(inv, self.invariants)]
        lines += fwd.begin_loop()
        lines += [f"  for (int64_t i = 0; i < {self.length}; i++) {{",
                  f"    int64_t t = {self.time()};"]
        lines += [f"    {_point(d, out, f'{h} + i * {b}')}"
                  for d, h, b in zip(fwd.inputs[:n], self.history, self.sizes)]
        lines += self.bind_rows(fwd, storage)
        sizes = self.sizes + self.y_bytes
        lines += [f"    P[{fwd.placed[k]}] = {self._destination(k)};"
                  for k in range(len(sizes)) if k in fwd.placed]
        lines.append("  " + fwd.call())
        lines += [f"    memcpy({self._destination(k)}, P[{fwd.outputs[k]}], {b});"
                  for k, b in enumerate(sizes) if b and k not in fwd.placed]
        return lines + ["  }"]


class ScanGradGroup(_ScanBase):
    def __init__(self, em, node, members):
        super().__init__(em, node, node.inputs[:-2], fwd=False)
        from ...ops.subgraph import vjp_graph
        self.forward_out, self.g = node.inputs[-2], node.inputs[-1]
        self.n_saved = node.attrs["n_saved"]
        dtype = grad_dtype(self.body)
        operands = self.carried + self.xs + self.invariants
        self.grad_offset, offset = [], 0       # byte offset in the result, or None
        for x in operands:
            if x.dtype == dtype:
                self.grad_offset.append(offset)
                offset += _nbytes(x.shape, x.dtype)
            else:
                self.grad_offset.append(None)
        # with g_window, step outputs outside the window get no gradient: their cotangent
        # inputs are zeros the pruned-backward pipeline folds away (no add of a zero row)
        window = node.attrs.get("g_window")
        self.window = None if window is None else tuple(k * self.g.dtype.itemsize
                                                         for k in window)
        vjp = vjp_graph(self.body, tuple(range(len(self.body.outputs))),
                        saved_nodes(self.body, self.n_saved))
        cotangents = vjp.inputs[len(vjp.inputs) - len(self.body.outputs):]
        absent = [c for c, off, b in zip(cotangents[self.n:], self.offsets[self.n:],
                                         self.y_bytes)
                  if self._g(None, off, self.length * b) is None]
        vjp = run_pipeline("pruned-backward", Graph(vjp.inputs, [], vjp.outputs, vjp.name),
                           cotangents=cotangents, absent=absent)
        n, nx = self.n, self.n_xs
        self.hoisted, outputs = scan_hoist.plan(vjp, n, nx, len(self.invariants), self.length,
                                                self.reverse, self.grad_offset)
        extra = len(vjp.outputs)
        # written where they go: the carried gradients, the sequences' gradient rows, the
        # rows the stacks keep
        self.vjp = Sub(em, Graph(vjp.inputs, [], outputs, vjp.name), outputs,
                       "scan body gradient", self.invariant_inputs,
                       placed=[k for k in range(n + nx)
                               if k < n or self.grad_offset[k] is not None]
                       + list(range(extra, len(outputs))))
        self.stacks = scan_hoist.Stacks(em, self.hoisted, self.length, {
            id(node): slot for node, slot in zip(outputs[extra:], self.vjp.outputs[extra:])},
            {id(outputs[k]): self.vjp.placed[k] for k in range(extra, len(outputs))
             if k in self.vjp.placed})
        # each carried gradient in two buffers: a step reads the current one and writes
        # the next (bound slots say which is which; they swap after the step)
        self.g_carried = [em.new_buffer(b) for b in self.sizes]
        self.g_spare = [em.new_buffer(b) for b in self.sizes]
        self.g_now = [em.add_slot(("bound", f"scan gradient state {k}")) for k in range(n)]
        self.g_next = [em.add_slot(("bound", f"scan gradient next {k}")) for k in range(n)]
        # step outputs outside the window (unread after pruning) point at a row of zeros
        self.zero_row = em.new_buffer(max(self.y_bytes)) \
            if self.window is not None and self.y_bytes and max(self.y_bytes) else None

    def _g(self, g, offset, nbytes):
        """(slot, byte offset) of the incoming gradient of the piece of `nbytes` bytes at
        `offset` into scan's layout, None where it is known to be zero (outside the
        g_window)."""
        if self.window is None:
            return g, offset
        begin, end = self.window
        # each piece lies inside or outside the window at every size (scan_grad_window)
        inside = provably(begin, "<=", offset) and provably(offset + nbytes, "<=", end)
        return (g, offset - begin) if inside else None

    def code(self, storage):
        n, nx, T = self.n, self.n_xs, self.length
        out, g, fwd = self.out, storage(self.g), storage(self.forward_out)
        lines = []
        # the invariants' gradients accumulate in the result
        inv_offsets = self.grad_offset[n + nx:]
        hoisted = {h.k for h in self.hoisted}     # written whole after the loop
        for k, (x, off) in enumerate(zip(self.invariants, inv_offsets)):
            if off is not None and x.size and k not in hoisted:
                lines.append(f"  memset((char *)P[{out}] + {off}, 0, "
                             f"{_nbytes(x.shape, x.dtype)});")
        for gc, off, b in zip(self.g_carried, self.offsets, self.sizes):
            at = self._g(g, off, b)
            if b:
                lines.append(f"  memset(P[{gc}], 0, {b});" if at is None else
                             f"  memcpy(P[{gc}], (char *)P[{at[0]}] + {at[1]}, {b});")
        if self.zero_row is not None:
            lines.append(f"  memset(P[{self.zero_row}], 0, {max(self.y_bytes)});")
        vin = self.vjp.inputs
        n_in = n + nx + len(self.invariants)
        inv = vin[n + nx:n_in]
        # the saved intermediates, step outputs of the forward, come in as given values
        known, vin = vin[n_in:n_in + self.n_saved], vin[:n_in] + vin[n_in + self.n_saved:]
        n_outs = len(self.body.outputs)
        saved_at = list(zip(self.offsets[n_outs - self.n_saved:n_outs],
                            self.y_bytes[len(self.y_bytes) - self.n_saved:]))
        lines += [f"  P[{d}] = P[{storage(x)}];" for d, x in zip(inv, self.invariants)]
        lines += [f"  P[{now}] = P[{a}]; P[{nxt}] = P[{b}];" for now, nxt, a, b
                  in zip(self.g_now, self.g_next, self.g_carried, self.g_spare)]
        lines += self.vjp.begin_loop()
        lines += [f"  for (int64_t i = {T - 1}; i >= 0; i--) {{",
                  f"    int64_t t = {self.time()};"]
        lines += [f"    {_point(d, fwd, f'{h} + i * {b}')}"
                  for d, h, b in zip(vin[:n], self.history, self.sizes)]
        lines += self.bind_rows(self.vjp, storage)
        lines += [f"    {_point(d, fwd, f'{off} + t * {b}')}"
                  for d, (off, b) in zip(known, saved_at)]
        for d, off, b in zip(vin[n_in + n:], self.offsets[n:], self.y_bytes):
            at = self._g(g, off, T * b)
            lines.append(f"    P[{d}] = P[{self.zero_row}];" if at is None else
                         f"    {_point(d, at[0], f'{at[1]} + t * {b}')}")
        lines += [f"    P[{d}] = P[{now}];" for d, now in zip(vin[n_in:n_in + n], self.g_now)]
        placed = self.vjp.placed
        # where the step's carried gradients and sequence gradient rows go
        dests = [(k, f"P[{self.g_next[k]}]", b) for k, b in enumerate(self.sizes)] + [
            (n + j, f"(char *)P[{out}] + {off} + t * {b}", b)
            for j, (off, b) in enumerate(zip(self.grad_offset[n:n + nx], self.row_bytes))
            if off is not None]
        lines += [f"    P[{placed[k]}] = {dest};" for k, dest, _ in dests if k in placed]
        lines += self.stacks.place()
        lines.append("  " + self.vjp.call())
        lines += self.stacks.per_step(self.vjp.inputs)
        outs = self.vjp.outputs
        lines += [f"    memcpy({dest}, P[{outs[k]}], {b});" for k, dest, b in dests
                  if b and k not in placed]
        for k, (src, x, off) in enumerate(zip(outs[n + nx:], self.invariants, inv_offsets)):
            if off is not None and x.size and k not in hoisted:
                lines.append(_accumulate(f"(char *)P[{out}] + {off}", f"P[{src}]", x))
        lines += [f"    {{ void *s = P[{now}]; P[{now}] = P[{nxt}]; P[{nxt}] = s; }}"
                  for now, nxt in zip(self.g_now, self.g_next)]
        for now, x, h in zip(self.g_now, self.carried, self.history):
            at = self._g(g, h, T * _nbytes(x.shape, x.dtype))
            if x.size and at is not None:
                # the history row i is the state before step i: its gradient joins
                lines.append(_accumulate(f"P[{now}]", f"(char *)P[{at[0]}] + {at[1]} + i * "
                                         f"{_nbytes(x.shape, x.dtype)}", x))
        lines.append("  }")
        rows = {"history": lambda k: f"(char *)P[{fwd}] + {self.history[k]}",
                "xs": lambda k: f"(char *)P[{storage(self.xs[k])}]",
                "xsgrad": lambda k: f"(char *)P[{out}] + {self.grad_offset[n + k]}"}
        lines += self.stacks.after(lambda k: f"(char *)P[{out}] + {inv_offsets[k]}",
                                   lambda kind, k: rows[kind](k))
        for now, off, b in zip(self.g_now, self.grad_offset[:n], self.sizes):
            if off is not None and b:
                lines.append(f"  memcpy((char *)P[{out}] + {off}, P[{now}], {b});")
        return lines


register(("scan",), Control(ScanGroup))
register(("scan_grad",), Control(ScanGradGroup))
