"""Emitting `cond` / `while_loop` nodes while tracing: trace the branches or the loop body
as subgraphs and check that what they produce can flow through one compiled program.

Values are flattened: kiln arrays become graph values; Python numbers also become graph
values when they differ between branches or are carried by a loop (a counter `i = 0`);
anything else (None, a module, a string) must be the same object on every path.
"""
import numpy as _np

from .._core.base import DEFAULT_FLOAT, user_frame
from .._core import alias_paths, layouts
from .._core.base import ControlFlowError
from .convert_runtime import UNDEF
from .._core.ndarray import ndarray, as_array
from .._core.ir import Node
from ..ops.subgraph import Subgraph
from .subgraph import trace_in_subcontext, union_captures

_NUMBER = (bool, int, float, _np.number)
_CROSS = alias_paths.CROSS


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
    track = names is not None
    ctx_t, res_t, ident_t = _trace_tracking(then_fn, fresh_t, "then", track)
    ctx_e, res_e, ident_e = _trace_tracking(else_fn, fresh_e, "else", track)
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
            raise ControlFlowError(f"{what}: {_label(names, k, 'result')} differs between the "
                            f"branches and is not an array ({_short(a)} vs {_short(b)}); an "
                            f"array condition can only choose between arrays{where}")
        if not _is_array(a) and not _is_array(b) and a == b and type(a) is type(b):
            merged.append(Static(a))
            continue
        a, b = _as_branch_value(a, b), _as_branch_value(b, a)
        values.append((a, b))
        if a.shape != b.shape or a.dtype != b.dtype:
            raise ControlFlowError(f"{what}: {_label(names, k, 'result')} is "
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
        paths = _BranchPaths(args, list(zip(ident_t, ident_e)), written)
        paths.add_outputs(ctx_t, ctx_e, fresh_t, fresh_e, outs_t, outs_e)
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
    it = iter(results[:n_user])
    leaves = [m if m is not None else next(it) for m in merged]
    for result, branch_values in zip(results[:n_user], values):
        # eagerly the result is one branch's array, with that array's memory layout
        layouts.merge(result, branch_values, lambda: [_as_bool(pred), REGISTRY[
            "logical_not"](_as_bool(pred))])
    if paths is not None:
        leaves = paths.settle(leaves, results[n_user:], pred,
                              _Refusal(where, what, lambda k: _label(names, k, "result")))
    return unflatten(struct_t, leaves)


def _trace_tracking(fn, given, name, track, inputs=None):
    """trace_in_subcontext(fn, given, name, inputs), and, when `track`, how each returned
    value relates to the array given for its variable (alias_paths.identity, read inside
    the subtrace, whose symbols it may use): (context, result, identities or None)."""
    found = []

    def traced(*args):
        result = fn(*args)
        if track:
            returned = tuple(result) if isinstance(result, list) else result
            found.append(_identities(flatten(returned)[0], flatten(tuple(given))[0]))
        return result
    ctx, result = trace_in_subcontext(traced, given, name, inputs)
    return ctx, result, found[0] if found else None


def _identities(returned, given):
    if len(returned) != len(given):
        return None
    from .._core import trace
    ctx = trace.current()
    arrays = [g for g in given if _is_array(g)]
    return [alias_paths.identity(r, g, arrays, ctx) if _is_array(r) and _is_array(g)
            else False for r, g in zip(returned, given)]


def _as_bool(value):
    """A 0-d bool array: a Python bool as a constant, an array's truth (nonzero, as cond)."""
    from ..ops.registry import REGISTRY
    if not _is_array(value):
        return as_array(_np.array(bool(value)))
    if value.shape != ():
        value = REGISTRY["reshape"](value, shape=())
    return value if value.dtype == _np.bool_ else REGISTRY["cast"](value, dtype=_np.bool_)


class _Refusal:
    """Marks (alias_paths.mark) a result that may be another variable's array."""

    def __init__(self, where, what, label):
        self.where, self.what, self.label = where, what, label

    def mark(self, k, orig, result):
        what, where = self.what, self.where
        alias_paths.mark([(orig, result)], (
            f"{what}: {self.label(k)} may be, depending on the path taken through the "
            f"{what}, another variable's array or a view of one, so an in-place write to it "
            f"reaches other names on some paths only, which one compiled program does not "
            f"follow (the {what}{where.splitlines()[0] if where else ''})"))


class _BranchPaths:
    """After an `if`: which variables are, on which paths, the arrays they were before
    (alias_paths), and the extra outputs of the `cond` that say so."""

    def __init__(self, originals, identities, written):
        self.originals, self.identities, self.written = originals, identities, written
        self.extra = {}        # (kind, k) -> position among the extra outputs

    def add_outputs(self, ctx_t, ctx_e, fresh_t, fresh_e, outs_t, outs_e):
        for k, orig in enumerate(self.originals):
            if not _is_array(orig) or self.identities[k][0] is self.identities[k][1] is True:
                continue
            if self.written[k]:
                # a branch wrote into its array in place: eagerly, the caller's array
                self.extra[("value", k)] = len(self.extra)
                outs_t.append(ctx_t.node_of(fresh_t[k]))
                outs_e.append(ctx_e.node_of(fresh_e[k]))
            s_t, s_e = self.identities[k]
            if s_t is not _CROSS and s_e is not _CROSS and (_is_array(s_t) or _is_array(s_e)):
                self.extra[("same", k)] = len(self.extra)
                outs_t.append(ctx_t.node_of(_as_bool(s_t)))
                outs_e.append(ctx_e.node_of(_as_bool(s_e)))

    def settle(self, leaves, extra, pred, refusal):
        """Write the branches' in-place updates into the original arrays, and link (or
        mark) each merged result that is an original array on some paths only."""
        from ..ops.registry import REGISTRY
        out = list(leaves)
        for k, orig in enumerate(self.originals):
            if not _is_array(orig) or not _is_array(out[k]):
                continue
            s_t, s_e = self.identities[k]
            if s_t is s_e is True:
                # every path keeps the array (updated in place or not): so does the name
                if self.written[k]:
                    orig._rebind(out[k])
                out[k] = orig
                continue
            if ("value", k) in self.extra:
                orig._rebind(extra[self.extra[("value", k)]])
            if s_t is _CROSS or s_e is _CROSS:
                refusal.mark(k, orig, out[k])
            elif ("same", k) in self.extra:
                alias_paths.link(orig, out[k], extra[self.extra[("same", k)]])
            elif s_t is True:
                alias_paths.link(orig, out[k], _as_bool(pred))
            elif s_e is True:
                alias_paths.link(orig, out[k], REGISTRY["logical_not"](_as_bool(pred)))
        return out


def _fresh(args):
    """Each branch's own array objects, with the layouts of the arrays they stand for. An
    eager array becomes a constant node first: an in-place op in a branch then rebinds it
    (seen by _BranchPaths) instead of writing into memory the other branch and the caller
    share."""
    from .._core import trace
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
    values = tuple(values)
    leaves, structure = flatten(values)
    loop = _Loop(cond_fn, body_fn, leaves, structure, names, max_iterations, what, where)
    ident, written = loop.identities, loop.written
    if ident is None:
        return unflatten(structure, loop.out_leaves)
    for k, s in enumerate(ident):
        if s is _CROSS and written[k]:
            raise alias_paths.PathAliasingError(
                f"{what}: {_label(names, k, 'value')} is written in place in the loop body "
                f"and then becomes another variable's array (or a view of one), so the "
                f"writes of later iterations reach other names, which one compiled program "
                f"does not follow{where}")
    # which original array a variable is on each run, when the body may keep it on some
    # iterations (an inner if) or writes into it before rebinding it: carried flags
    track = [k for k, s in enumerate(ident) if _is_array(leaves[k]) and s is not True
             and s is not _CROSS and (_is_array(s) or written[k])]
    flags, kept = {}, {}
    if track:
        loop = _tracked_loop(cond_fn, body_fn, values, names, max_iterations, what, where,
                             loop, track)
        n = len(leaves)
        flags = dict(zip(track, loop.out_leaves[n:]))
        kept = dict(zip([k for k in track if written[k]], loop.out_leaves[n + len(track):]))
        leaves = loop.leaves[:n]
    out = loop.settle(leaves, ident, written, flags, kept,
                      _Refusal(where, what, lambda k: _label(names, k, "value")))
    return unflatten(structure, out)


def _tracked_loop(cond_fn, body_fn, values, names, max_iterations, what, where, first, track):
    """The loop again, carrying for each variable in `track` a flag (is it still the
    array it entered as?) and, for one the body writes into, that array's value: eagerly,
    a write on an iteration that starts with the original array goes into it."""
    n_top = len(values)
    kept_k = [k for k in track if first.written[k]]
    flags0 = tuple(as_array(_np.array(True)) for _ in track)
    kept0 = tuple(first.leaves[k] for k in kept_k)

    def cond_ext(*vals):
        return cond_fn(*vals[:n_top])

    def body_ext(*vals):
        from ..ops.registry import REGISTRY
        user, flags = vals[:n_top], vals[n_top:n_top + len(track)]
        kept = vals[n_top + len(track):]
        given = flatten(tuple(user))[0]
        new = body_fn(*user)
        new = tuple(new) if isinstance(new, list) else new
        returned = flatten(new)[0]
        if len(returned) != len(given):
            return new      # _trace_loop reports the structure
        arrays = [g for g in given if _is_array(g)]
        from .._core import trace
        same = {k: alias_paths.identity(returned[k], given[k], arrays, trace.current())
                for k in track}
        new_flags = tuple(REGISTRY["logical_and"](f, _as_bool(same[k]))
                          for f, k in zip(flags, track))
        new_kept = tuple(REGISTRY["where"](flags[track.index(k)], given[k], v)
                         for k, v in zip(kept_k, kept))
        return tuple(new) + new_flags + new_kept
    ext = values + flags0 + kept0
    leaves, structure = flatten(ext)
    names_ext = None if names is None else tuple(names) + ("<same>",) * (len(ext) - n_top)
    return _Loop(cond_ext, body_ext, leaves, structure, names_ext, max_iterations, what, where)


class _Loop:
    """One while_loop traced and emitted: its results (`out_leaves`), and for each
    variable whether the body returns the array it was given (`identities`, see
    alias_paths.identity) and whether it wrote into that array (`written`)."""

    def __init__(self, cond_fn, body_fn, leaves, structure, names, max_iterations, what,
                 where):
        self.leaves, self.max_iterations = leaves, max_iterations
        carried_pos = [k for k, v in enumerate(leaves) if not isinstance(v, Static)]
        init = {k: _initial_array(leaves[k]) for k in carried_pos}
        unknown = set()     # carried arrays whose layout changes between iterations
        for attempt in range(3):
            traced = _trace_loop(cond_fn, body_fn, leaves, structure, carried_pos, init,
                                 where, names, what, unknown)
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
                if attempt == 0 and not _is_array(leaves[k]):
                    # a Python number carried by the loop: start it with the body's dtype
                    # and shape
                    init[k] = as_array(_np.full(out.shape, leaves[k], dtype=out.dtype))
                    retry = True
                    continue
                raise ControlFlowError(f"{what}: {_label(names, k, 'loop value')} enters the "
                                       f"loop as {start.dtype}{list(start.shape)} but the body "
                                       f"makes it {out.dtype}{list(out.shape)}; a value carried "
                                       f"by a loop with an array condition must keep its "
                                       f"shape and dtype{where}")
            if not retry and not unknown:
                # the body was traced with each array laid out as it enters the loop: if it
                # returns another layout, later iterations see that one (layouts.py)
                unknown = {k for k, out in traced["body_outs"].items()
                           if not layouts.keeps(init[k], out)}
                retry = bool(unknown)
            if not retry:
                break
        ctx_c, ctx_b = traced["ctx_c"], traced["ctx_b"]
        invariants, (inv_c, inv_b) = union_captures([ctx_c, ctx_b])
        self.cond_graph = Subgraph(traced["in_c"] + inv_c, [], [traced["pred"]], "while_cond")
        body_outs = [ctx_b.node_of(traced["body_outs"][k]) for k in carried_pos]
        body_graph = Subgraph(traced["in_b"] + inv_b, [], body_outs, "while_body")
        self.operands = operands = [init[k] for k in carried_pos] + invariants
        _refuse_random([self.cond_graph, body_graph], 2, "while loop", where)
        _refuse_random_gradients([self.cond_graph, body_graph], operands, what, where)
        from ..ops.registry import REGISTRY
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
        self.written = [_is_array(g) and g._node is not b
                        for g, b in zip(traced["given"], traced["before"])]

    def zero_iterations(self):
        """0-d bool: the loop ran no time (its condition on the values it started with is
        false), evaluated by a `cond` on the loop's own condition graph."""
        from ..ops.registry import REGISTRY
        if self.max_iterations == 0:
            return _as_bool(True)
        first = REGISTRY["cond"](_as_bool(True), *self.operands, then_graph=self.cond_graph,
                                 else_graph=self.cond_graph, index=0)
        return REGISTRY["logical_not"](_as_bool(first))

    def settle(self, originals, identities, written, flags, kept, refusal):
        """Write the loop's in-place updates into the original arrays, and link (or mark)
        each result that is its original array on some runs only."""
        from ..ops.registry import REGISTRY
        out = list(self.out_leaves[:len(originals)])
        zero = []

        def zero_iterations():
            if not zero:
                zero.append(self.zero_iterations())
            return zero[0]
        for k, orig in enumerate(originals):
            if not _is_array(orig) or not _is_array(out[k]):
                continue
            if k in self.returned:
                # eagerly the result is the array it entered as (no iteration) or what the
                # body made, with that array's memory layout
                layouts.merge(out[k], [orig, self.returned[k]], lambda: [
                    zero_iterations(), REGISTRY["logical_not"](zero_iterations())])
            s = identities[k]
            if s is True:
                # every iteration keeps the array (updated in place or not): so does the name
                if written[k]:
                    orig._rebind(out[k])
                out[k] = orig
                continue
            if k in kept:
                orig._rebind(kept[k])
            if s is _CROSS or (k not in flags and _has_random(self.cond_graph)):
                refusal.mark(k, orig, out[k])
                continue
            # a new array on every iteration: the original when the loop ran no time
            alias_paths.link(orig, out[k], flags[k] if k in flags else zero_iterations())
        return out


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
    if (value.dtype != start.dtype and value.dtype.kind == start.dtype.kind == "f"
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


def _trace_loop(cond_fn, body_fn, leaves, structure, carried_pos, init, where, names, what,
                unknown):
    def symbols():
        nodes, args = [], list(leaves)
        for k in carried_pos:
            a = init[k]
            label = names[k] if names and k < len(names) else f"carried{k}"
            node = Node("input", (), {}, a.shape, a.dtype, name=label)
            nodes.append(node)
            args[k] = ndarray._from_node(node)
            if k in unknown:
                layouts.set_unknown(args[k])
            else:
                layouts.inherit(args[k], a)
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
    ctx_b, new, identities = _trace_tracking(body_fn, args_b, "while_body", True, in_b)
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
                identities=identities)
