"""A compiled graph with run-time sizes: one library for every value of its symbols.

The generated code reads its symbolic sizes from the table's ('sizes',) entry (sizes.py).
A call binds the symbols from its input shapes and gets that size's `SizeState`, made once
per distinct set of sizes and kept (up to KEPT_SIZES of them): the sizes array, the byte
count of every planned buffer and the shapes of the outputs, all evaluated from the plan's
symbolic expressions, and a pointer table of its own with a C Caller (fastcall.py) for
the steady state. The buffers are one arena shared by every size: each buffer holds the
largest size seen so far and grows when a larger size arrives (the states made before it
are dropped then, and remade on their next call); a call at a size already seen allocates
nothing. All states share one lock (the first Caller's), because they share the arena.
"""
import ctypes
import sys
import threading
import weakref

import numpy as _np

from ..._core import aligned, writes
from ..._core.base import KilnError
from ..._core.symdim import active_env, concrete_value
from ...graph.passes.pipeline import debug_level
from ...ops.registry import REGISTRY
from ..symbolic_exec import bind_symbols
from . import build, heavy, vector_math
from .codegen import generate
from .fastcall import caller_type
from .runtime import runtime
from .sizes import pinned_by_codegen

# sizes whose tables (and Callers) are kept; a further size drops the oldest one
KEPT_SIZES = 64


class NotSizeGeneric(KilnError):
    """The C generated for a graph needed a symbolic size's value (`where` says which
    code): its sizes cannot vary at run time, so hybridize specializes it instead."""


class SizeState:
    """Everything one set of sizes needs: the sizes array, buffer bytes, output shapes,
    its own pointer table and Caller."""

    def __init__(self, program, bindings):
        self.bindings = bindings
        gen = program.gen
        self.sizes = (ctypes.c_int64 * max(len(gen.sizes.order), 1))(
            *[bindings[name] for name in gen.sizes.order])
        self.capacities = [max(int(concrete_value(c, bindings)), 8)
                           for c in gen.plan.capacities]
        graph = program.graph
        self.input_shapes = [tuple(concrete_value(n.shape, bindings)) for n in graph.inputs]
        self.output_shapes = [tuple(concrete_value(o.shape, bindings)) for o in graph.outputs]
        self.table = (ctypes.c_void_p * len(program.template))(*program.template)
        self.table[program.sizes_slot] = ctypes.addressof(self.sizes)
        self.caller = None
        self.buffers = []

    def point_at(self, program):
        """Point the table at the arena's buffers, and hold them: a call of this state on
        another thread may still run after the arena grows."""
        self.buffers = list(program.arena)
        for b, slot in program.buffer_slots.items():
            self.table[slot] = self.buffers[b].ctypes.data


class SizedCProgram:
    backend = "c"

    def __init__(self, graph):
        self.graph = graph
        env = active_env()
        before = len(env.guards) if env is not None else 0
        gen = self.gen = generate(graph)
        pinned = pinned_by_codegen(env, before) if env is not None else []
        if pinned:
            raise NotSizeGeneric(f"generated C needs the value of a symbolic size "
                                 f"({pinned[0]!r})")
        if debug_level() >= 2:
            print(f"[kiln] generated C for {graph.name}:\n{gen.source}", file=sys.stderr)
        self.source = gen.source
        from .program import conversion_flags
        lib = build.load(gen.source, extra_flags=conversion_flags(graph) + vector_math.flags())
        rt = runtime()
        if rt is not None:
            lib.kiln_set_runtime(ctypes.c_void_p(rt.sgemm or None),
                                 ctypes.c_void_p(rt.dgemm or None),
                                 ctypes.c_void_p(rt.parallel),
                                 ctypes.c_void_p(rt.sgemm_cached or None))
        if heavy.uses_heavy(gen.slots):
            heavy.bind(lib, self)
        self._lib = lib
        self._run = lib.kiln_run
        self._run.argtypes = [ctypes.c_void_p]
        self._run.restype = ctypes.c_int
        graph.memory_plan = gen.plan
        self._keep = []
        self.template = [None] * max(len(gen.slots), 1)
        self.buffer_slots = {}      # buffer index -> its table slot
        self.input_slots, self.param_slots, self.random_slots = {}, {}, []
        self.sizes_slot = None
        for k, entry in enumerate(gen.slots):
            kind = entry[0]
            if kind == "sizes":
                self.sizes_slot = k
            elif kind == "buffer":
                self.buffer_slots[entry[1]] = k
            elif kind == "const":
                arr = aligned.copy_of(entry[1])
                self._keep.append(arr)
                self.template[k] = arr.ctypes.data if arr.size else None
            elif kind == "input":
                self.input_slots[entry[1]] = k
            elif kind == "param":
                self.param_slots[entry[1]] = k
            elif kind == "random":
                self.random_slots.append((k, entry[1]))
            elif kind == "dnnl_op":
                self.template[k] = heavy.new_op(entry[1], self)
            elif kind == "pack_cache" and rt is not None and rt.sgemm_cached:
                cache = rt.new_pack_cache()
                if cache:
                    self.template[k] = cache
                    weakref.finalize(self, rt.free_pack_cache, cache)
        self.arena = [aligned.empty(8, _np.uint8) for _ in gen.plan.capacities]
        self._states = {}           # input shapes -> SizeState
        self._lock = threading.Lock()     # for making states
        # the lock of every call (all states share the arena): a Caller that never runs,
        # whose lock the states' Callers share; without the extension a threading.Lock
        self._lead = self._lock_caller()
        self._written = gen.param_writes
        self._written_params = {graph.state_outputs[k] for k in self._written}
        self._output_buffers = [gen.slots[slot][1] if gen.slots[slot][0] == "buffer"
                                else None for slot in gen.output_slots]

    # ---- states per size ---------------------------------------------------------------
    def state_for(self, inputs):
        """The SizeState serving these inputs' shapes (made, and the arena grown, if new)."""
        shapes = tuple(_np.shape(v) for v in inputs)
        state = self._states.get(shapes)
        if state is not None:
            return state
        with self._lock:
            state = self._states.get(shapes)
            if state is None:
                state = SizeState(self, bind_symbols(self.graph, inputs))
                with self.held():
                    self._grow(state.capacities)
                    state.point_at(self)
                if len(self._states) >= KEPT_SIZES:
                    self._states.pop(next(iter(self._states)))
                self._states[shapes] = state
        return state

    def _grow(self, capacities):
        """Grow the arena's buffers to `capacities`; the states pointing at the old ones
        are dropped (their Callers then decline, and the next call remakes them)."""
        grown = False
        for b, need in enumerate(capacities):
            if need > self.arena[b].size:
                self.arena[b] = aligned.empty(need, _np.uint8)
                grown = True
        if grown:
            self._states.clear()

    def _lock_caller(self):
        Caller = caller_type()
        if Caller is None:
            return threading.Lock()
        self._no_table = (ctypes.c_void_p * 1)()
        run = ctypes.cast(self._lib.kiln_run, ctypes.c_void_p).value
        return Caller(run, ctypes.addressof(self._no_table), (), (), (), 0, weakref.ref(self))

    def held(self):
        """The lock every call of this program holds."""
        return self._lead

    def caller_for(self, inputs):
        """A C Caller running this size (the C dispatcher serves it), or None."""
        state = self.state_for(inputs)
        if state.caller is None and not self.random_slots:
            state.caller = self._make_caller(state)
        return state.caller

    def _make_caller(self, state):
        Caller = caller_type()
        if Caller is None or not isinstance(self._lead, Caller) or any(b is None for k, b in enumerate(self._output_buffers)
                                 if k not in self._written):
            return None
        ins = tuple((self.input_slots[k], shape, n.dtype.num, n.dtype.itemsize, 0, 0)
                    for k, (n, shape) in enumerate(zip(self.graph.inputs,
                                                       state.input_shapes)))
        pars = tuple((self.param_slots[k], tuple(p.shape), p.dtype.num, p.dtype.itemsize, 0,
                      int(k in self._written_params))
                     for k, p in enumerate(self.graph.params))
        outs = tuple((0, (), -1, 0, 0, 0) if k in self._written else
                     (0, shape, o.dtype.num, o.dtype.itemsize,
                      state.buffers[self._output_buffers[k]].ctypes.data, 0)
                     for k, (o, shape) in enumerate(zip(self.graph.outputs,
                                                        state.output_shapes)))
        run = ctypes.cast(self._lib.kiln_run, ctypes.c_void_p).value
        counter = writes.counter()
        caller = Caller(run, ctypes.addressof(state.table), ins, pars, outs,
                        ctypes.addressof(counter) if counter is not None else 0,
                        weakref.ref(state), self._lead)
        return caller

    # ---- calling -----------------------------------------------------------------------
    def __call__(self, inputs, params):
        state = self.state_for(inputs)
        caller = state.caller
        if caller is not None:
            out = caller(inputs, params)
            if out is not None:
                return out
        # holding the state's Caller makes it forget its bound parameters, which the
        # Python path rebinds
        with caller if caller is not None else self.held():
            return self._call(state, inputs, params)

    def _call(self, state, inputs, params):
        table, keep = state.table, []
        graph = self.graph
        if len(inputs) != len(graph.inputs) or len(params) != len(graph.params):
            raise KilnError(f"C backend: expected {len(graph.inputs)} inputs and "
                            f"{len(graph.params)} parameters, got {len(inputs)} and "
                            f"{len(params)}")
        for k, (value, node, shape) in enumerate(zip(inputs, graph.inputs,
                                                      state.input_shapes)):
            value = _checked(value, shape, node.dtype, "input")
            keep.append(value)
            table[self.input_slots[k]] = value.ctypes.data if value.size else None
        for k, (value, node) in enumerate(zip(params, graph.params)):
            value = _checked(value, node.shape, node.dtype, f"parameter {node.name}")
            if k in self._written_params and not value.flags.writeable:
                value = value.copy()
            writes.arrays_written()
            keep.append(value)
            table[self.param_slots[k]] = value.ctypes.data if value.size else None
        for slot, node in self.random_slots:
            attrs = concrete_value(node.attrs, state.bindings)
            draw = _np.ascontiguousarray(REGISTRY[node.op].impl(**attrs), dtype=node.dtype)
            keep.append(draw)
            table[slot] = draw.ctypes.data if draw.size else None
        rc = self._run(ctypes.addressof(table))
        if rc != 0:
            raise KilnError(f"C backend: the program {graph.name} failed (code {rc})")
        results = []
        for k, (o, shape, slot) in enumerate(zip(graph.outputs, state.output_shapes,
                                                  self.gen.output_slots)):
            results.append(None if k in self._written else
                           self._read(slot, shape, o.dtype, inputs, params, keep, state))
        for k in self._written:
            param = graph.state_outputs[k]
            if params[param] is not keep[len(inputs) + param]:
                results[k] = _np.array(keep[len(inputs) + param], copy=True)
        return results

    def _read(self, slot, shape, dtype, inputs, params, keep, state):
        kind, what = self.gen.slots[slot][0], self.gen.slots[slot][1:]
        size = int(_np.prod(shape, dtype=_np.int64))
        if kind == "buffer":
            data = state.buffers[what[0]][:size * dtype.itemsize]
            return data.view(dtype).reshape(shape).copy()
        if kind == "const":
            return _np.array(what[0], copy=True)
        if kind == "input":
            return _np.array(inputs[what[0]], dtype=dtype, copy=True).reshape(shape)
        if kind == "param":
            return _np.array(params[what[0]], dtype=dtype, copy=True).reshape(shape)
        if kind == "random":
            return next(a for a in keep if a.size and a.ctypes.data == state.table[slot]
                        ).reshape(shape).copy()
        return _np.zeros(shape, dtype)


def _checked(value, shape, dtype, what):
    if not isinstance(value, _np.ndarray):
        raise KilnError(f"C backend: {what} must be a NumPy array, got "
                        f"{type(value).__name__}")
    if value.shape != tuple(shape) or value.dtype != dtype:
        raise KilnError(f"C backend: {what} must have shape {tuple(shape)} and dtype {dtype}, "
                        f"got shape {value.shape} and dtype {value.dtype}")
    return value if value.flags.c_contiguous else _np.ascontiguousarray(value)
