"""Lowering `cond`, `while_loop` and `while_loop_grad` into the generated C source.

Each subgraph is optimized and emitted (through codegen.emit_graph) as its own static
function `static int kiln_subN(void **P)` in the same source, sharing the parent's pointer
table. A subgraph's inputs are table slots of kind 'bound': the caller points them at the
operands' storage (`P[in] = P[operand]`) instead of copying, which is safe because a
planned graph never writes into its inputs (the memory planner only reuses buffers of
computed values). Its outputs are wherever its own plan put them.

The IR has one node per result of a construct (selected by `index`); nodes that share
operands and subgraphs (the group class's `key`) form one group (lowering.ControlFlow
collects them) that runs once, at its first node in the schedule,
and writes every result into buffers of its own. Those buffers are outside the parent's
memory plan, so no later step can reuse them while a group member is still to be read.
Each group gets its own instance of the subgraph functions (and so its own buffers), even
when two groups share a subgraph object: no call can clobber another group's values.

  cond             evaluate the size-1 predicate (nonzero: then-branch), call one branch,
                   copy the results used by the graph into the group's buffers.
  while_loop       the carried values live in the group's state buffers; each iteration
                   calls the condition, then the body, then copies the body's results back.
                   No cap is added: only the op's own max_iterations stops it early.
  while_loop_grad  the forward loop again, recording each iteration's carried values in a
                   fixed history of K states (K from HISTORY_BYTES and max_iterations), then
                   the body's gradient graph in reverse. A state past the history is rebuilt
                   from the last recorded one by re-running the body, so memory stays static
                   and only trip counts above K pay extra (quadratically in the excess).

Each group class is registered as its op's C lowering (lowering.Control); scan.py registers
scan's.
"""
from ..._core.ir import Graph
from ...graph.passes.pipeline import run_pipeline
from ...ops.subgraph import vjp_graph
from ...ops.registry import REGISTRY
from .codegen import emit_graph
from .loops import ctype
from .lowering import Control, NotLowerable, register

# bytes of loop state a while_loop_grad may record before it switches to recomputation
HISTORY_BYTES = 1 << 22
# the count of loop runs, whose stamps (Sub.begin_loop) are never zero and never repeat
LOOP_RUNS = "static int64_t kiln_loop_runs = 0;"


def _nbytes(node):
    return node.size * node.dtype.itemsize


class Sub:
    """One emitted instance of a subgraph: function name, input slots, output slots.

    invariants: indices of inputs the caller binds once for a whole loop (a scan's
    invariants). A oneDNN matmul reading one keeps its packed copy under the loop run's
    stamp (dnnl_dense.emit), so it is made at the run's first step only; begin_loop() gives
    each run a stamp no earlier run of any loop had."""

    def __init__(self, em, graph, outputs, what, invariants=(), placed=()):
        g = run_pipeline("generic", Graph(graph.inputs, [], outputs, graph.name))
        if g.params:
            raise NotLowerable(f"subgraph {graph.name} reads parameters")
        for n in g.nodes:
            if not n.is_source and REGISTRY[n.op].random:
                # random slots are drawn once per call from Python, not once per iteration
                raise NotLowerable(f"random op {n.op} inside subgraph {graph.name}")
        self.inputs = [em.add_slot(("bound", f"{graph.name} input {k}"))
                       for k in range(len(g.inputs))]
        self.stamp = em.add_slot(("bound", f"{graph.name} loop stamp")) if invariants else None
        for k in invariants:
            em.loop_stamps[self.inputs[k]] = f"(int64_t)(intptr_t)P[{self.stamp}]"
        if invariants and LOOP_RUNS not in em.functions:
            em.functions.append(LOOP_RUNS)
        body, self.outputs, plan = emit_graph(em, g, self.inputs, [], placed=placed)
        # output index -> a slot the caller points where that output is to be written
        self.placed = plan.placed_outputs
        self.name = em.add_function(body, f"{what}: subgraph {graph.name}")
        self.nodes = g.outputs

    def begin_loop(self):
        """C run before the loop's first step (after its invariants are bound)."""
        if self.stamp is None:
            return []
        return [f"  P[{self.stamp}] = (void *)(intptr_t)"
                "__atomic_add_fetch(&kiln_loop_runs, 1, __ATOMIC_RELAXED);"]

    def bind(self, slots):
        return [f"  P[{d}] = P[{s}];" for d, s in zip(self.inputs, slots) if d != s]

    def call(self):
        return f"  if ((rc = {self.name}(P)) != 0) return rc;"

    def truth(self):
        """C test of output 0, the size-1 predicate (nonzero means true, as bool() does)."""
        node = self.nodes[0]
        if node.size != 1:
            raise NotLowerable(f"condition of shape {node.shape} (must have one element)")
        return f"(*({ctype(node.dtype)} *)P[{self.outputs[0]}] != 0)"


def _memcpy(dst, src, nbytes):
    return [f"  memcpy(P[{dst}], P[{src}], {nbytes});"] if nbytes and dst != src else []


def copy_back(em, pairs, aliases):
    """Copy (dst slot, src slot, nbytes) triples as one simultaneous assignment.

    aliases maps a bound input slot to the destination it points at. A source that is
    another pair's destination (say the body returns its carried values swapped) is first
    saved to a temporary, so no copy reads a value an earlier copy has overwritten."""
    dsts = {d for d, _, _ in pairs}
    first, then = [], []
    for dst, src, nbytes in pairs:
        real = aliases.get(src, src)
        if real == dst or not nbytes:
            continue
        if real in dsts:
            tmp = em.new_buffer(nbytes)
            first += _memcpy(tmp, src, nbytes)
            src = tmp
        then += _memcpy(dst, src, nbytes)
    return first + then


def _check_bound(operands, graph):
    """Operands bound to a subgraph's inputs have its input shapes and dtypes: bound, not
    copied, an operand smaller than the input the subgraph was made for would be read past
    its end. (A symbolic size compared with a subgraph's fixed one is pinned by the guard
    the comparison records: that build specializes.)"""
    for x, inp in zip(operands, graph.inputs):
        if tuple(x.shape) != tuple(inp.shape) or x.dtype != inp.dtype:
            raise NotLowerable(f"subgraph {graph.name} takes {inp.shape} {inp.dtype}, "
                               f"its operand is {x.shape} {x.dtype}")


class CondGroup:
    @staticmethod
    def key(node):
        a = node.attrs
        return ("cond", tuple(id(i) for i in node.inputs), id(a["then_graph"]),
                id(a["else_graph"]))

    def __init__(self, em, node, members):
        a = node.attrs
        pred = node.inputs[0]
        if pred.size != 1:
            raise NotLowerable(f"cond predicate of shape {pred.shape}")
        self.pred = pred
        self.operands = node.inputs[1:]
        for branch in (a["then_graph"], a["else_graph"]):
            _check_bound(self.operands, branch)
        self.indices = sorted({m.attrs["index"] for m in members})
        # only the results the graph reads are computed, as the NumPy path does
        self.then = Sub(em, a["then_graph"], [a["then_graph"].outputs[i] for i in self.indices],
                        "cond then")
        self.else_ = Sub(em, a["else_graph"], [a["else_graph"].outputs[i] for i in self.indices],
                         "cond else")
        self.sizes = [_nbytes(a["then_graph"].outputs[i]) for i in self.indices]
        self.out = {i: em.new_buffer(b) for i, b in zip(self.indices, self.sizes)}

    def output_slot(self, node):
        return self.out[node.attrs["index"]]

    def code(self, storage):
        operands = [storage(x) for x in self.operands]
        lines = [f"  if (*({ctype(self.pred.dtype)} *)P[{storage(self.pred)}] != 0) {{"]
        for branch, close in ((self.then, "  } else {"), (self.else_, "  }")):
            lines += branch.bind(operands) + [branch.call()]
            for i, src, nbytes in zip(self.indices, branch.outputs, self.sizes):
                lines += _memcpy(self.out[i], src, nbytes)
            lines.append(close)
        return lines


class LoopGroup:
    """while_loop: the carried values stay in this group's state buffers."""

    @staticmethod
    def key(node):
        a = node.attrs
        return (node.op, tuple(id(i) for i in node.inputs), id(a["cond_graph"]),
                id(a["body_graph"]), a["n_carried"], a["max_iterations"])

    def __init__(self, em, node, members):
        a = node.attrs
        self.em = em
        self.n = a["n_carried"]
        self.max_iterations = a["max_iterations"]
        operands = node.inputs[:len(a["body_graph"].inputs)]
        self.carried, self.invariants = operands[:self.n], operands[self.n:]
        self.sizes = [_nbytes(x) for x in self.carried]
        for x, out in zip(self.carried, a["body_graph"].outputs):
            if x.shape != out.shape or x.dtype != out.dtype:
                raise NotLowerable(f"loop body changes {x.shape} {x.dtype} to "
                                   f"{out.shape} {out.dtype}")
        self.state = [em.new_buffer(b) for b in self.sizes]
        self.cond = Sub(em, a["cond_graph"], a["cond_graph"].outputs[:1], "loop condition")
        self.body = Sub(em, a["body_graph"], a["body_graph"].outputs, "loop body")
        self.cond.truth()      # checks the condition's shape now: NotLowerable, not bad C

    def output_slot(self, node):
        return self.state[node.attrs["index"]]

    def start(self, storage):
        """Copy the initial carried values in and point both subgraphs at the state."""
        lines = []
        for dst, x, nbytes in zip(self.state, self.carried, self.sizes):
            lines += _memcpy(dst, storage(x), nbytes)
        ins = self.state + [storage(x) for x in self.invariants]
        return lines + self.cond.bind(ins) + self.body.bind(ins)

    def head(self):
        """Loop test: the op's own cap (if any), then the condition subgraph."""
        lines = []
        if self.max_iterations is not None:
            lines.append(f"    if (it >= {int(self.max_iterations)}LL) break;")
        return lines + ["  " + self.cond.call(), f"    if (!{self.cond.truth()}) break;"]

    def advance(self, indent="    "):
        """One body call, its results copied back into the state."""
        aliases = dict(zip(self.body.inputs, self.state))
        pairs = list(zip(self.state, self.body.outputs[:self.n], self.sizes))
        lines = [self.body.call()] + copy_back(self.em, pairs, aliases)
        return [indent + line.strip() for line in lines]

    def code(self, storage):
        return (self.start(storage) + ["  for (int64_t it = 0;; it++) {"] + self.head()
                + self.advance() + ["  }"])


class LoopGradGroup(LoopGroup):
    """while_loop_grad: every operand's gradient, into this group's gradient buffers."""

    @staticmethod
    def key(node):
        return LoopGroup.key(node) + (node.attrs["out_index"],)

    def __init__(self, em, node, members):
        super().__init__(em, node, members)
        a = node.attrs
        self.g = node.inputs[-1]
        target = self.carried[a["out_index"]]
        if self.g.shape != target.shape or self.g.dtype != target.dtype:
            raise NotLowerable("while_loop_grad: incoming gradient of another shape/dtype")
        self.out_index = a["out_index"]
        state_bytes = max(sum(self.sizes), 1)
        k = max(1, HISTORY_BYTES // state_bytes)
        if self.max_iterations is not None:
            k = max(1, min(k, int(self.max_iterations)))
        self.K = k
        self.history = [em.new_buffer(k * b) for b in self.sizes]
        vjp = vjp_graph(a["body_graph"], tuple(range(self.n)))
        self.vjp = Sub(em, vjp, vjp.outputs, "loop body gradient")
        self.inv_sizes = [_nbytes(x) for x in self.invariants]
        self.grads = [em.new_buffer(b) for b in self.sizes + self.inv_sizes]

    def output_slot(self, node):
        return self.grads[node.attrs["in_index"]]

    def code(self, storage):
        n, K = self.n, self.K
        lines = self.start(storage) + ["  int64_t trips = 0;",
                                       "  for (int64_t it = 0;; it++) {"] + self.head()
        lines.append(f"    if (it < {K}) {{")
        for h, s, b in zip(self.history, self.state, self.sizes):
            if b:
                lines.append(f"      memcpy((char *)P[{h}] + it * {b}, P[{s}], {b});")
        lines += ["    }"] + self.advance() + ["    trips = it + 1;", "  }"]
        # reverse sweep: gradients start as zero except the incoming one
        gc, gi = self.grads[:n], self.grads[n:]
        for slot, b in zip(self.grads, self.sizes + self.inv_sizes):
            if b:
                lines.append(f"  memset(P[{slot}], 0, {b});")
        lines += _memcpy(gc[self.out_index], storage(self.g), self.sizes[self.out_index])
        vin = self.vjp.inputs
        v_state, v_inv, v_grad = vin[:n], vin[n:n + len(self.invariants)], vin[len(vin) - n:]
        lines += [f"  P[{d}] = P[{storage(x)}];" for d, x in zip(v_inv, self.invariants)]
        lines += [f"  P[{d}] = P[{s}];" for d, s in zip(v_grad, gc)]
        lines.append("  for (int64_t k = trips - 1; k >= 0; k--) {")
        lines.append(f"    if (k < {K}) {{")
        lines += [f"      P[{d}] = (char *)P[{h}] + k * {b};"
                  for d, h, b in zip(v_state, self.history, self.sizes)]
        lines.append("    } else {   /* past the history: rebuild state k from state K-1 */")
        lines += [f"      memcpy(P[{s}], (char *)P[{h}] + {(K - 1) * b}, {b});"
                  for s, h, b in zip(self.state, self.history, self.sizes) if b]
        lines.append(f"      for (int64_t r = {K - 1}; r < k; r++) {{")
        lines += self.advance("        ")
        lines.append("      }")
        lines += [f"      P[{d}] = P[{s}];" for d, s in zip(v_state, self.state)]
        lines += ["    }", "  " + self.vjp.call()]
        outs = self.vjp.outputs
        for slot, src, x in zip(gi, outs[n:], self.invariants):
            if x.size:   # invariants are read by every iteration: their gradients add up
                T = ctype(x.dtype)
                lines.append(f"    for (int64_t j = 0; j < {x.size}; j++) (({T} *)P[{slot}])[j]"
                             f" += (({T} *)P[{src}])[j];")
        pairs = list(zip(gc, outs[:n], self.sizes))
        lines += ["  " + line for line in copy_back(self.em, pairs, dict(zip(v_grad, gc)))]
        lines.append("  }")
        return lines


register(("cond",), Control(CondGroup))
register(("while_loop",), Control(LoopGroup))
register(("while_loop_grad",), Control(LoopGradGroup))
