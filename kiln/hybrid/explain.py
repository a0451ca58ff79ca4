"""kiln.explain(fn_or_block, *args): what hybridize would compile for these inputs, and why
any of it would run eagerly.

It traces a fresh copy (the object's own caches are untouched; an eager fallback is not
warned about, a slower path of this machine warns once as in hybridize) and returns an
Explanation: `graphs` (what was compiled, and which backend runs each graph, with the
reason when it is the NumPy executor), `breaks` (why tracing stopped: kind, construct,
reason, file:line), `watched` (captured constants that trigger a retrace) and
`slower_paths` (parts of kiln's machinery missing here, backend/fallbacks.py).
"""
import contextlib
from collections import Counter

from .._core import autograd, trace
from .._core.ir import Graph
from ..backend import fallbacks
from .._core.symdim import SymInt
from ..ops.subgraph import CONTROL_OPS
from ..graph.tree import flatten
from .cached import CachedFunction, HybridFunction, _structural_names
from .dynamic import policy_from_flags


class GraphInfo:
    def __init__(self, program):
        graph = program.graph
        self.name = graph.name
        self.backend = getattr(program, "backend", "?")
        self.reason = getattr(program, "reason", None)   # why the NumPy executor runs it
        self.ops = Counter(graph.ops)
        self.n_ops = sum(self.ops.values())
        self.control_flow = sum(_control_ops(graph).values())
        self.input_shapes = [n.shape for n in graph.inputs]
        self.symbolic = sorted({d.name for s in self.input_shapes for d in s
                                if isinstance(d, SymInt)})

    def __str__(self):
        flow = f", {self.control_flow} control-flow ops" if self.control_flow else ""
        why = f" ({self.reason})" if self.reason else ""
        sym = f", symbolic sizes {', '.join(self.symbolic)}" if self.symbolic else ""
        return f"graph {self.name}: {self.n_ops} ops{flow}{sym}, runs on {self.backend}{why}"


def _control_ops(graph, seen=None):
    """Control-flow ops in graph and, recursively, in its subgraphs."""
    seen = set() if seen is None else seen
    found = Counter()
    for n in graph.nodes:
        if n.op in CONTROL_OPS:
            found[n.op] += 1
        for v in n.attrs.values():
            if isinstance(v, Graph) and id(v) not in seen:
                seen.add(id(v))
                found += _control_ops(v, seen)
    return found


_BACKEND_NAMES = {"c": "generated C", "numpy": "the NumPy executor"}


class Explanation:
    def __init__(self, name, graphs, breaks, watched, symbolic=None):
        self.name = name
        self.symbolic = symbolic      # dynamic.SymbolicInputs: symbols and their guards
        self.graphs = graphs          # [GraphInfo]
        self.breaks = breaks          # [fallback.Break]
        self.watched = watched        # descriptions of guarded constants
        # [(part, what runs instead, why)]: what this machine lacks (backend/fallbacks.py)
        self.slower_paths = fallbacks.taken()

    @property
    def compiled(self):
        return not self.breaks

    @property
    def reasons(self):
        return [b.kind for b in self.breaks]

    def __str__(self):
        if self.compiled:
            backends = sorted({g.backend for g in self.graphs})
            lines = [f"kiln.explain({self.name}): compiled into {len(self.graphs)} graph(s), "
                     f"run on {' and '.join(_BACKEND_NAMES.get(b, b) for b in backends)}"]
            lines += [f"  {g}" for g in self.graphs]
        else:
            lines = [f"kiln.explain({self.name}): runs eagerly (not compiled), "
                     f"{len(self.breaks)} break(s)"]
            for k, b in enumerate(self.breaks, 1):
                lines.append(f"  break {k} [{b.kind}] {b.construct} at {b.where}")
                if b.code:
                    lines.append(f"      {b.code}")
                lines.append(f"      {b.reason}")
        if self.symbolic is not None:
            lines.append("  " + self.symbolic.describe().replace("\n", "\n  "))
        if self.watched:
            lines.append("  retraces when these captured constants change: "
                         + ", ".join(self.watched))
        shown = {g.reason for g in self.graphs}
        for part, instead, why in self.slower_paths:
            if why not in shown:
                lines.append(f"  fallback ({part}): {why}; {instead}")
        return "\n".join(lines)

    __repr__ = __str__


def explain(fn_or_block, *args, training=False, dynamic=None, dynamic_axes=None):
    """Trace fn_or_block(*args) as hybridize would and report what happened. With
    dynamic=True or dynamic_axes (hybridize's flags), the report names the symbolic sizes
    and every guard the trace recorded, with the line of kiln and of the caller's code
    that forced it."""
    target = fn_or_block
    backend = None              # the one hybridize was asked for, if any
    if isinstance(target, HybridFunction):
        backend = target._cached.backend
        target = target.__wrapped__
    is_block = hasattr(target, "collect_params") and hasattr(target, "forward")
    name = type(target).__name__ if is_block else getattr(target, "__name__", repr(target))
    if is_block:
        target._infer_deferred(args)
        backend = backend or (getattr(target, "_hybrid_opts", None) or {}).get("backend")
        cached = CachedFunction(target, name, backend=backend, trace_warning=False,
                                param_names=lambda: _structural_names(target))
    else:
        wrapper = HybridFunction(target)
        cached = CachedFunction(wrapper._run, name, backend=backend, trace_warning=False)
        cached.policy_target = target
    cached.policy = policy_from_flags(False, dynamic, dynamic_axes)
    cached.quiet = True
    # the block's calls while it is traced go to its own code, not its compiled programs
    with trace.body_of(target) if is_block else contextlib.nullcontext():
        entry, _ = cached.entry_for(args, training=training,
                                    grad_mask=None if not autograd.is_recording() else
                                    tuple(a._tape is not None for a in _arrays(args)))
    if entry.eager:
        return Explanation(name, [], list(entry.breaks), [])
    graphs = [GraphInfo(entry.program)]
    if entry.grad is not None:
        graphs.append(GraphInfo(entry.grad[0]))
    watched = list(getattr(entry.guards, "descriptions", []))
    return Explanation(name, graphs, [], watched, entry.symbolic)


def _arrays(args):
    return flatten(tuple(args))[0]
