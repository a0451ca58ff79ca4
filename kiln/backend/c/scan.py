"""Lowering `scan` and `scan_grad` (kiln/ops/scan.py) into the generated C source.

The body (and, for scan_grad, the body's gradient graph) is one static function, as for
while_loop (control.py). Its inputs are bound table slots pointed at their data, so a row
x[t] of a sequence, a row of the incoming gradient or a recorded state costs a pointer
assignment, not a copy.

  scan       the carried values live in their pieces of the node's flat result; each step
             records them in their history rows, binds x[t], calls the body, copies the
             new carried values back and y_t into its row of the result.
  scan_grad  walks the steps in reverse through the body's gradient graph, reading the
             states from the forward result's history: x[t]'s gradient goes into its row
             of the result, the invariants' gradients add up, the carried gradients flow
             to the step before.

Both group classes are registered as their ops' C lowerings (lowering.Control).
"""
from ..._core.ir import Graph
from ..._core.symdim import provably
from ...graph.passes.pipeline import run_pipeline
from ...ops.scan import layout, grad_dtype, saved_nodes
from . import scan_hoist
from .control import Sub, copy_back
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
        self.state = [em.add_slot(("bound", f"scan state {k}")) for k in range(self.n)]
        first = self.n + self.n_xs        # the invariants follow the carried values and rows
        self.invariant_inputs = range(first, first + len(self.invariants))
        self.fwd = Sub(em, self.body, self.body.outputs, "scan body",
                       self.invariant_inputs) if fwd else None

    def output_slot(self, node):
        return self.out

    def time(self):
        """C expression of the time index t at processing step i."""
        return f"({self.length - 1} - i)" if self.reverse else "i"

    def bind_body(self, sub, storage, state_slots):
        """Point sub's carried / invariant inputs (the first inputs, as in the body)."""
        ins = sub.inputs
        lines = [f"  P[{d}] = P[{s}];" for d, s in zip(ins[:self.n], state_slots)]
        inv = ins[self.n + self.n_xs:self.n + self.n_xs + len(self.invariants)]
        return lines + [f"  P[{d}] = P[{storage(x)}];" for d, x in zip(inv, self.invariants)]

    def bind_rows(self, sub, storage, indent="    "):
        rows = sub.inputs[self.n:self.n + self.n_xs]
        return [indent + _point(d, storage(x), f"t * {b}")
                for d, x, b in zip(rows, self.xs, self.row_bytes)]

    def advance(self, indent="    "):
        """One body call; carried values copied back into the state slots."""
        aliases = dict(zip(self.fwd.inputs, self.state))
        pairs = list(zip(self.state, self.fwd.outputs[:self.n], self.sizes))
        return [indent + self.fwd.call().strip()] + [
            indent + line.strip() for line in copy_back(self.em, pairs, aliases)]


class ScanGroup(_ScanBase):
    def __init__(self, em, node, members):
        super().__init__(em, node, node.inputs)

    def code(self, storage):
        lines = [f"  {_point(s, self.out, off)}" for s, off in zip(self.state, self.offsets)]
        lines += [f"  memcpy(P[{s}], P[{storage(c)}], {b});"
                  for s, c, b in zip(self.state, self.carried, self.sizes) if b]
        lines += self.bind_body(self.fwd, storage, self.state) + self.fwd.begin_loop()
        lines += [f"  for (int64_t i = 0; i < {self.length}; i++) {{",
                  f"    int64_t t = {self.time()};"]
        lines += [f"    memcpy((char *)P[{self.out}] + {h} + i * {b}, P[{s}], {b});"
                  for h, s, b in zip(self.history, self.state, self.sizes) if b]
        lines += self.bind_rows(self.fwd, storage) + self.advance()
        for src, off, b in zip(self.fwd.outputs[self.n:], self.offsets[self.n:], self.y_bytes):
            if b:
                lines.append(f"    memcpy((char *)P[{self.out}] + {off} + t * {b}, P[{src}], "
                             f"{b});")
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
        self.vjp = Sub(em, Graph(vjp.inputs, [], outputs, vjp.name), outputs,
                       "scan body gradient", self.invariant_inputs)
        extra = len(vjp.outputs)
        self.stacks = scan_hoist.Stacks(em, self.hoisted, self.length, {
            id(node): slot for node, slot in zip(outputs[extra:], self.vjp.outputs[extra:])})
        self.g_carried = [em.new_buffer(b) for b in self.sizes]
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
        lines += [f"  P[{d}] = P[{s}];" for d, s in zip(vin[n_in:n_in + n], self.g_carried)]
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
        lines.append("  " + self.vjp.call())
        lines += self.stacks.per_step(self.vjp.inputs)
        outs = self.vjp.outputs
        for src, off, b in zip(outs[n:n + nx], self.grad_offset[n:n + nx], self.row_bytes):
            if off is not None and b:
                lines.append(f"    memcpy((char *)P[{out}] + {off} + t * {b}, P[{src}], {b});")
        for k, (src, x, off) in enumerate(zip(outs[n + nx:], self.invariants, inv_offsets)):
            if off is not None and x.size and k not in hoisted:
                lines.append(_accumulate(f"(char *)P[{out}] + {off}", f"P[{src}]", x))
        pairs = list(zip(self.g_carried, outs[:n], self.sizes))
        aliases = dict(zip(vin[n_in:n_in + n], self.g_carried))
        lines += ["  " + line for line in copy_back(self.em, pairs, aliases)]
        for gc, x, h in zip(self.g_carried, self.carried, self.history):
            at = self._g(g, h, T * _nbytes(x.shape, x.dtype))
            if x.size and at is not None:
                # the history row i is the state before step i: its gradient joins
                lines.append(_accumulate(f"P[{gc}]", f"(char *)P[{at[0]}] + {at[1]} + i * "
                                         f"{_nbytes(x.shape, x.dtype)}", x))
        lines.append("  }")
        rows = {"history": lambda k: f"(char *)P[{fwd}] + {self.history[k]}",
                "xs": lambda k: f"(char *)P[{storage(self.xs[k])}]",
                "xsgrad": lambda k: f"(char *)P[{out}] + {self.grad_offset[n + k]}"}
        lines += self.stacks.after(lambda k: f"(char *)P[{out}] + {inv_offsets[k]}",
                                   lambda kind, k: rows[kind](k))
        for gc, off, b in zip(self.g_carried, self.grad_offset[:n], self.sizes):
            if off is not None and b:
                lines.append(f"  memcpy((char *)P[{out}] + {off}, P[{gc}], {b});")
        return lines


register(("scan",), Control(ScanGroup))
register(("scan_grad",), Control(ScanGradGroup))
