"""Generating one C source for an optimized graph.

The graph is first cut into steps (steps.py: one lookup of each node's C lowering decides
its step); in a loop's body, elementwise steps of one shape merge into one loop
(loop_merge.py). Memory is planned over the steps with the same liveness planner the
NumPy executor uses. All data pointers
come from one table `P` (inputs, parameters, constants, planned buffers, random draws),
filled once per plan. `emit_graph` is reusable: control.py calls it for each subgraph of
cond / while_loop and wraps the result in a static function that shares the table.
"""
from ...graph.passes.memory import plan_memory, MemoryPlan
from ...ops.registry import REGISTRY
from .loops import (Operand, loop_nest, contiguous_strides, broadcast_strides, ctype,
                    pool_job, prelude)
from .lowering import DRAWN, ControlFlow, lowering_of, register
from . import (collective, dense_chain, dnnl_dense, fixed_source, kernels, heavy, shared_reduce,
               vector_math)
from .sizes import SizeNames, is_runtime, maybe_nonempty, prelude as sizes_prelude, symbols_of
from .gemm_accumulate import accumulate_form
from .slice_views import slice_layout, window_offset
from .runtime import thread_count
from .param_writes import param_writes
from .steps import Step, build_steps, collapse, external_inputs
from . import loop_merge

# a random primitive's value is drawn by its eager kernel before each call (program.py)
register([name for name, prim in REGISTRY.items() if prim.random], DRAWN)


class Generated:
    """The C source plus everything the program needs to fill the pointer table."""

    def __init__(self):
        self.source = ""
        self.slots = []          # per table entry: ('input', k) | ('param', k) | ('const', arr)
                                 # | ('buffer', b) | ('random', node) | ('empty', node)
                                 # | ('pack_cache',): the runtime's state for one matmul
                                 # | ('bound', what): set by the generated code itself
        self.plan = None
        self.output_slots = []
        self.param_writes = set()    # output indices computed straight into a parameter


class Emitter:
    """One C source being generated. Its pointer table, buffers and static functions are
    shared by the top-level graph and every control-flow subgraph lowered into it, so a
    subgraph's values are just more table entries and more statically planned buffers."""

    def __init__(self):
        self.slots = []
        self.capacities = []     # bytes per buffer, over every (sub)graph of the source
        self.functions = []      # C text of static helper functions, callees first
        self.naive_bytes = 0
        self.param_writes = {}   # id(output node) -> parameter slot it is computed into
        self.window_sums = {}    # id(allreduce_wait) -> ranks' copies, summed where read
        self.loop_stamps = {}    # a loop invariant's bound slot -> its run's stamp (C)

    def add_slot(self, entry):
        self.slots.append(entry)
        return len(self.slots) - 1

    def new_buffer(self, nbytes):
        """A buffer of its own (not shared by any memory plan): a fresh table slot."""
        self.capacities.append(nbytes if is_runtime(nbytes) else int(nbytes))
        return self.add_slot(("buffer", len(self.capacities) - 1))

    def add_function(self, body, comment):
        name = f"kiln_sub{len(self.functions)}"
        self.functions.append("\n".join([f"/* {comment} */", f"static int {name}(void **P) {{",
                                          *body, "  return 0;", "}"]))
        return name


def generate(graph):
    """The C of `graph`. A graph with symbolic sizes reads them from a ('sizes',) table
    entry on every call (sizes.py); gen.sizes then names them in order, else it is None."""
    em = Emitter()
    symbols = symbols_of(graph)
    sizes = SizeNames(symbols) if symbols else None
    sizes_slot = em.add_slot(("sizes",)) if sizes is not None else None
    ins = [em.add_slot(("input", k)) for k in range(len(graph.inputs))]
    params = [em.add_slot(("param", k)) for k in range(len(graph.params))]
    if sizes is None:
        body, out_slots, plan = emit_graph(em, graph, ins, params, top=True)
    else:
        with sizes.rendering():
            body, out_slots, plan = emit_graph(em, graph, ins, params, top=True)
    gen = Generated()
    gen.sizes = sizes
    gen.slots = em.slots
    # emit_graph allocated the top graph's planned buffers first, so its buffer indices are
    # the source-wide ones; the capacities list also covers the subgraphs' buffers
    gen.plan = MemoryPlan(plan.buffer_of, em.capacities, em.naive_bytes, True, plan.donated)
    gen.output_slots = out_slots
    gen.param_writes = {k for k, o in enumerate(graph.outputs) if id(o) in em.param_writes}
    extra = [heavy.prelude()] if heavy.uses_heavy(em.slots) else []
    if getattr(em, "sized_dnnl", False):    # oneDNN calls of run-time sizes
        extra = [fixed_source.defines(dnnl_dense.grid_defines())
                 + fixed_source.text("sized_dnnl.h")]
    if sizes is not None:
        extra.insert(0, sizes_prelude(sizes_slot))
    gen.source = "\n".join([prelude(), kernels.gemm_prelude(), *extra, *em.functions,
                            "int kiln_run(void **P) {", *body, "  return 0;", "}", ""])
    return gen


def emit_graph(em, graph, input_slots, param_slots, top=False, placed=()):
    """C statements computing `graph` into table slots of `em`.

    input_slots/param_slots: the table entries holding graph.inputs / graph.params.
    placed: indices of outputs the caller would rather give memory for (a loop's step
    writing into its row of the result); those that can be are written where a bound slot
    points, set by the caller before each run. Returns (lines, output slots, the graph's
    memory plan); plan.placed_outputs maps each placed output index to its slot."""
    steps = build_steps(graph)
    written = []
    if not top:        # a loop body's elementwise steps, run at every iteration
        steps = loop_merge.merge(steps, graph)
        written = loop_merge.into_concat(steps, graph)
    cgraph, mapping = collapse(graph, steps)
    # emit steps in exactly the order the memory planner's liveness analysis assumed
    order = {id(n): k for k, n in enumerate(cgraph.nodes)}
    steps = sorted((s for s in steps if id(s.collapsed) in order),
                   key=lambda s: order[id(s.collapsed)])
    kinds = {id(s.collapsed): s.kind for s in steps}
    reduced = {id(s.collapsed) for s in steps
               if s.sink.op in ("allreduce", "allreduce_start", "allreduce_wait")}

    def writes_into(n):
        # control steps write their own dedicated buffers (see control.py)
        return kinds.get(id(n)) not in ("alias", "window", "random", "control") \
            and maybe_nonempty(n.size)

    value_of = {id(c): v for s in steps for v, c in [(s.sink, s.collapsed)] + s.stored_early}
    placeable = _placeable(graph, placed, lambda o: (c := mapping.get(id(o))) is not None
                           and value_of.get(id(c)) is o and writes_into(c))
    placed_nodes = [mapping[id(graph.outputs[k])] for k in placeable]
    plan = plan_memory(
        cgraph,
        is_view=lambda n: kinds.get(id(n)) in ("alias", "window"),
        writes_into=writes_into,
        own=placed_nodes + [c for s in steps for _, c in s.stored_early]
        + [mapping[id(n)] for n in written],
        # an allreduce reduces in place (MPI_IN_PLACE) when its input dies there
        inplace_ok=lambda n: kinds.get(id(n)) == "fused" or id(n) in reduced,
        # inputs the caller gives up (graph.donated_inputs: a backward's residuals)
        donated=[graph.inputs[k] for k in getattr(graph, "donated_inputs", ())] if top else ())
    em.naive_bytes += plan.naive_bytes
    slot_of = {}
    for n, k in zip(graph.inputs, input_slots):
        slot_of[id(n)] = k
    for n, k in zip(graph.params, param_slots):
        slot_of[id(n)] = k
    # a donated buffer is its input's slot (its own slot stays, so that buffer indices are
    # the source-wide ones, but gets no memory)
    placed_ids = {id(c) for c in placed_nodes}
    placed_buffers = {b for b, c in plan.own.items() if id(c) in placed_ids}
    buffer_slot = [em.new_buffer(0 if b in plan.donated or b in placed_buffers else c)
                   for b, c in enumerate(plan.capacities)]
    for b, x in plan.donated.items():
        buffer_slot[b] = slot_of[id(x)]
    for b in placed_buffers:
        buffer_slot[b] = em.add_slot(("bound", f"{plan.own[b].name}: placed by the caller"))
    plan.placed_outputs = {k: buffer_slot[plan.buffer_of[id(mapping[id(graph.outputs[k])])]]
                           for k in placeable}
    for n in graph.nodes:
        if n.op == "const":
            slot_of[id(n)] = em.add_slot(("const", n.value))
    flow = None
    if any(s.kind == "control" for s in steps):
        flow = ControlFlow(em, graph)

    def storage(node):
        """Table index holding `node`'s value (following aliases to their root)."""
        if id(node) in slot_of:
            return slot_of[id(node)]
        c = mapping[id(node)]
        step_kind = kinds.get(id(c))
        if step_kind == "alias":
            return storage(_alias_source(node))
        if step_kind == "window":     # a pointer into its input, set where it is computed
            slot_of[id(node)] = em.add_slot(("bound", f"{node.name}: a window of its input"))
        if step_kind == "random":
            slot_of[id(node)] = em.add_slot(("random", node))
        elif step_kind == "control":
            slot_of[id(node)] = flow.output_slot(node)
        elif plan.buffer_of.get(id(c)) is None:
            slot_of[id(node)] = em.add_slot(("empty", node))  # zero-size: never dereferenced
        else:
            slot_of[id(node)] = buffer_slot[plan.buffer_of[id(c)]]
        return slot_of[id(node)]

    def ptr(node):
        return f"(({ctype(node.dtype)} *)P[{storage(node)}])"

    def is_alias(node):
        c = mapping.get(id(node))
        return c is not None and kinds.get(id(c)) == "alias"

    body = []
    if top:
        em.param_writes = param_writes(graph, steps, storage, param_slots)
        slot_of.update(em.param_writes)
        from ...distributed import comm
        in_window, body, em.window_sums = shared_reduce.window_slots(em, graph, steps, storage,
                                                                     comm.size())
        slot_of.update(in_window)
    heavy.pair_max_pools(em, [s.sink for s in steps if s.kind == "heavy"])
    chained = set()        # steps already run inside a dense chain (dense_chain.py)
    for k, s in enumerate(steps):
        if id(s) in chained:
            continue
        if s.kind in ("alias", "random", "written"):
            storage(s.sink)
            continue
        if s.kind == "window":
            src, nbytes = s.sink.inputs[0], window_offset(s.sink) * s.sink.dtype.itemsize
            body.append(f"  P[{storage(s.sink)}] = (char *)P[{storage(src)}] + {nbytes};")
            continue
        if s.kind == "control":
            storage(s.sink)
            code = flow.emit(s.sink, storage)    # empty for a node whose group already ran
            if code:
                body += [f"  /* {s.sink.op} -> {s.sink.name} */", "  {", code, "  }"]
            continue
        if not maybe_nonempty(s.sink.size):
            continue
        body.append(f"  /* {s.kind}: {', '.join(n.op for n in s.nodes)} -> {s.sink.name} */")
        body.append("  {")   # each step in its own scope: its local names never clash
        if s.kind == "fused":
            body.append(_fused(s, ptr, em.window_sums, em))
        elif s.kind == "matmul" and (t := dense_chain.partner(
                steps, k, is_alias, storage, ptr, em.param_writes if top else {})) is not None:
            chained.add(id(t))
            body[-2] = f"  /* dense chain: {', '.join(n.op for n in s.nodes + t.nodes)} " \
                       f"-> {t.sink.name} */"
            body += dense_chain.emit(em, s, t, is_alias, ptr, lambda st: _fused_parts(
                Step("fused", st.nodes[1:], []), ptr))
        elif s.kind == "matmul" and (r := dense_chain.partner_at_run_time(
                steps, k, is_alias, storage, ptr, em.param_writes if top else {})) is not None:
            t, few_rows = r     # the chain where a fixed row count would take it, else each
            chained.add(id(t))
            body[-2] = f"  /* dense chain at few run-time rows, else two steps: " \
                       f"{', '.join(n.op for n in s.nodes + t.nodes)} -> {t.sink.name} */"
            body += [f"  if ({few_rows}) {{", *dense_chain.emit(
                em, s, t, is_alias, ptr, lambda st: _fused_parts(
                    Step("fused", st.nodes[1:], []), ptr)), "  } else {",
                "  {", *_matmul_step(em, s, storage, ptr, is_alias, top), "  }",
                "  {", *_matmul_step(em, t, storage, ptr, is_alias, top), "  }", "  }"]
        elif s.kind == "matmul":
            body += _matmul_step(em, s, storage, ptr, is_alias, top)
        elif s.kind == "heavy":
            body.append(s.lowering.emit(em, s.sink, storage,
                                        lambda n: top and _stays(em, n, storage)))
        else:
            body.append(s.lowering.code(s.sink, ptr, em))
        body.append("  }")
        body.append(collective.progress(em, s.sink, ptr))
    return body, [storage(o) for o in graph.outputs], plan


def _placeable(graph, placed, written_here):
    """The indices in `placed` of outputs the program can write where the caller says:
    written_here(node): the node is a step's result written into a buffer (not an input,
    a view or a loop's own result). Each node once (a value returned twice is placed at
    its first index only)."""
    taken, found = set(), []
    for k in placed:
        o = graph.outputs[k]
        if not written_here(o) or id(o) in taken:
            continue
        taken.add(id(o))
        found.append(k)
    return found


def _matmul_step(em, s, storage, ptr, is_alias, top):
    """C lines of a matmul step (a matmul heading an elementwise chain)."""
    alpha = accumulate_form(s, storage, ptr) if len(s.nodes) > 1 else None
    if alpha is not None:   # X + alpha * A B: one gemm accumulating into X
        return [kernels.matmul(s.nodes[0], ptr, is_alias, alpha=alpha, beta="1",
                               out=ptr(s.sink))]
    on_dnnl = dnnl_dense.emit(em, s, storage, is_alias,
                              lambda n: top and _stays(em, n, storage))
    if on_dnnl is None:
        return _own_matmul(em, s, ptr, storage, is_alias, top)
    code, rest = on_dnnl[:2]    # oneDNN's matmul, with the bias and ReLU it can take
    after = [_fused(Step("fused", rest, []), ptr, em=em)] if rest else []
    if len(on_dnnl) == 2:
        return [code] + after
    # run-time rows: where oneDNN has no op for them, kiln's gemm
    return [code, f"  if (kiln_rc < 0) return {heavy.DNNL_FAILED};", "  if (kiln_rc == 0) {",
            *after, "  } else {", *_own_matmul(em, s, ptr, storage, is_alias, top), "  }"]


def _own_matmul(em, step, ptr, storage, is_alias, top):
    """kiln's gemm for a matmul step, then the rest of its elementwise chain."""
    lines = [kernels.matmul(step.nodes[0], ptr, is_alias,
                            cache=_pack_cache(em, step.nodes[0], storage, is_alias, top))]
    if len(step.nodes) > 1:
        lines.append(_fused(Step("fused", step.nodes[1:], []), ptr, em=em))
    return lines


def _pack_cache(em, node, storage, is_alias, top):
    """A table entry for packed copies of the matmul's B (packed.py), or None: only for a
    parameter of the top-level graph that the program never writes in place."""
    b = node.inputs[1]
    if b.op == "transpose" and is_alias(b):      # read transposed in place: B is the param
        b = b.inputs[0]
    if not top or b.op != "param" or node.dtype != "float32" or not (
            node.ndim == 2 or kernels.rows_times_matrix(node)):
        return None     # (MKL packs float32 only)
    slot = storage(b)
    if em.slots[slot][0] != "param" or slot in em.param_writes.values():
        return None
    return f"P[{em.add_slot(('pack_cache',))}]"


def _stays(em, node, storage):
    """Is `node` a parameter this program never writes (a kernel may keep a copy of it)?"""
    if node.op != "param":
        return False
    slot = storage(node)
    return em.slots[slot][0] == "param" and slot not in em.param_writes.values()


def _alias_source(node):
    """The node whose storage an alias step reads (through chains of aliases)."""
    return node.inputs[0] if node.op in ("reshape", "transpose") else node


def _fused_parts(step, ptr, sums=None, named=None):
    """(operands, body) of an elementwise chain: the output first, then every input from
    outside the chain, with strides over the output's shape; body(offset expressions)
    gives the statements computing one element. sums: {id(input): table slots of the
    ranks' copies} for inputs that are a sum over ranks read where the copies lie
    (shared_reduce.py): the loop adds them, in rank order, as it reads them. named:
    {id(input): C name} for inputs read once before the loop."""
    out = step.sink
    sums, named = sums or {}, named or {}
    ext = [i for i in external_inputs(step.nodes, through_slices=False) if id(i) not in named]
    # the values stored (a merged loop's, loop_merge.py, store more than the sink), each
    # an operand of the sink's shape
    stored = step.also + [out]
    operands = [Operand(ptr(v), 0, contiguous_strides(out.shape)) if id(v) not in step.into
                else Operand(ptr(step.into[id(v)][0]), step.into[id(v)][1],
                             contiguous_strides(step.into[id(v)][0].shape))
                for v in stored]
    reads = []      # per input of ext, and per slice the loop reads: its operands' positions
    for i in ext:
        strides = broadcast_strides(i.shape, out.shape)
        pointers = [f"(({ctype(i.dtype)} *)P[{k}])" for k in sums[id(i)]] \
            if id(i) in sums else [ptr(i)]
        reads.append(range(len(operands), len(operands) + len(pointers)))
        operands += [Operand(p, 0, strides) for p in pointers]
    sliced = [n for n in step.nodes if n.op == "slice"]
    for n in sliced:      # read where its items lie in its input (its shape is the loop's)
        base, strides = slice_layout(n)
        reads.append(range(len(operands), len(operands) + 1))
        operands.append(Operand(ptr(n.inputs[0]), base, strides))
    ext = ext + sliced

    def body(offsets):
        lines, names = [], dict(named)
        for i, at in zip(ext, reads):
            loads = [f"{operands[k].ptr}[{offsets[k]}]" for k in at]
            names[id(i)] = loads[0] if len(loads) == 1 else f"({' + '.join(loads)})"
        for k, n in enumerate(step.nodes):
            if n.op == "slice":
                continue
            args = [names[id(i)] for i in n.inputs]
            expr = lowering_of(n).expression(n, args)
            lines.append(f"{ctype(n.dtype)} t{k} = {expr};")
            names[id(n)] = f"t{k}"
        lines += [f"{operands[j].ptr}[{offsets[j]}] = {names[id(v)]};"
                  for j, v in enumerate(stored)]
        return lines
    return operands, body


# an elementwise loop of this much work or more (vector_math.loop_work: elements, a call of
# vector math weighing more) runs as a job of the runtime's pool, in blocks of FUSED_BLOCK_MIN
FUSED_PARALLEL_MIN = 1 << 16
FUSED_BLOCK_MIN = 1 << 14


def _fused(step, ptr, sums=None, em=None):
    """The loop of an elementwise chain. Its one-element inputs (a learning rate, a scale)
    are read once before it: read through the pointer table at every element, the compiler
    must assume the loop's stores may change them, and with a few such loads besides several
    arrays it gives up vectorizing. With `em`, a loop of much work (a call of vector math
    weighing several elements) is a parallel job; for a run-time size C makes that choice
    with the same rule."""
    sums = sums or {}
    scalars = [i for i in external_inputs(step.nodes, through_slices=False)
               if not is_runtime(i.size) and i.size == 1 and id(i) not in sums]
    named = {id(i): f"s{k}" for k, i in enumerate(scalars)}
    before = [f"  const {ctype(i.dtype)} s{k} = {ptr(i)}[0];" for k, i in enumerate(scalars)]
    operands, body = _fused_parts(step, ptr, sums, named)
    size, threads = step.sink.size, thread_count()
    # work per element (vector_math.loop_work): a call of vector math weighs several
    per_element = vector_math.loop_work(1, body(["0"] * len(operands)))
    # a merged loop's stores (loop_merge.py) go to buffers of their own or, for its result,
    # over an input it reads at the same element only
    simd = bool(step.also)
    what = f"an elementwise loop: {', '.join(n.op for n in step.nodes)} -> {step.sink.name}"

    def job(blocks):
        return pool_job(em, "fused", what, blocks, lambda b: [
            *before, loop_nest(step.sink.shape, operands, body, block=(b, blocks),
                               independent=simd)])
    serial = "\n".join(before + [loop_nest(step.sink.shape, operands, body,
                                           independent=simd)])
    if em is None or threads < 2:
        return serial
    if is_runtime(size):      # the same choice, made in C when the size is known
        work = f"({size}) * {per_element}"
        blocks = (f"kiln_min64(kiln_min64({work} / {FUSED_BLOCK_MIN}, {4 * threads}), "
                  f"({size}) / 16)")
        return "\n".join([f"  if ({work} >= {FUSED_PARALLEL_MIN} && {blocks} >= 2) {{",
                          job(blocks), "  } else {", serial, "  }"])
    work = size * per_element
    blocks = min(work // FUSED_BLOCK_MIN, 4 * threads, size // 16)
    if work < FUSED_PARALLEL_MIN or blocks < 2:
        return serial
    return job(blocks)
