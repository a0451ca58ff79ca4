"""A compiled graph: the generated library plus a pointer table built once per plan.

A call checks each input's shape, dtype and layout (C never sees a wrong one), points the
table at each input (the C Caller) or copies small ones into fixed buffers (the Python path,
where that is cheaper than asking NumPy for a data pointer), refreshes
parameter pointers only when a parameter's array object changed, makes one ctypes call,
and returns fresh copies of the outputs.
"""
import ctypes
import sys
import threading
import weakref

import numpy as _np

from ..._core.base import KilnError
from ..._core.symdim import active_env
from ...graph.passes.pipeline import debug_level, run_pipeline
from ..._core import aligned, writes
from ..._core.ir import Graph
from ...ops.registry import REGISTRY
from . import build, heavy, vector_math
from .codegen import generate
from .fastcall import caller_type
from .runtime import runtime
from .shared_reduce import NO_WINDOW

# what a failing kiln_run's return code says, after the code itself
_FAILURES = {heavy.DNNL_FAILED: ", in oneDNN",
             NO_WINDOW: ": it sums gradients in the ranks' shared window, and its MPI handle "
                        "table points at none"}

# on the Python path, inputs up to this many bytes are copied into a fixed buffer
COPY_INPUT_BYTES = 1 << 16
# an output from this many bytes gets a fresh buffer per call, handed back without a copy
# (a smaller one is copied out of the program's buffers, which the fast C path does)
FRESH_OUTPUT_BYTES = 1 << 16
# a program whose other buffers need more than this allocates them per call and lets them
# go after it: between calls, its working memory (a training step's backward, say) is free
# for the other programs (its forward, the evaluation program, another model). Smaller
# programs keep theirs: a call then pays no allocation.
KEEP_BUFFERS_BYTES = 1 << 28


_ndarray = _np.ndarray


def _address(array):
    return array.__array_interface__["data"][0]


class CProgram:
    backend = "c"

    def __init__(self, graph):
        self.graph = graph
        gen = generate(graph)
        if debug_level() >= 2:
            print(f"[kiln] generated C for {graph.name}:\n{gen.source}", file=sys.stderr)
        self.source = gen.source
        # on a cold cache the runtime and the fast-call extension compile beside the program
        helpers = [threading.Thread(target=runtime), threading.Thread(target=caller_type)]
        for t in helpers:
            t.start()
        lib = build.load(gen.source,
                         extra_flags=conversion_flags(graph) + vector_math.flags())
        for t in helpers:
            t.join()
        rt = runtime()
        if rt is not None:
            lib.kiln_set_runtime(ctypes.c_void_p(rt.sgemm or None),
                                 ctypes.c_void_p(rt.dgemm or None), ctypes.c_void_p(rt.parallel),
                                 ctypes.c_void_p(rt.sgemm_cached or None))
        if heavy.uses_heavy(gen.slots):
            heavy.bind(lib, self)
        self._run = lib.kiln_run
        self._run.argtypes = [ctypes.c_void_p]
        self._run.restype = ctypes.c_int
        graph.memory_plan = gen.plan
        self._keep = []
        table = (ctypes.c_void_p * max(len(gen.slots), 1))()
        # buffers holding one large output each are allocated per call and become the
        # result: the program keeps no copy of them between calls (a training step's
        # forward returns every activation backward reads; kept, they would live twice)
        self._fresh = fresh_output_buffers(graph, gen)
        capacities = gen.plan.capacities
        kept = sum(c for b, c in enumerate(capacities) if b not in self._fresh)
        self._per_call = dict.fromkeys(range(len(capacities)) if kept > KEEP_BUFFERS_BYTES
                                       else self._fresh)   # buffer -> (its slot, capacity)
        self.buffers = [None if b in self._per_call else aligned.empty(max(c, 8), _np.uint8)
                        for b, c in enumerate(capacities)]
        self.input_specs = []       # (slot, shape, dtype, (fixed buffer, its address) or None)
        self.param_slots = {}
        self.random_slots = []
        for k, entry in enumerate(gen.slots):
            kind = entry[0]
            if kind == "buffer" and entry[1] in self._per_call:
                self._per_call[entry[1]] = (k, capacities[entry[1]])
            elif kind == "buffer":
                table[k] = _address(self.buffers[entry[1]])
            elif kind == "const":
                arr = aligned.copy_of(entry[1])
                self._keep.append(arr)
                table[k] = _address(arr) if arr.size else None
            elif kind == "input":
                node = graph.inputs[entry[1]]
                nbytes = node.size * node.dtype.itemsize
                fixed = None
                if 0 < nbytes <= COPY_INPUT_BYTES:
                    buffer = aligned.empty(node.shape, node.dtype)
                    fixed = buffer, _address(buffer)
                self.input_specs.append((k, node.shape, node.dtype, fixed))
            elif kind == "param":
                self.param_slots[entry[1]] = k
            elif kind == "random":
                self.random_slots.append((k, entry[1]))
            elif kind == "dnnl_op":
                table[k] = heavy.new_op(entry[1], self)
            elif kind == "pack_cache" and rt is not None and rt.sgemm_cached:
                cache = rt.new_pack_cache()
                if cache:
                    table[k] = cache
                    weakref.finalize(self, rt.free_pack_cache, cache)
            # 'empty' (never dereferenced) and 'bound' (a subgraph input the generated code
            # points at its operand before each call) need nothing from Python
        self._table = table
        self._table_addr = ctypes.addressof(table)
        # the table and buffers are shared by all calls: one call at a time
        self._lock = threading.Lock()
        self._param_seen = [None] * len(graph.params)
        self._n_inputs, self._n_params = len(graph.inputs), len(graph.params)
        self._param_specs = [(p.shape, p.dtype) for p in graph.params]
        self._outputs = []
        for o, slot in zip(graph.outputs, gen.output_slots):
            self._outputs.append((slot, o.shape, o.dtype, gen.slots[slot]))
        # outputs computed straight into their parameter (param_writes.py) come back as None
        self._written = gen.param_writes
        self._written_params = {graph.state_outputs[k] for k in self._written}
        # the common case, every output in a planned buffer: views made once, copied per call
        self._fixed_outputs = None
        if not self._per_call and all(k in self._written or entry[0] == "buffer"
                                   for k, (_, _, _, entry) in enumerate(self._outputs)):
            self._fixed_outputs = [None if k in self._written else
                                   self._buffer_view(entry[1], shape, dtype)
                                   for k, (_, shape, dtype, entry) in enumerate(self._outputs)]
        self._caller = self._make_caller(lib) if self._fixed_outputs is not None \
            and not self.random_slots else None
        if self._caller is not None:
            self._lock = self._caller

    def _make_caller(self, lib):
        Caller = caller_type()
        if Caller is None:
            return None
        # the Caller points the table at each input: a copy into the fixed buffer costs
        # more there (0.7-1.0 us at batch 1 on the seed MLP, the other core then reading
        # the freshly written copy)
        ins = tuple((slot, tuple(shape), dtype.num, dtype.itemsize, 0, 0)
                    for slot, shape, dtype, _ in self.input_specs)
        pars = tuple((self.param_slots[k], tuple(shape), dtype.num, dtype.itemsize, 0,
                      int(k in self._written_params))
                     for k, (shape, dtype) in enumerate(self._param_specs))
        outs = tuple((0, (), -1, 0, 0, 0) if v is None else  # -1: returned as None
                     (0, tuple(v.shape), v.dtype.num, v.dtype.itemsize,
                      _address(v) if v.size else 0, 0)
                     for v in self._fixed_outputs)
        run = ctypes.cast(lib.kiln_run, ctypes.c_void_p).value
        counter = writes.counter()
        return Caller(run, self._table_addr, ins, pars, outs,
                      ctypes.addressof(counter) if counter is not None else 0,
                      weakref.ref(self))

    def _check(self, value, shape, dtype, what):
        if not isinstance(value, _np.ndarray):
            raise KilnError(f"C backend: {what} must be a NumPy array, got {type(value).__name__}")
        if value.shape != shape or value.dtype != dtype:
            raise KilnError(f"C backend: {what} must have shape {shape} and dtype {dtype}, got "
                            f"shape {value.shape} and dtype {value.dtype}")
        if not value.flags.c_contiguous:
            value = _np.ascontiguousarray(value)
        return value

    def __call__(self, inputs, params):
        caller = self._caller
        if caller is not None:
            out = caller(inputs, params)
            if out is not None:
                return out
            # the fast path declined (a wrong or unusual input): take the Python path, which
            # converts or raises; holding the caller made it forget its bound parameters
            with caller:
                self._param_seen = [None] * self._n_params
                return self._call(inputs, params)
        with self._lock:
            return self._call(inputs, params)

    def _call(self, inputs, params):
        table = self._table
        if len(inputs) != self._n_inputs or len(params) != self._n_params:
            raise KilnError(f"C backend: expected {self._n_inputs} inputs and "
                            f"{self._n_params} parameters, got {len(inputs)} and "
                            f"{len(params)}")
        keep = []
        for value, (slot, shape, dtype, fixed) in zip(inputs, self.input_specs):
            if value.__class__ is not _ndarray or value.shape != shape \
                    or value.dtype != dtype or not value.flags.c_contiguous:
                value = self._check(value, shape, dtype, "input")
            if fixed is not None:
                fixed[0][...] = value
                table[slot] = fixed[1]      # the Caller may have pointed it elsewhere
            else:
                keep.append(value)
                table[slot] = _address(value) if value.size else None
        seen = self._param_seen
        for k, value in enumerate(params):
            if value is not seen[k]:
                self._bind_param(k, value, keep)
        for b, (slot, capacity) in self._per_call.items():
            self.buffers[b] = aligned.empty(max(capacity, 8), _np.uint8)
            table[slot] = _address(self.buffers[b])
        for slot, node in self.random_slots:
            draw = _np.ascontiguousarray(REGISTRY[node.op].impl(**node.attrs), dtype=node.dtype)
            keep.append(draw)
            table[slot] = _address(draw) if draw.size else None
        rc = self._run(self._table_addr)
        if rc != 0:
            raise KilnError(f"C backend: the program {self.graph.name} failed (code {rc}"
                            f"{_FAILURES.get(rc, '')})")
        if self._fixed_outputs is not None:
            results = [None if v is None else v.copy() for v in self._fixed_outputs]
        else:
            results = [self._read(k, inputs, params, keep) for k in range(len(self._outputs))]
        for b in self._per_call:
            self.buffers[b] = None      # fresh ones: the results own them now
        for k in self._written:
            # a parameter bound through a converted copy: its new value is in the copy
            param = self.graph.state_outputs[k]
            if self._param_seen[param] is None:
                results[k] = _np.array(self._param_copy(param, keep), copy=True)
        return results

    def _param_copy(self, k, keep):
        addr = self._table[self.param_slots[k]]
        return next(a for a in keep if a.size and _address(a) == addr)

    def _bind_param(self, k, value, keep):
        writes.arrays_written()   # kept copies of the old parameter must not serve the new one
        shape, dtype = self._param_specs[k]
        checked = self._check(value, shape, dtype, f"parameter {self.graph.params[k].name}")
        if k in self._written_params and not checked.flags.writeable:
            checked = checked.copy()        # written in place: never into read-only memory
        self._table[self.param_slots[k]] = _address(checked) if checked.size else None
        if checked is value:
            self._param_seen[k] = value     # pointer stays valid while this array lives
        else:
            self._param_seen[k] = None
            keep.append(checked)

    def _read(self, k, inputs, params, keep):
        if k in self._written:
            return None
        slot, shape, dtype, entry = self._outputs[k]
        kind = entry[0]
        if kind == "buffer" and entry[1] in self._fresh:
            return self._buffer_view(entry[1], shape, dtype)
        if kind == "buffer":
            return self._buffer_view(entry[1], shape, dtype).copy()
        if kind == "const":
            return _np.array(entry[1], copy=True)
        if kind == "input":
            return _np.array(inputs[entry[1]], dtype=dtype, copy=True).reshape(shape)
        if kind == "param":
            return _np.array(params[entry[1]], dtype=dtype, copy=True).reshape(shape)
        if kind == "random":
            addr = self._table[slot]
            return next(a for a in keep if a.size and _address(a) == addr).reshape(shape).copy()
        return _np.zeros(shape, dtype)

    def _buffer_view(self, b, shape, dtype):
        size = int(_np.prod(shape, dtype=_np.int64))
        return self.buffers[b][:size * dtype.itemsize].view(dtype).reshape(shape)


def fresh_output_buffers(graph, gen):
    """{buffer index: None} for the buffers that hold exactly one output of at least
    FRESH_OUTPUT_BYTES and nothing another output reads (outputs live to the end of the
    program, so no node after an output's writer reuses its buffer)."""
    holders = {}
    for k, (o, slot) in enumerate(zip(graph.outputs, gen.output_slots)):
        entry = gen.slots[slot]
        if entry[0] == "buffer" and k not in gen.param_writes:
            holders.setdefault(entry[1], []).append(o)
    return {b: None for b, outs in holders.items()
            if len(outs) == 1 and outs[0].size * outs[0].dtype.itemsize >= FRESH_OUTPUT_BYTES}


def conversion_flags(graph):
    """-ftrapping-math for a program that converts floats to integers: without it GCC may
    rewrite `(float)(int64_t)x` as `truncf(x)`, even across loops it unrolls, which differs
    from the hardware conversion NumPy does for NaN and out-of-range values (NaN -> NaN
    instead of INT64_MIN). Other programs keep -fno-trapping-math for vectorizing."""
    return ("-ftrapping-math",) if _converts_float_to_integer(graph, set()) else ()


def _converts_float_to_integer(graph, seen):
    for n in graph.nodes:
        if (n.op == "cast" and _np.issubdtype(n.inputs[0].dtype, _np.floating)
                and _np.issubdtype(n.dtype, _np.integer)):
            return True
        for v in n.attrs.values():
            if isinstance(v, Graph) and id(v) not in seen:
                seen.add(id(v))
                if _converts_float_to_integer(v, seen):
                    return True
    return False


class CannotCompile(KilnError):
    """The C backend cannot run this graph here; the message says why (the graph then
    runs on the NumPy executor)."""


def compile_graph(graph):
    """A CProgram, or raise CannotCompile."""
    from .lowering import NotLowerable
    if not build.available():
        try:
            build.compiler()
        except build.CompilerUnavailable as exc:
            build.record_unavailable(str(exc))
            raise CannotCompile(f"the C backend is unavailable: {exc}") from None
    graph = _without_heavy_ops(graph)
    try:
        return CProgram(graph)
    except NotLowerable as exc:
        if debug_level() >= 1:
            print(f"[kiln] C backend cannot lower {graph.name} ({exc}); using NumPy",
                  file=sys.stderr)
        raise CannotCompile(f"the C backend cannot lower this graph ({exc})") from None


def compile_sized(graph):
    """A SizedCProgram for a graph with symbolic sizes (sized_program.py); raises
    CannotCompile as compile_graph does, and NotSizeGeneric when the generated C would
    need a symbolic size's value."""
    from .lowering import NotLowerable
    from .sized_program import SizedCProgram
    if not build.available():
        try:
            build.compiler()
        except build.CompilerUnavailable as exc:
            build.record_unavailable(str(exc))
            raise CannotCompile(f"the C backend is unavailable: {exc}") from None
    env = active_env()
    before = len(env.guards) if env is not None else 0
    graph = _without_heavy_ops(graph)
    try:
        return SizedCProgram(graph, before)
    except NotLowerable as exc:
        raise CannotCompile(f"the C backend cannot lower this graph ({exc})") from None


def _without_heavy_ops(graph):
    """Heavy ops (conv, pool) the kernel library takes are called from the generated code
    (heavy.py), channels-last between them (graph/passes/layout.py; KILN_CHANNELS_LAST=0
    keeps NCHW); the others (no library, not float32) run their decompositions: the
    c-program pipeline (graph/passes/pipeline.py)."""
    original = graph
    graph = run_pipeline("c-program", graph, takes=heavy.lowerable)
    if graph is not original:
        # the passes keep the inputs and outputs in order: the parameters' new values are
        # still written in place, and the donated inputs are the same
        graph.state_outputs = dict(original.state_outputs)
        graph.donated_inputs = getattr(original, "donated_inputs", ())
    return graph


def lay_out_joint(joint):
    """The layout pass on a traced forward+backward graph, before it is split into two
    programs (graph/split.py). Laid out per program, each activation backward reads would
    leave the forward program as NCHW and enter the backward one channels-last: a transpose
    on each side, or, where that does not pay, oneDNN's blocked copies of each argument,
    which each op kept for the life of the program. Laid out here, those activations cross
    between the programs channels-last."""
    if not build.available():
        return joint
    state = getattr(joint, "state_outputs", None)
    laid = run_pipeline("c-joint-layout", joint, takes=heavy.lowerable)
    if laid is not joint and state is not None:
        laid.state_outputs = dict(state)
    return laid
