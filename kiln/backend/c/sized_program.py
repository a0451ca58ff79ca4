"""A compiled graph with run-time sizes: one library for every value of its symbols.

The generated code reads its symbolic sizes from the table's ('sizes',) entry (sizes.py).
There is one table and one set of planned buffers (the arena) for every size. Each buffer
holds the sizes up to `limits` (per symbol, the largest value seen so far): a call at a
larger size grows the arena first, to the plan's byte counts evaluated at the new limits
(the counts only grow with the sizes: sizes.monotone), and a call within them allocates
nothing. The C Caller (fastcall.py) serves every size within the limits: it binds the
symbols from the inputs' dims, writes them into the sizes array, and gives the outputs
their shapes; a call beyond the limits takes the Python path here, which grows the arena.
A plan whose byte counts are not monotone (a size subtracted) grows per call on the Python
path only.
"""
import ctypes
import sys
import threading
import weakref

import numpy as _np

from ..._core import aligned, writes
from ..._core.base import KilnError
from ..._core.symdim import SymInt, active_env, concrete_value
from ...graph.passes.pipeline import debug_level
from ...ops.registry import REGISTRY
from ..symbolic_exec import bind_symbols
from . import build, dnnl_dense, heavy, vector_math
from .codegen import generate
from .fastcall import caller_type
from .runtime import runtime
from .sizes import monotone, pinned_by_codegen


class NotSizeGeneric(KilnError):
    """The C generated for a graph needed a symbolic size's value (the message says which
    code): its sizes cannot vary at run time, so hybridize specializes it instead."""


class _Sizes:
    """What the Python path needs for one set of input shapes, worked out once."""
    __slots__ = ("values", "capacities", "input_shapes", "output_shapes", "bindings")

    def __init__(self, program, inputs):
        gen, graph = program.gen, program.graph
        self.bindings = bind_symbols(graph, inputs)
        self.values = [self.bindings[name] for name in gen.sizes.order]
        self.capacities = [int(concrete_value(c, self.bindings)) for c in gen.plan.capacities]
        self.input_shapes = [tuple(concrete_value(n.shape, self.bindings)) for n in graph.inputs]
        self.output_shapes = [tuple(concrete_value(o.shape, self.bindings))
                              for o in graph.outputs]


class SizedCProgram:
    backend = "c"

    def __init__(self, graph, before=None):
        """before: how many guards the build had recorded before the C backend's passes
        ran (program.compile_sized): a symbol those passes or the code generation pinned
        makes the program not size-generic."""
        self.graph = graph
        env = self._env = active_env()    # its guards say which sizes it serves
        if before is None:
            before = len(env.guards) if env is not None else 0
        gen = self.gen = generate(graph)
        pinned = pinned_by_codegen(env, before) if env is not None else []
        if pinned:
            raise NotSizeGeneric(f"generated C needs the value of a symbolic size "
                                 f"({pinned[0]!r})")
        fixed = [entry[1] for entry in gen.slots if entry[0] == "dnnl_op" and
                 entry[2:] == ("pinned",)]
        if fixed:     # made once, for one shape of run-time sizes (heavy.op_slot): a
                      # convolution or pooling with a run-time size other than its batch
            raise NotSizeGeneric("oneDNN's convolutions and poolings take only their batch "
                                 "as a run-time size")
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
        n_sym = len(gen.sizes.order)
        self.sizes = (ctypes.c_int64 * n_sym)()
        # per symbol, the largest size the arena holds (0 at first), then the smallest one
        # the Caller serves: any for this program's own Caller, which serves only calls
        # hybridize checked; the dispatcher's (caller_for) takes its own
        self.limits = (ctypes.c_int64 * (2 * n_sym))()
        self._dispatched = None      # (the dispatcher's Caller, its limits)
        self.table = (ctypes.c_void_p * max(len(gen.slots), 1))()
        self._keep = []
        self.buffer_slots = {}      # buffer index -> its table slot
        self.input_slots, self.param_slots, self.random_slots = {}, {}, []
        for k, entry in enumerate(gen.slots):
            kind = entry[0]
            if kind == "sizes":
                self.table[k] = ctypes.addressof(self.sizes)
            elif kind == "buffer":
                self.buffer_slots[entry[1]] = k
            elif kind == "const":
                arr = aligned.copy_of(entry[1])
                self._keep.append(arr)
                self.table[k] = arr.ctypes.data if arr.size else None
            elif kind == "input":
                self.input_slots[entry[1]] = k
            elif kind == "param":
                self.param_slots[entry[1]] = k
            elif kind == "random":
                self.random_slots.append((k, entry[1]))
            elif kind == "dnnl_op":
                self.table[k] = heavy.new_op(entry[1], self)
            elif kind == "dnnl_batch":
                from ..dnnl.library import shim
                cache = heavy.new_batch_cache(shim(), entry[1])
                if not cache:
                    raise KilnError("oneDNN: could not make a convolution's op cache")
                self.table[k] = cache
                weakref.finalize(self, shim().kd_batch_free, cache)
            elif kind == "dnnl_rows":
                from ..dnnl.library import shim
                cache = dnnl_dense.new_rows_cache(shim(), entry[1])
                if not cache:
                    raise KilnError("oneDNN: could not make a Dense layer's op cache")
                self.table[k] = cache
                weakref.finalize(self, shim().kd_matmul_rows_free, cache)
            elif kind == "dnnl_bmm":
                from ..dnnl.library import shim
                cache = shim().kd_bmm_new()
                if not cache:
                    raise KilnError("oneDNN: could not make a batched matmul's op cache")
                self.table[k] = cache
                weakref.finalize(self, shim().kd_bmm_free, cache)
            elif kind == "pack_cache" and rt is not None and rt.sgemm_cached:
                cache = rt.new_pack_cache()
                if cache:
                    self.table[k] = cache
                    weakref.finalize(self, rt.free_pack_cache, cache)
        self.arena = [None] * len(gen.plan.capacities)
        # the arena holds size 0 of every symbol (the limits' start): fixed-size buffers
        # get their bytes now
        zero = dict.fromkeys(gen.sizes.order, 0)
        self._grow_to([int(concrete_value(c, zero)) for c in gen.plan.capacities])
        self._monotone = all(monotone(c) for c in gen.plan.capacities)
        self._per_shape = {}        # input shapes -> _Sizes
        self._written = gen.param_writes
        self._written_params = {graph.state_outputs[k] for k in self._written}
        self._caller = self._make_caller()
        self._lock = self._caller if self._caller is not None else threading.Lock()

    # ---- the arena ---------------------------------------------------------------------
    def _grow_to(self, capacities):
        """Every buffer at least `capacities` bytes (the caller holds the lock)."""
        for b, need in enumerate(capacities):
            old = self.arena[b]
            if old is None or need > old.size:
                self.arena[b] = aligned.empty(max(need, 8), _np.uint8)
                self.table[self.buffer_slots[b]] = self.arena[b].ctypes.data

    def _fit(self, sizes):
        """Make the arena hold this call's sizes (the caller holds the lock)."""
        if not self._monotone:
            self._grow_to(sizes.capacities)
            return
        n = len(sizes.values)
        if all(v <= lim for v, lim in zip(sizes.values, self.limits[:n])):
            return
        limits = [max(v, lim) for v, lim in zip(sizes.values, self.limits[:n])]
        at = dict(zip(self.gen.sizes.order, limits))
        self._grow_to([int(concrete_value(c, at)) for c in self.gen.plan.capacities])
        self.limits[:n] = limits
        if self._dispatched is not None:
            self._dispatched[1][:n] = limits

    # ---- the C Caller ------------------------------------------------------------------
    def _make_caller(self, limits=None):
        """The Caller serving every size within the limits, or None (then every call
        takes the Python path): no extension, a plan that is not monotone, an output
        not in a planned buffer or of a shape that is not a symbol's size, random draws."""
        Caller = caller_type()
        gen, graph = self.gen, self.graph
        order = gen.sizes.index
        if Caller is None or not self._monotone or self.random_slots:
            return None

        def dims(shape):
            out = []
            for d in shape:
                if isinstance(d, SymInt):
                    if d.expr[0] != "sym":
                        return None
                    out.append(-1 - order[d.expr[1]])
                else:
                    out.append(int(d))
            return tuple(out)
        ins = tuple((self.input_slots[k], dims(n.shape), n.dtype.num, n.dtype.itemsize, 0, 0)
                    for k, n in enumerate(graph.inputs))
        pars = tuple((self.param_slots[k], tuple(p.shape), p.dtype.num, p.dtype.itemsize, 0,
                      int(k in self._written_params)) for k, p in enumerate(graph.params))
        outs = []
        for k, (o, slot) in enumerate(zip(graph.outputs, gen.output_slots)):
            if k in self._written:
                outs.append((0, (), -1, 0, 0, 0))     # -1: returned as None
                continue
            shape = dims(o.shape)
            if shape is None or gen.slots[slot][0] != "buffer":
                return None
            outs.append((slot, shape, o.dtype.num, o.dtype.itemsize, 0, 0))
        if any(spec[1] is None for spec in ins):
            return None
        run = ctypes.cast(self._lib.kiln_run, ctypes.c_void_p).value
        counter = writes.counter()
        return Caller(run, ctypes.addressof(self.table), ins, pars, tuple(outs),
                      ctypes.addressof(counter) if counter is not None else 0,
                      weakref.ref(self), getattr(self, "_lock", None), len(order),
                      ctypes.addressof(self.sizes),
                      ctypes.addressof(self.limits if limits is None else limits))

    def caller_for(self, inputs):
        """The C Caller for the C dispatcher, which serves it every size within the limits
        without asking hybridize's guards: only for a program no guard restricts from
        size 0 or 1 up (ShapeEnv.general; smaller sizes then take the checked path), else
        None. It serves these inputs once the arena holds them."""
        if self._caller is None:
            return None
        minimum = next((m for m in (0, 1) if self._env is None or self._env.general(m)),
                       None)
        if minimum is None:
            return None
        sizes = self._sizes_of(inputs)
        n = len(sizes.values)
        with self._lock:
            if self._dispatched is None:
                limits = (ctypes.c_int64 * (2 * n))(*(self.limits[:n] + [minimum] * n))
                self._dispatched = (self._make_caller(limits), limits)
            self._fit(sizes)
        return self._dispatched[0]

    # ---- calling -----------------------------------------------------------------------
    def _sizes_of(self, inputs):
        shapes = tuple(_np.shape(v) for v in inputs)
        found = self._per_shape.get(shapes)
        if found is None:
            found = _Sizes(self, inputs)
            if len(self._per_shape) >= 256:
                self._per_shape.clear()
            self._per_shape[shapes] = found
        return found

    def __call__(self, inputs, params):
        """Run on inputs hybridize's guards accepted: the Caller when the arena holds
        them, else the Python path."""
        caller = self._caller
        if caller is not None:
            out = caller(inputs, params)
            if out is not None:
                return out
        sizes = self._sizes_of(inputs)
        # holding the Caller makes it forget its bound parameters, which this path rebinds
        with self._lock:
            if self._dispatched is not None:
                self._dispatched[0].forget()    # this path rebinds the table's parameters
            self._fit(sizes)
            return self._call(sizes, inputs, params)

    def _call(self, sizes, inputs, params):
        table, keep = self.table, []
        graph = self.graph
        if len(inputs) != len(graph.inputs) or len(params) != len(graph.params):
            raise KilnError(f"C backend: expected {len(graph.inputs)} inputs and "
                            f"{len(graph.params)} parameters, got {len(inputs)} and "
                            f"{len(params)}")
        self.sizes[:] = sizes.values
        for k, (value, node, shape) in enumerate(zip(inputs, graph.inputs,
                                                      sizes.input_shapes)):
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
            attrs = concrete_value(node.attrs, sizes.bindings)
            draw = _np.ascontiguousarray(REGISTRY[node.op].impl(**attrs), dtype=node.dtype)
            keep.append(draw)
            table[slot] = draw.ctypes.data if draw.size else None
        rc = self._run(ctypes.addressof(table))
        if rc != 0:
            raise KilnError(f"C backend: the program {graph.name} failed (code {rc})")
        results = []
        for k, (o, shape, slot) in enumerate(zip(graph.outputs, sizes.output_shapes,
                                                  self.gen.output_slots)):
            results.append(None if k in self._written else
                           self._read(slot, shape, o.dtype, inputs, params, keep))
        for k in self._written:
            param = graph.state_outputs[k]
            if params[param] is not keep[len(inputs) + param]:
                results[k] = _np.array(keep[len(inputs) + param], copy=True)
        return results

    def _read(self, slot, shape, dtype, inputs, params, keep):
        kind, what = self.gen.slots[slot][0], self.gen.slots[slot][1:]
        size = int(_np.prod(shape, dtype=_np.int64))
        if kind == "buffer":
            data = self.arena[what[0]][:size * dtype.itemsize]
            return data.view(dtype).reshape(shape).copy()
        if kind == "const":
            return _np.array(what[0], copy=True)
        if kind == "input":
            return _np.array(inputs[what[0]], dtype=dtype, copy=True).reshape(shape)
        if kind == "param":
            return _np.array(params[what[0]], dtype=dtype, copy=True).reshape(shape)
        if kind == "random":
            return next(a for a in keep if a.size and a.ctypes.data == self.table[slot]
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
