"""Emitting `cond` / `while_loop` nodes while tracing: trace the branches or the loop body
as subgraphs and check that what they produce can flow through one compiled program.

Values are flattened: kiln arrays become graph values; Python numbers also become graph
values when they differ between branches or are carried by a loop (a counter `i = 0`);
anything else (None, a module, a string) must be the same object on every path.
"""
import numpy as _np

from .._core.base import DEFAULT_FLOAT, user_frame
from .._core import alias_paths
from .._core.base import ControlFlowError
from .convert_runtime import UNDEF
from .._core.ndarray import ndarray, as_array
from .._core.ir import Node
from ..ops.subgraph import Subgraph
from .subgraph import trace_in_subcontext, union_captures
from .._core.bfloat16 import is_floating

_NUMBER = (bool, int, float, _np.number)


class Static:
    """A non-array leaf: compared by identity or equality across branches/iterations."""
    __slots__ = ("value",)

    def __init__(self, value):
        self.value = value

    def same(self, other):
        a, b = self.value, other.value
        if a is b:
            return True
        try:
            return type(a) is type(b) and bool(a == b)
        except Exception:
            return False


def flatten(value):
    """(leaves, structure); leaves are ndarray, Python numbers or Static."""
    leaves = []

    def walk(v):
        if isinstance(v, ndarray) or (isinstance(v, _NUMBER) and not isinstance(v, _np.ndarray)):
            leaves.append(v)
            return "*"
        if isinstance(v, (tuple, list)):
            return (type(v).__name__, tuple(walk(x) for x in v))
        leaves.append(Static(v))
        return "*"
    return leaves, walk(value)


def unflatten(structure, leaves):
    it = iter(leaves)

    def build(s):
        if s == "*":
            v = next(it)
            return v.value if isinstance(v, Static) else v
        kind, items = s
        out = [build(x) for x in items]
        return tuple(out) if kind == "tuple" else out
    return build(structure)


def _where():
    found = user_frame()
    return f" at {found[0]}:{found[1]}" + (f"\n    {found[2]}" if found[2] else "") if found else ""


def _label(names, k, what):
    if names and k < len(names):
        return f"variable {names[k]!r}"
    return f"{what} {k}"


def _number_dtype(v):
    """A Python number that must become an array (a loop counter `k = 0`, or numbers that
    differ between branches) gets MXNet's dtype for `np.array(number)`: float32. Eagerly
    the number is weakly typed, so `y * k` stays float32; an int64 array would widen it.
    (A loop whose body needs an integer gets the body's dtype: see emit_while's retry.)"""
    if isinstance(v, (bool, _np.bool_)):
        return _np.dtype(_np.bool_)
    if isinstance(v, _np.number):
        return v.dtype
    return DEFAULT_FLOAT


def _is_array(v):
    return isinstance(v, ndarray)


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
    ctx_t, res_t = trace_in_subcontext(then_fn, fresh_t, "then")
    ctx_e, res_e = trace_in_subcontext(else_fn, fresh_e, "else")
    leaves_t, struct_t = flatten(res_t)
    leaves_e, struct_e = flatten(res_e)
    if struct_t != struct_e:
        raise ControlFlowError(f"{what}: the two branches produce differently structured results "
                        f"({struct_t} vs {struct_e}); with an array condition both branches "
                        f"must assign the same variables{where}")
    outs_t, outs_e, merged = [], [], []
    for k, (a, b) in enumerate(zip(leaves_t, leaves_e)):
        if isinstance(a, Static) or isinstance(b, Static):
            if isinstance(a, Static) and isinstance(b, Static) and a.same(b):
                merged.append(a)
                continue
            raise ControlFlowError(f"{what}: {_label(names, k, 'result')} differs between the "
                            f"branches and is not an array ({_short(a)} vs {_short(b)}); an "
                            f"array condition can only choose between arrays{where}")
        if not _is_array(a) and not _is_array(b) and a == b and type(a) is type(b):
            merged.append(Static(a))
            continue
        a, b = _as_branch_value(a, b), _as_branch_value(b, a)
        if a.shape != b.shape or a.dtype != b.dtype:
            raise ControlFlowError(f"{what}: {_label(names, k, 'result')} is "
                                   f"{a.dtype}{list(a.shape)} in one branch but "
                                   f"{b.dtype}{list(b.shape)} in the other; with an array "
                                   f"condition both must agree{where}")
        outs_t.append(ctx_t.node_of(a))
        outs_e.append(ctx_e.node_of(b))
        merged.append(None)
    operands, (ins_t, ins_e) = union_captures([ctx_t, ctx_e])
    then_graph = Subgraph(ins_t, [], outs_t, "then")
    else_graph = Subgraph(ins_e, [], outs_e, "else")
    _refuse_random([then_graph, else_graph], len(outs_t), "if", where)
    _refuse_random_gradients([then_graph, else_graph], [pred] + operands, what, where)
    from ..ops.registry import REGISTRY
    prim = REGISTRY["cond"]
    results = [prim(pred, *operands, then_graph=then_graph, else_graph=else_graph, index=j)
               for j in range(len(outs_t))]
    _untrack(results, operands, lambda j: _reaching(then_graph, j) | _reaching(else_graph, j))
    it = iter(results)
    leaves = [m if m is not None else next(it) for m in merged]
    if names is not None:
        leaves = _updated_in_place(args, leaves, [leaves_t, leaves_e], [fresh_t, fresh_e],
                                   [given_t, given_e])
        if len(leaves_t) == len(args) == len(leaves_e):
            alias_paths.mark(args, leaves, [(t is ft, e is fe) for t, e, ft, fe in
                                            zip(leaves_t, leaves_e, fresh_t, fresh_e)],
                             where, what, lambda k: _label(names, k, "result"))
    return unflatten(struct_t, leaves)


def _updated_in_place(originals, results, returned, given, before):
    """Eagerly, `x += 1` inside a branch or loop body changes the array object x (and the
    arrays sharing its memory), not only the name. A value every subgraph returned as the
    very object it was given, and some subgraph updated in place, is written into the
    original object (through its views: aliasing.py), which the name then keeps."""
    if any(len(r) != len(originals) for r in returned):
        return results
    out = list(results)
    for k, orig in enumerate(originals):
        if not isinstance(orig, ndarray) or not isinstance(out[k], ndarray):
            continue
        same = all(r[k] is g[k] for r, g in zip(returned, given))
        if same and any(g[k]._node is not b[k] for g, b in zip(given, before)):
            orig._rebind(out[k])
            out[k] = orig
    return out


def _fresh(args):
    """Each branch's own array objects. An eager array becomes a constant node first: an
    in-place op in a branch then rebinds it (seen by _updated_in_place) instead of writing
    into memory the other branch and the caller share."""
    from .._core import trace
    ctx = trace.current()
    return tuple(a._alias() if isinstance(a, ndarray) and (a._node is not None or ctx is None)
                 else ndarray._from_node(ctx.constant(a._data)) if isinstance(a, ndarray)
                 else a for a in args)


def _node(a):
    return a._node if isinstance(a, ndarray) else None


def _has_random(graph):
    from ..ops.registry import REGISTRY
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
    from .._core import autograd
    if not autograd.is_recording() or not any(a._tape is not None for a in operands):
        return
    if any(_has_random(g) for g in graphs):
        raise ControlFlowError(f"{what}: a random op (dropout, np.random) inside a branch or "
                               f"loop with an array condition cannot be differentiated "
                               f"consistently in a compiled graph{where}")


def _short(v):
    v = v.value if isinstance(v, Static) else v
    text = repr(v)
    return text if len(text) < 40 else text[:37] + "..."


def _as_branch_value(v, other):
    """A number meeting an array (or a different number) becomes an array of one dtype."""
    if _is_array(v):
        return v
    if _is_array(other):
        return as_array(_np.array(v, dtype=other.dtype))
    dt = _np.result_type(_number_dtype(v), _number_dtype(other))
    return as_array(_np.array(v, dtype=dt))


# ---- while_loop ----------------------------------------------------------------------------
def emit_while(cond_fn, body_fn, values, names=None, max_iterations=None, what="while"):
    """Trace `while cond_fn(*values): values = body_fn(*values)` into while_loop nodes."""
    where = _where()
    leaves, structure = flatten(tuple(values))
    carried_pos = [k for k, v in enumerate(leaves) if not isinstance(v, Static)]
    init = {k: _initial_array(leaves[k]) for k in carried_pos}
    for attempt in range(2):
        traced = _trace_loop(cond_fn, body_fn, leaves, structure, carried_pos, init, where,
                             names, what)
        retry = False
        if attempt == 0 and traced["temps"]:
            # a name first assigned inside the body is read after the loop in Python: carry
            # it, starting from zeros (eagerly it would not exist if the loop ran no time)
            for k, value in traced["temps"].items():
                init[k] = as_array(_np.zeros(value.shape, dtype=value.dtype))
                leaves[k] = init[k]
            carried_pos = sorted(set(carried_pos) | set(traced["temps"]))
            retry = True
        for k, out in traced["body_outs"].items():
            start = init[k]
            if out.shape == start.shape and out.dtype == start.dtype:
                continue
            if attempt == 0 and not _is_array(leaves[k]):
                # a Python number carried by the loop: start it with the body's dtype/shape
                init[k] = as_array(_np.full(out.shape, leaves[k], dtype=out.dtype))
                retry = True
                continue
            raise ControlFlowError(f"{what}: {_label(names, k, 'loop value')} enters the loop as "
                            f"{start.dtype}{list(start.shape)} but the body makes it "
                            f"{out.dtype}{list(out.shape)}; a value carried by a loop with an "
                            f"array condition must keep its shape and dtype{where}")
        if not retry:
            break
    ctx_c, ctx_b = traced["ctx_c"], traced["ctx_b"]
    invariants, (inv_c, inv_b) = union_captures([ctx_c, ctx_b])
    cond_graph = Subgraph(traced["in_c"] + inv_c, [], [traced["pred"]], "while_cond")
    body_outs = [ctx_b.node_of(traced["body_outs"][k]) for k in carried_pos]
    body_graph = Subgraph(traced["in_b"] + inv_b, [], body_outs, "while_body")
    operands = [init[k] for k in carried_pos] + invariants
    _refuse_random([cond_graph, body_graph], 2, "while loop", where)
    _refuse_random_gradients([cond_graph, body_graph], operands, what, where)
    from ..ops.registry import REGISTRY
    prim = REGISTRY["while_loop"]
    results = [prim(*operands, cond_graph=cond_graph, body_graph=body_graph,
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
    out_leaves = list(leaves)
    for k, r in zip(carried_pos, results):
        out_leaves[k] = r
    if len(traced["given"]) == len(leaves):
        out_leaves = _updated_in_place(leaves, out_leaves, [traced["returned"]],
                                       [traced["given"]], [traced["before"]])
        # zero iterations leave every name on its original array
        alias_paths.mark(leaves, out_leaves, [(True, r is g) for r, g in
                                              zip(traced["returned"], traced["given"])],
                         where, what, lambda k: _label(names, k, "value"))
    return unflatten(structure, out_leaves)


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
        from .._core import trace
        trace.push(ctx)
        try:
            return value.astype(start.dtype)
        finally:
            trace.pop()
    return value


def _initial_array(v):
    if _is_array(v):
        return v
    return as_array(_np.array(v, dtype=_number_dtype(v)))


def _trace_loop(cond_fn, body_fn, leaves, structure, carried_pos, init, where, names, what):
    def symbols():
        nodes, args = [], list(leaves)
        for k in carried_pos:
            a = init[k]
            label = names[k] if names and k < len(names) else f"carried{k}"
            node = Node("input", (), {}, a.shape, a.dtype, name=label)
            nodes.append(node)
            args[k] = ndarray._from_node(node)
        return nodes, unflatten(structure, args)

    in_c, args_c = symbols()
    ctx_c, pred = trace_in_subcontext(cond_fn, args_c, "while_cond", in_c)
    if not _is_array(pred):
        pred = as_array(pred)
    if pred.size != 1:
        raise ControlFlowError(f"{what}: the loop condition must have one element, got shape "
                        f"{pred.shape}{where}")
    pred_node = ctx_c.node_of(pred)
    in_b, args_b = symbols()
    given, _ = flatten(args_b)
    before = [_node(a) for a in given]
    ctx_b, new = trace_in_subcontext(body_fn, args_b, "while_body", in_b)
    new_leaves, new_structure = flatten(tuple(new) if isinstance(new, list) else new)
    if new_structure != structure:
        raise ControlFlowError(f"{what}: the loop body returns {new_structure}, but the loop "
                        f"carries {structure}{where}")
    body_outs, temps = {}, {}
    for k, (old, nv) in enumerate(zip(leaves, new_leaves)):
        if isinstance(old, Static) and old.value is UNDEF:
            if _is_array(nv):
                temps[k] = nv   # first assigned in the body: carried, so it exists after
            continue
        if k in init:
            if isinstance(nv, Static):
                raise ControlFlowError(f"{what}: {_label(names, k, 'loop value')} becomes "
                                f"{_short(nv)} inside the loop body{where}")
            body_outs[k] = nv if _is_array(nv) else _as_branch_value(nv, init[k])
            body_outs[k] = _keep_float_width(ctx_b, body_outs[k], init[k])
        elif not (isinstance(nv, Static) and old.same(nv)):
            raise ControlFlowError(f"{what}: {_label(names, k, 'loop value')} is not an array and "
                            f"changes inside a loop with an array condition "
                            f"({_short(old)} -> {_short(nv)}){where}")
    return dict(ctx_c=ctx_c, ctx_b=ctx_b, in_c=in_c, in_b=in_b, pred=pred_node,
                body_outs=body_outs, temps=temps, given=given, before=before,
                returned=new_leaves)
