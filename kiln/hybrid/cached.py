"""Hybridized execution: trace once per input signature, optimize, run compiled.

A CachedFunction keeps one compiled entry per signature (array shapes and dtypes, the
non-array arguments, train/predict mode, and which inputs need gradients). Inside
autograd.record() a call is one node on the tape; its backward runs the compiled gradient
graph, built from the registry's gradient rules and optimized like the forward.

Threads: the first calls of one signature made at once by several threads wait for one
trace and compile (a lock per signature), then all run the compiled program; different
signatures trace side by side, each thread with its own trace (kiln/_core/trace.py).
"""
import threading
import weakref

import numpy as _np

from .._core import autograd
from .._core.ndarray import ndarray
from .._core.writes import arrays_written
from .._core import trace
from .._core.base import GraphBreak, SymbolicValueError
from .._core.symdim import building
from ..backend import fast_dispatcher, select
from ..graph.capture import capture
from ..graph.passes.pipeline import run_pipeline
from ..graph.split import split_forward_backward
from ..graph.tree import flatten, unflatten, ARRAY
from .fallback import build_entry, strong
from .._core.bfloat16 import is_floating
from .dynamic import ShapePolicy, policy_from_flags
from .precision import precision_of, run_precision


MISS = object()


def make_program(graph, backend, cap=None):
    """Compile `graph`; with `cap`, its outputs after the first cap.n_outputs are the new
    values of cap.state_params, which the program may write into the parameters itself."""
    if cap is not None and cap.state_params:
        index = {id(cap.params[id(p)]): j for j, p in enumerate(graph.params)}
        graph.state_outputs = {cap.n_outputs + k: index[id(param)]
                               for k, param in enumerate(cap.state_params)
                               if id(param) in index}
    return select(backend).compile(graph)


def _write_state(cap, results):
    """Copy the new parameter values a program returned into the parameters; a program
    that wrote one in place returns None in its place."""
    if not cap.state_params:
        return
    n = cap.n_outputs
    try:
        for param, value in zip(cap.state_params, results[n:n + len(cap.state_params)]):
            if value is not None:
                _np.copyto(param.data()._data, value)
    finally:
        arrays_written()    # also for the parameters the program wrote in place


def _write_args(cap, arrays, results, recorded):
    """The arguments the traced code updated in place get their new values, as in eager
    mode: written into the caller's array, or (on the autograd tape, or a read-only array)
    the array object rebound to the new value."""
    for k, j in enumerate(cap.written_args):
        target, value = arrays[j], results[cap.n_user + k]
        if recorded:
            target._rebind(value)
        elif target._node is None and target._data.flags.writeable:
            _np.copyto(target._data, value._data if isinstance(value, ndarray) else value)
        else:
            target._rebind(value if isinstance(value, ndarray) else ndarray._wrap(value))
    arrays_written()


def _backward_for(entry, absent, backend):
    """The entry's backward program for calls where the float outputs at `absent` got no
    gradient (no loss used them): compiled once per such set, see zero_cotangents.py.
    Returns (program, the positions in the full backward's parameters of the ones it
    still reads: pruning can leave a parameter unused, and dead-code elimination drops it)."""
    programs = entry.__dict__.setdefault("pruned", {})
    found = programs.get(absent)
    if found is not None:
        return found
    with entry.building:     # threads whose losses skip the same outputs compile it once
        found = programs.get(absent)
        if found is not None:
            return found
        bprogram, _, n_res = entry.grad
        graph = bprogram.graph
        cotangents = graph.inputs[n_res:n_res + entry.cap.n_grad_outputs]
        pruned = run_pipeline("pruned-backward", graph, cotangents=cotangents,
                              absent=[cotangents[j] for j in absent])
        program = make_program(pruned, backend)
        position = {id(p): k for k, p in enumerate(graph.params)}
        found = programs[absent] = (program, [position[id(p)] for p in program.graph.params])
    return found


class _Entry:
    """One compiled signature."""
    eager = False       # see fallback.EagerEntry
    guards = None       # None, or a check that captured constants are unchanged (guards.py)
    symbolic = None     # dynamic.SymbolicInputs of a program with symbolic dimensions

    def __init__(self, cap, program, params, grad=None):
        self.cap = cap
        self.program = program
        self.params = params            # Parameters, in program.graph.params order
        self.grad = grad                # (backward program, its params, n_residuals) or None
        self.single = cap.out_structure is ARRAY
        self.building = threading.Lock()    # held while a pruned backward is compiled

    def run_inference(self, arrays):
        """The hot path: no autograd, every argument an eager array."""
        for hook in self.cap.pre_call:
            hook()
        results = self.program([a._data for a in arrays], [p._data._data for p in self.params])
        cap = self.cap
        if cap.state_params:
            _write_state(cap, results)
        if cap.written_args:
            _write_args(cap, arrays, results, recorded=False)
        if self.single:
            return ndarray._wrap(results[0])
        return unflatten(cap.out_structure, [ndarray._wrap(v) for v in results[:cap.n_outputs]])


class CachedFunction:
    def __init__(self, fn, name, backend=None, param_names=None, strict=False,
                 trace_warning=True, shape_policy=None):
        self._fn = fn       # or a weakref.ref to it: see cached_function_of
        self.policy = shape_policy or ShapePolicy()    # which dimensions are symbolic
        self.name = name
        self.strict = strict             # a trace that breaks is an error, not a fallback
        self.trace_warning = trace_warning   # the KilnTraceWarning on the first trace
        self.backend = backend
        self.param_names = param_names   # callable -> {id(param): structural name}
        self.entries = {}
        self._fast = {}                  # (shapes/dtypes, training) -> _Entry, for __call__
        # the C dispatcher serving plain compiled entries whole (backend/c/fastcall.py)
        self.dispatch = None
        self._dispatched = set()
        self._lock = threading.Lock()    # for _building and for making the dispatcher
        self._building = {}              # signature key -> lock held while it is built
        # a pipeline run on each traced graph before generic, with its options (mixed
        # precision: set_precision_pipeline)
        self.precision = None

    fn = property(lambda self: strong(self._fn), doc="the function traced")

    # ---- building --------------------------------------------------------------------------
    def _names(self):
        return self.param_names() if self.param_names is not None else None

    def with_precision(self, graph, called=()):
        """`graph` through the block's precision pipeline (amp, int8), or else through the
        one of the hybridized blocks the traced code called (`called`: a compiled training
        step of an AMP-converted net is mixed precision as one program)."""
        return run_precision(self.precision, graph, called, self.name)

    def _build(self, args, grad_mask):
        """Trace and compile for args: with symbolic sizes where the shape policy says so
        (a build that cannot keep them symbolic specializes, and the policy remembers why)."""
        arrays, structure = flatten(tuple(args))
        avals = tuple((a.shape, a.dtype) for a in arrays)
        key = (structure, avals, autograd.is_training(), grad_mask)
        relaxed = self.policy.relaxed_key(key)
        plans = self.policy.plans(getattr(self, "policy_target", self.fn), relaxed,
                                  [s for s, _ in avals],
                                  getattr(select(self.backend), "symbolic", False))
        self.policy.note_build(key, plans[0] if plans else None, stale=key in self.entries)
        failed = None
        for plan in plans:
            try:
                with building(plan.env):
                    entry = self._build_for(args, grad_mask, plan.shapes)
            except (GraphBreak, SymbolicValueError):
                raise
            except Exception as exc:  # a rule or pass that cannot take a symbolic size
                failed = failed or f"{type(exc).__name__}: {exc}"
                continue
            entry.symbolic = plan
            self.policy.add(relaxed, entry, plan.env)
            return entry
        # built for these sizes: an error of the call itself (softmax over no rows, argmax
        # of an empty array, as eagerly) raises here and leaves later sizes symbolic
        entry = self._build_for(args, grad_mask)
        if failed is not None:
            self.policy.refuse(relaxed, failed)
        return entry

    def _build_for(self, args, grad_mask, input_shapes=None):
        if grad_mask is None:
            cap = capture(self.fn, args, self.name, self._names(),
                          note_side_effects=self.trace_warning, input_shapes=input_shapes)
            graph = run_pipeline("generic", self.with_precision(cap.graph, cap.precisions))
            program = make_program(graph, self.backend, cap)
            self._known_params = list(cap.params.values())
            return _Entry(cap, program, [cap.params[id(p)] for p in graph.params])
        cap = capture(self.fn, args, self.name, self._names(), grad_inputs=grad_mask,
                      note_side_effects=self.trace_warning, input_shapes=input_shapes)
        cap.grad_mask = grad_mask
        joint = run_pipeline("generic", self.with_precision(cap.graph, cap.precisions))
        if select(self.backend).name == "c":
            from ..backend.c.program import lay_out_joint
            joint = lay_out_joint(joint)
        n_fwd = cap.n_outputs + len(cap.state_params)
        fwd, bwd, n_res = split_forward_backward(joint, cap.n_inputs, n_fwd)
        fwd, bwd = run_pipeline("generic", fwd), run_pipeline("generic", bwd)
        # the residuals are the backward's alone: it may reuse their memory as they die
        bwd.donated_inputs = tuple(range(n_res))
        program = make_program(fwd, self.backend, cap)
        bprogram = make_program(bwd, self.backend)
        self._known_params = list(cap.params.values())
        return _Entry(cap, program, [cap.params[id(p)] for p in fwd.params],
                      (bprogram, [cap.params[id(p)] for p in bwd.params], n_res))

    def entry_for(self, args, training=None, grad_mask=None):
        arrays, structure = flatten(tuple(args))
        if training is None:
            training = autograd.is_training()
        key = (structure, tuple((a.shape, a.dtype) for a in arrays), training, grad_mask)
        entry = self.entries.get(key)
        if entry is None:
            # a symbolic program whose guards hold for these sizes serves them from now on
            relaxed = self.policy.observe(key)
            entry = self.policy.serving(relaxed, [a.shape for a in arrays])
            if entry is not None:
                self.entries[key] = entry
        if entry is None or entry.guards is not None and not entry.guards():
            with self._lock:
                building = self._building.setdefault(key, threading.RLock())
            # re-entrant: a build that calls this function again on its own thread with
            # the same signature builds it there, as it did before threads waited
            with building:
                entry = self.entries.get(key)    # another thread may have built it meanwhile
                if entry is None or entry.guards is not None and not entry.guards():
                    with autograd._scope(None, training):
                        entry = self.entries[key] = build_entry(self, args, grad_mask)
        return entry, arrays

    # ---- calling ---------------------------------------------------------------------------
    def _fast_key(self, args):
        """(argument shapes and dtypes, training) when every argument is an eager kiln
        array and nothing records, else None."""
        state = autograd._state
        if state.recording:
            return None
        try:
            return (tuple([(a._data.shape, a._data.dtype) for a in args]), state.training)
        except AttributeError:      # not all arguments are eager kiln arrays
            return None

    def call_fast(self, args):
        """The result when a compiled signature serves `args` as they are, else MISS. It
        never runs the traced function, so a block may call it without re-entry guards."""
        if self.dispatch is not None:
            out = self.dispatch(*args)
            if out is not NotImplemented:
                return out
        return self.call_entry(args)

    def call_entry(self, args):
        """call_fast after the C dispatcher declined (or without one)."""
        entry = self._fast.get(self._fast_key(args))
        if entry is None or entry.guards is not None and not entry.guards():
            return MISS
        return entry.run_inference(args)

    def __call__(self, *args):
        out = self.call_fast(args)
        return out if out is not MISS else self.call_slow(args)

    def call_slow(self, args):
        """A call call_fast did not serve: build the signature's entry (tracing), or run
        under autograd."""
        key = self._fast_key(args)
        if key is not None and all(type(a) is ndarray for a in args):
            entry, _ = self.entry_for(args)
            if not entry.eager:
                # an eager entry calls the block again; served from _fast, outside the
                # guard call_slow's caller sets, that call would find it there again: an
                # endless recursion from the second call on
                self._fast[key] = entry
                self._offer_to_dispatcher(entry, key[1], args)
            return entry.run_inference(args)
        return self._call(args)

    def _offer_to_dispatcher(self, entry, training, args):
        """Entries with nothing to do in Python around the program (no guards, hooks or
        state to write back, one output) are served by the C dispatcher. A program with
        run-time sizes offers a Caller per size (backend/c/sized_program.py)."""
        if entry.eager:
            return
        cap = entry.cap
        if entry.guards is not None or cap.pre_call or cap.written_args \
                or cap.state_params or not entry.single:
            return
        caller_for = getattr(entry.program, "caller_for", None)
        caller = getattr(entry.program, "_caller", None) if caller_for is None else \
            caller_for([a._data for a in args])
        if caller is None:
            return
        with self._lock:     # threads offering their first entries make one dispatcher
            if id(caller) in self._dispatched:
                return
            dispatch = self.dispatch
            if dispatch is None:
                dispatch = fast_dispatcher()
                if dispatch is None:
                    return
            dispatch.add(caller, list(entry.params), training)
            self._dispatched.add(id(caller))
            self.dispatch = dispatch

    def _call(self, args):
        arrays, _ = flatten(tuple(args))
        grad_mask = None
        if autograd._state.recording:
            flags = tuple(a._tape is not None for a in arrays)
            if any(flags) or self._params_need_grad():
                grad_mask = flags
        entry, arrays = self.entry_for(args, grad_mask=grad_mask)
        if entry.eager:
            return entry.run(args)
        values = [a._concrete("a hybridized call") for a in arrays]
        for hook in entry.cap.pre_call:
            hook()
        param_arrays = [p.data() for p in entry.params]
        results = entry.program(values, [p._data for p in param_arrays])
        cap = entry.cap
        n_out = cap.n_outputs
        _write_state(cap, results)
        outs = [ndarray._wrap(v) for v in results[:n_out]]
        if entry.grad is not None:
            self._record(entry, arrays, values, outs, results[n_out + len(cap.state_params):])
        if cap.written_args:
            # as eager does inside record(): rebind rather than write into the buffer
            _write_args(cap, arrays, outs, recorded=autograd._state.recording)
        return unflatten(cap.out_structure, outs)

    _known_params = None

    def _params_need_grad(self):
        if self._known_params is None:
            return True   # before the first trace we cannot know; trace with gradients
        return any(p.data()._tape is not None for p in self._known_params)

    def _record(self, entry, arrays, values, outs, residuals):
        bprogram, bparams, _ = entry.grad
        cap = entry.cap
        param_values = {id(p): p.data()._data for p in bparams}
        grad_arrays = [a for a, flag in zip(arrays, cap.grad_mask)
                       if flag and is_floating(a.dtype)]
        float_outs = [k for k, o in enumerate(outs) if is_floating(o.dtype)]
        grad_params = cap.grad_params

        connected = [k for k in float_outs if k in cap.connected]

        def backward(out_grads):
            given = {k: g for k, g in zip(connected, out_grads) if g is not None}
            gouts = [given[k]._concrete("backward") if k in given else
                     _np.zeros(outs[k].shape, outs[k].dtype) for k in float_outs]
            absent = tuple(j for j, k in enumerate(float_outs) if k not in given)
            params = [param_values[id(p)] for p in bparams]
            program = bprogram
            # a symbolic backward gets zeros for the absent gradients: a pruned program
            # compiled now could add guards that sizes already served do not meet
            if absent and entry.symbolic is None:
                program, kept = _backward_for(entry, absent, self.backend)
                params = [params[k] for k in kept]
            res = list(residuals)
            if getattr(getattr(program, "graph", None), "donated_inputs", ()) \
                    and autograd.retaining():
                res = [r.copy() for r in res]   # read again by the next backward pass
            grads = program(res + gouts + values, params)
            return [ndarray._wrap(g) for g in grads]

        if connected:
            inputs = grad_arrays + [p.data() for p in grad_params]
            autograd.record_custom(cap.graph.name, inputs, [outs[k] for k in connected],
                                   backward, sparse=True)

    def graph(self, *args):
        entry, _ = self.entry_for(args)
        return entry.program.graph


def call_hybridized(block, *args):
    return cached_function_of(block)(*args)


_making_cached = threading.Lock()


def cached_function_of(block):
    cached = block.__dict__.get("_kiln_cached")
    if cached is None:
        with _making_cached:     # one per block, when threads make its first calls at once
            cached = block.__dict__.get("_kiln_cached")
            if cached is None:
                opts = getattr(block, "_hybrid_opts", None) or {}
                # held weakly: the block holds its programs, and a cycle kept a dropped
                # block and its programs' buffers alive until a full garbage collection
                owner = weakref.ref(block)
                cached = CachedFunction(owner, type(block).__name__,
                                        backend=opts.get("backend"),
                                        strict=bool(opts.get("strict", False)),
                                        param_names=lambda: _structural_names(owner()),
                                        shape_policy=shape_policy_of(opts))
                cached.precision = precision_of(block)
                block.__dict__["_kiln_cached"] = cached
    return cached


def set_precision_pipeline(block, name, **options):
    """Run the pipeline `name` (graph/passes/pipeline.py) with `options` on every graph
    `block` traces from now on, before the generic passes (kiln.contrib.amp); name None
    stops it. The programs compiled before are dropped."""
    with _making_cached:
        block.__dict__.pop("_kiln_cached", None)
        block.__dict__["_kiln_precision"] = None if name is None else (name, dict(options))


def shape_policy_of(opts):
    """The ShapePolicy hybridize's flags ask for (static_shape, dynamic, dynamic_axes)."""
    return policy_from_flags(bool(opts.get("static_shape", False)), opts.get("dynamic"),
                             opts.get("dynamic_axes"))


def _structural_names(block):
    try:
        return {id(p): name for name, p in block.collect_params().items()}
    except Exception:  # a block with deferred or unusual parameters: fall back to own names
        return {}


class HybridFunction:
    """What kiln.hybridize returns: call it like the original; .graph(*args) shows the graph."""

    def __init__(self, fn, backend=None, strict=False, trace_warning=True, shape_policy=None):
        self.__wrapped__ = fn
        names = None
        if hasattr(fn, "collect_params"):
            names = lambda: _structural_names(fn)  # noqa: E731
        name = getattr(fn, "__name__", type(fn).__name__)
        self._cached = CachedFunction(self._run, name, backend=backend, param_names=names,
                                      strict=strict, trace_warning=trace_warning,
                                      shape_policy=shape_policy)
        self._cached.policy_target = fn     # dynamic_axes name fn's arguments

    def _run(self, *args):
        from ..graph.convert import convert     # array-dependent if/while become graph ops
        return convert(self.__wrapped__)(*args)

    def __call__(self, *args):
        if trace.current() is not None:
            return self._run(*args)
        return self._cached(*args)

    def graph(self, *args):
        return self._cached.graph(*args)

    def __repr__(self):
        return f"<kiln.hybridize of {self.__wrapped__!r}>"


def hybridize(fn_or_block=None, backend=None, **flags):
    """Compile a function or block: kiln.hybridize(f)(x) computes f(x) as a graph program.

    strict=True: code that cannot be compiled is an error, not an eager fallback.
    trace_warning=False: no KilnTraceWarning ("side effects run only while tracing") for
    this function, whose author knows (kiln.fit's own step).
    static_shape=True: one program per input shape; dynamic=True: every size symbolic;
    dynamic_axes={'x': {0: 'batch'}}: these sizes symbolic. By default sizes become
    symbolic once they vary (dynamic.py)."""
    if fn_or_block is None:
        return lambda f: hybridize(f, backend=backend, **flags)
    return HybridFunction(fn_or_block, backend=backend, strict=bool(flags.get("strict")),
                          trace_warning=bool(flags.get("trace_warning", True)),
                          shape_policy=shape_policy_of(flags))
