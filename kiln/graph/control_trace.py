"""Emitting `cond` / `while_loop` nodes while tracing: trace the branches or the loop body
as subgraphs and check that what they produce can flow through one compiled program.

Values are flattened (control_values.py): kiln arrays become graph values; Python numbers
also become graph values when they differ between branches or are carried by a loop (a
counter `i = 0`); anything else (None, a module, a string) must be the same object on
every path. Which variables keep the arrays they had, on which paths: control_paths.py.
"""
import itertools

import numpy as _np

from .._core import alias_paths, autograd, layouts, trace
from .._core.base import ControlFlowError, GraphBreak, KilnError, user_frame
from .._core.ir import Node
from .._core.ndarray import ndarray, as_array
from ..ops.registry import REGISTRY
from ..ops.subgraph import Subgraph
from .control_paths import (CROSS, BranchPaths, Refusal, as_bool, settle_loop, tracked_loop,
                            trace_tracking)
from .control_values import (Static, as_branch_value, flatten, initial_array, is_array, label,
                             short, unflatten)
from .convert_runtime import UNDEF
from .subgraph import trace_in_subcontext, union_captures
from .._core.bfloat16 import is_floating


def _where():
    found = user_frame()
    return f" at {found[0]}:{found[1]}" + (f"\n    {found[2]}" if found[2] else "") if found else ""


# ---- cond ----------------------------------------------------------------------------------
def emit_cond(pred, then_fn, else_fn, args=(), names=None, what="if"):
    """Trace both branches on `args` and return the merged result as symbolic arrays."""
    where = _where()
    if pred.size != 1:
        raise ControlFlowError(f"{what}: the condition must have one element, got shape "
                        f"{pred.shape}{where}")
    # each branch gets its own array objects: an in-place op in one branch rebinds its
    # argument, and must not leak into the other branch or the enclosing trace
    fresh_t, fresh_e = _fresh(args), _fresh(args)
    given_t, given_e = [_node(a) for a in fresh_t], [_node(a) for a in fresh_e]
    track = names is not None
    ctx_t, res_t, ident_t = _trace_branch(then_fn, fresh_t, "then", track, what, where)
    ctx_e, res_e, ident_e = _trace_branch(else_fn, fresh_e, "else", track, what, where)
    leaves_t, struct_t = flatten(res_t)
    leaves_e, struct_e = flatten(res_e)
    if struct_t != struct_e:
        raise ControlFlowError(f"{what}: the two branches produce differently structured results "
                        f"({struct_t} vs {struct_e}); with an array condition both branches "
                        f"must assign the same variables{where}")
    outs_t, outs_e, merged, values = [], [], [], []
    for k, (a, b) in enumerate(zip(leaves_t, leaves_e)):
        if isinstance(a, Static) or isinstance(b, Static):
            if isinstance(a, Static) and isinstance(b, Static) and a.same(b):
                merged.append(a)
                continue
            raise ControlFlowError(f"{what}: {label(names, k, 'result')} differs between the "
                            f"branches and is not an array ({short(a)} vs {short(b)}); an "
                            f"array condition can only choose between arrays{where}")
        if not is_array(a) and not is_array(b) and a == b and type(a) is type(b):
            merged.append(Static(a))
            continue
        a, b = as_branch_value(a, b), as_branch_value(b, a)
        values.append((a, b))
        if a.shape != b.shape or a.dtype != b.dtype:
            raise ControlFlowError(f"{what}: {label(names, k, 'result')} is "
                                   f"{a.dtype}{list(a.shape)} in one branch but "
                                   f"{b.dtype}{list(b.shape)} in the other; with an array "
                                   f"condition both must agree{where}")
        outs_t.append(ctx_t.node_of(a))
        outs_e.append(ctx_e.node_of(b))
        merged.append(None)
    n_user = len(outs_t)
    paths = None
    if (ident_t is not None and ident_e is not None
            and len(leaves_t) == len(ident_t) == len(args)):
        written = [_node(t) is not gt or _node(e) is not ge
                   for t, e, gt, ge in zip(fresh_t, fresh_e, given_t, given_e)]
        paths = BranchPaths(args, list(zip(ident_t, ident_e)), written)
        paths.add_outputs(ctx_t, ctx_e, fresh_t, fresh_e, outs_t, outs_e)
    operands, (ins_t, ins_e) = union_captures([ctx_t, ctx_e])
    then_graph = Subgraph(ins_t, [], outs_t, "then")
    else_graph = Subgraph(ins_e, [], outs_e, "else")
    _refuse_random([then_graph, else_graph], len(outs_t), "if", where)
    _refuse_random_gradients([then_graph, else_graph], [pred] + operands, what, where)
    prim = REGISTRY["cond"]
    results = [prim(pred, *operands, then_graph=then_graph, else_graph=else_graph, index=j)
               for j in range(len(outs_t))]
    _untrack(results, operands, lambda j: _reaching(then_graph, j) | _reaching(else_graph, j))
    it = iter(results[:n_user])
    leaves = [m if m is not None else next(it) for m in merged]
    for result, branch_values in zip(results[:n_user], values):
        # eagerly the result is one branch's array, with that array's memory layout
        layouts.merge(result, branch_values, lambda: [as_bool(pred), REGISTRY[
            "logical_not"](as_bool(pred))])
    if paths is not None:
        leaves = paths.settle(leaves, results[n_user:], pred,
                              Refusal(where, what, lambda k: label(names, k, "result")))
    return unflatten(struct_t, leaves)


def _trace_branch(fn, given, name, track, what, where):
    """trace_tracking of one branch. An error the branch raises for these shapes (a max of
    an empty array, say) is not the program's: eagerly the branch runs only when taken, so
    the signature runs eagerly instead (a graph break) and raises only if it is taken."""
    try:
        return trace_tracking(fn, given, name, track)
    except GraphBreak:
        raise
    except KilnError as exc:
        raise ControlFlowError(f"{what}: its {name} branch raises for these shapes when "
                               f"traced ({str(exc).splitlines()[0]}); eagerly it runs only "
                               f"if taken{where}") from exc


def _fresh(args):
    """Each branch's own array objects, with the layouts of the arrays they stand for. An
    eager array becomes a constant node first: an in-place op in a branch then rebinds it
    (seen by BranchPaths) instead of writing into memory the other branch and the caller
    share."""
    ctx = trace.current()
    fresh = []
    for a in args:
        if isinstance(a, ndarray):
            b = a._alias() if a._node is not None or ctx is None else ndarray._from_node(
                ctx.constant(a._data))
            layouts.inherit(b, a)
            a = b
        fresh.append(a)
    return tuple(fresh)


def _node(a):
    return a._node if isinstance(a, ndarray) else None


def _has_random(graph):
    for n in graph.nodes:
        if not n.is_source and REGISTRY[n.op].random:
            return True
        if any(isinstance(v, Subgraph) and _has_random(v) for v in n.attrs.values()):
            return True
    return False


def _refuse_random(graphs, n_outputs, what, where):
    """A loop, or a branch with several results, evaluates its subgraphs once per result
    node (and a loop memoizes by operand values): random draws inside would disagree
    between results or repeat between calls, so such code runs eagerly."""
    if n_outputs > 1:
        if any(_has_random(g) for g in graphs):
            raise ControlFlowError(f"{what}: a random op (dropout, np.random) inside a loop, "
                                   f"or inside a branch with several results, is not "
                                   f"compiled{where}")


def _refuse_random_gradients(graphs, operands, what, where):
    """The gradient of a branch or loop re-evaluates its body, which would draw new random
    numbers (dropout) and so differentiate a different function: run such code eagerly."""
    if not autograd.is_recording() or not any(a._tape is not None for a in operands):
        return
    if any(_has_random(g) for g in graphs):
        raise ControlFlowError(f"{what}: a random op (dropout, np.random) inside a branch or "
                               f"loop with an array condition cannot be differentiated "
                               f"consistently in a compiled graph{where}")


# ---- while_loop ----------------------------------------------------------------------------
# rounds of tracing a loop body again with the layouts its carried arrays may start an
# iteration with, before such a layout is taken as unknown
_LAYOUT_ROUNDS = 3


def emit_while(cond_fn, body_fn, values, names=None, max_iterations=None, what="while"):
    """Trace `while cond_fn(*values): values = body_fn(*values)` into while_loop nodes."""
    where = _where()
    values = tuple(values)
    leaves, structure = flatten(values)
    loop = _Loop(cond_fn, body_fn, leaves, structure, names, max_iterations, what, where)
    ident, written = loop.identities, loop.written
    if ident is None:
        return unflatten(structure, loop.out_leaves)
    for k, s in enumerate(ident):
        if s is CROSS and written[k]:
            raise alias_paths.PathAliasingError(
                f"{what}: {label(names, k, 'value')} is written in place in the loop body "
                f"and then becomes another variable's array (or a view of one), so the "
                f"writes of later iterations reach other names, which one compiled program "
                f"does not follow{where}")
    # which original array a variable is on each run, when the body may keep it on some
    # iterations (an inner if) or writes into it before rebinding it: carried flags
    track = [k for k, s in enumerate(ident) if is_array(leaves[k]) and s is not True
             and s is not CROSS and (is_array(s) or written[k])]
    flags, kept = {}, {}
    if track:
        cond_ext, body_ext, values_ext, names_ext = tracked_loop(
            cond_fn, body_fn, values, names, written, loop.leaves, track)
        leaves_ext, structure_ext = flatten(values_ext)
        loop = _Loop(cond_ext, body_ext, leaves_ext, structure_ext, names_ext,
                     max_iterations, what, where)
        n = len(leaves)
        flags = dict(zip(track, loop.out_leaves[n:]))
        kept = dict(zip([k for k in track if written[k]], loop.out_leaves[n + len(track):]))
        leaves = loop.leaves[:n]
    out = settle_loop(loop, leaves, ident, written, flags, kept,
                      Refusal(where, what, lambda k: label(names, k, "value")))
    return unflatten(structure, out)


class _Loop:
    """One while_loop traced and emitted: its results (`out_leaves`), and for each
    variable whether the body returns the array it was given (`identities`, see
    alias_paths.identity) and whether it wrote into that array (`written`)."""

    def __init__(self, cond_fn, body_fn, leaves, structure, names, max_iterations, what,
                 where):
        self.leaves, self.max_iterations = leaves, max_iterations
        carried_pos = [k for k, v in enumerate(leaves) if not isinstance(v, Static)]
        init = {k: initial_array(leaves[k]) for k in carried_pos}
        # carried arrays whose layout changes between iterations: the layouts an iteration
        # may start with (after _LAYOUT_ROUNDS, [None]: unknown, which ends the rounds)
        varying = {}
        for attempt in itertools.count():
            traced = _trace_loop(cond_fn, body_fn, leaves, structure, carried_pos, init,
                                 where, names, what, varying)
            retry = False
            if attempt == 0 and traced["temps"]:
                # a name first assigned inside the body is read after the loop in Python:
                # carry it, starting from zeros (eagerly it would not exist if the loop ran
                # no time)
                for k, value in traced["temps"].items():
                    init[k] = as_array(_np.zeros(value.shape, dtype=value.dtype))
                    leaves[k] = init[k]
                carried_pos = sorted(set(carried_pos) | set(traced["temps"]))
                retry = True
            for k, out in traced["body_outs"].items():
                start = init[k]
                if out.shape == start.shape and out.dtype == start.dtype:
                    continue
                if attempt == 0 and not is_array(leaves[k]):
                    # a Python number carried by the loop: start it with the body's dtype
                    # and shape
                    init[k] = as_array(_np.full(out.shape, leaves[k], dtype=out.dtype))
                    retry = True
                    continue
                raise ControlFlowError(f"{what}: {label(names, k, 'loop value')} enters the "
                                       f"loop as {start.dtype}{list(start.shape)} but the body "
                                       f"makes it {out.dtype}{list(out.shape)}; a value carried "
                                       f"by a loop with an array condition must keep its "
                                       f"shape and dtype{where}")
            if not retry:
                # the body was traced with each array laid out as it enters the loop (or as
                # an earlier iteration may leave it): if it returns another layout, later
                # iterations see that one (layouts.py); after a few rounds, it is unknown
                for k, out in traced["body_outs"].items():
                    known = varying.get(k) or layouts.layouts_of(init[k])
                    grown = layouts.loop_layouts(known, out)
                    if grown is not None:
                        varying[k] = grown if attempt < _LAYOUT_ROUNDS else [None]
                        retry = True
            if not retry:
                break
        ctx_c, ctx_b = traced["ctx_c"], traced["ctx_b"]
        invariants, (inv_c, inv_b) = union_captures([ctx_c, ctx_b])
        self.cond_graph = Subgraph(traced["in_c"] + inv_c, [], [traced["pred"]], "while_cond")
        self.random_condition = _has_random(self.cond_graph)
        body_outs = [ctx_b.node_of(traced["body_outs"][k]) for k in carried_pos]
        body_graph = Subgraph(traced["in_b"] + inv_b, [], body_outs, "while_body")
        self.operands = operands = [init[k] for k in carried_pos] + invariants
        _refuse_random([self.cond_graph, body_graph], 2, "while loop", where)
        _refuse_random_gradients([self.cond_graph, body_graph], operands, what, where)
        prim = REGISTRY["while_loop"]
        results = [prim(*operands, cond_graph=self.cond_graph, body_graph=body_graph,
                        n_carried=len(carried_pos), index=j, max_iterations=max_iterations)
                   for j in range(len(carried_pos))]
        n = len(carried_pos)
        deps = [{j} | _reaching(body_graph, j) for j in range(n)]
        changed = True
        while changed:       # a carried value depends on what the values it reads depend on
            changed = False
            for j in range(n):
                grown = deps[j].union(*[deps[i] for i in deps[j] if i < n])
                changed, deps[j] = changed or grown != deps[j], grown
        _untrack(results, operands, lambda j: deps[j])
        self.out_leaves = list(leaves)
        for k, r in zip(carried_pos, results):
            self.out_leaves[k] = r
        self.returned = traced["body_outs"]
        ident = traced["identities"]
        self.identities = ident if ident is not None and len(ident) == len(leaves) else None
        self.written = [is_array(g) and g._node is not b
                        for g, b in zip(traced["given"], traced["before"])]

    def zero_iterations(self):
        """0-d bool: the loop ran no time (its condition on the values it started with is
        false), evaluated by a `cond` on the loop's own condition graph."""
        if self.max_iterations == 0:
            return as_bool(True)
        first = REGISTRY["cond"](as_bool(True), *self.operands, then_graph=self.cond_graph,
                                 else_graph=self.cond_graph, index=0)
        return REGISTRY["logical_not"](as_bool(first))


def _reaching(graph, k):
    """Indices of graph.inputs that output k reads, directly or not."""
    position = {id(n): i for i, n in enumerate(graph.inputs)}
    seen, stack, found = set(), [graph.outputs[k]], set()
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if id(node) in position:
            found.add(position[id(node)])
        stack.extend(node.inputs)
    return found


def _untrack(results, operands, reads):
    """An output that no recorded operand reaches stays off the tape, as it would be when
    the branch or loop ran eagerly (then backward() from it raises there and here alike)."""
    tracked = {i for i, a in enumerate(operands) if a._tape is not None}
    for j, r in enumerate(results):
        if r._tape is not None and not reads(j) & tracked:
            r._tape = None


def _keep_float_width(ctx, value, start):
    """Eagerly a Python loop index is weakly typed (`y * 0.5 + i` stays float32); in the
    loop graph the index is an int64 array, which would widen y. Keep the carried width."""
    if (value.dtype != start.dtype and is_floating(value.dtype) and is_floating(start.dtype)
            and value.shape == start.shape):
        trace.push(ctx)
        try:
            return value.astype(start.dtype)
        finally:
            trace.pop()
    return value


def _trace_loop(cond_fn, body_fn, leaves, structure, carried_pos, init, where, names, what,
                varying):
    def symbols():
        nodes, args = [], list(leaves)
        for k in carried_pos:
            a = init[k]
            label = names[k] if names and k < len(names) else f"carried{k}"
            node = Node("input", (), {}, a.shape, a.dtype, name=label)
            nodes.append(node)
            args[k] = ndarray._from_node(node)
            if k in varying:
                layouts.set_layouts(args[k], varying[k])
            else:
                layouts.inherit(args[k], a)
        return nodes, unflatten(structure, args)

    in_c, args_c = symbols()
    ctx_c, pred = trace_in_subcontext(cond_fn, args_c, "while_cond", in_c)
    if not is_array(pred):
        pred = as_array(pred)
    if pred.size != 1:
        raise ControlFlowError(f"{what}: the loop condition must have one element, got shape "
                        f"{pred.shape}{where}")
    pred_node = ctx_c.node_of(pred)
    in_b, args_b = symbols()
    given, _ = flatten(args_b)
    before = [_node(a) for a in given]
    ctx_b, new, identities = trace_tracking(body_fn, args_b, "while_body", True, in_b)
    new_leaves, new_structure = flatten(tuple(new) if isinstance(new, list) else new)
    if new_structure != structure:
        raise ControlFlowError(f"{what}: the loop body returns {new_structure}, but the loop "
                        f"carries {structure}{where}")
    body_outs, temps = {}, {}
    for k, (old, nv) in enumerate(zip(leaves, new_leaves)):
        if isinstance(old, Static) and old.value is UNDEF:
            if is_array(nv):
                temps[k] = nv   # first assigned in the body: carried, so it exists after
            continue
        if k in init:
            if isinstance(nv, Static):
                raise ControlFlowError(f"{what}: {label(names, k, 'loop value')} becomes "
                                f"{short(nv)} inside the loop body{where}")
            body_outs[k] = nv if is_array(nv) else as_branch_value(nv, init[k])
            body_outs[k] = _keep_float_width(ctx_b, body_outs[k], init[k])
        elif not (isinstance(nv, Static) and old.same(nv)):
            raise ControlFlowError(f"{what}: {label(names, k, 'loop value')} is not an array and "
                            f"changes inside a loop with an array condition "
                            f"({short(old)} -> {short(nv)}){where}")
    return dict(ctx_c=ctx_c, ctx_b=ctx_b, in_c=in_c, in_b=in_b, pred=pred_node,
                body_outs=body_outs, temps=temps, given=given, before=before,
                identities=identities)
