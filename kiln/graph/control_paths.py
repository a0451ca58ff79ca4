"""Which variables an `if` or `while` on an array leaves on the arrays they had, on which
paths (kiln/_core/alias_paths.py has the links this makes and what a write does with
them).

Each branch and loop body is traced with its own array objects for the variables it
assigns. Read inside that trace, `identities_of` says for each variable whether the array
returned is the one given (True), a new one (False), the given one only where a symbol
holds (an inner if/while linked them), or possibly another variable's (CROSS). After an
`if`, `BranchPaths` adds the `cond` outputs that carry these symbols and the branches'
in-place writes, then writes the caller's arrays and links (or marks) the merged results.
A `while` whose body keeps a variable's array on some iterations only, or writes into it
before rebinding it, is traced again carrying a flag per such variable (is it still the
array it entered as?) and the value of that array (`tracked_loop`); `settle_loop` then
does for the loop what BranchPaths.settle does for an `if`.
"""
import numpy as _np

from .._core import alias_paths, layouts, trace
from .._core.ndarray import as_array
from ..ops.registry import REGISTRY
from .control_values import flatten, is_array
from .subgraph import trace_in_subcontext

CROSS = alias_paths.CROSS


def trace_tracking(fn, given, name, track, inputs=None):
    """trace_in_subcontext(fn, given, name, inputs), and, when `track`, how each returned
    value relates to the array given for its variable (alias_paths.identity, read inside
    the subtrace, whose symbols it may use): (context, result, identities or None)."""
    found = []

    def traced(*args):
        result = fn(*args)
        if track:
            returned = tuple(result) if isinstance(result, list) else result
            found.append(identities_of(flatten(returned)[0], flatten(tuple(given))[0]))
        return result
    ctx, result = trace_in_subcontext(traced, given, name, inputs)
    return ctx, result, found[0] if found else None


def identities_of(returned, given):
    """alias_paths.identity of each returned value and the given value of its variable
    (None when the two do not pair up), in the current (sub)trace."""
    if len(returned) != len(given):
        return None
    ctx = trace.current()
    arrays = [g for g in given if is_array(g)]
    return [alias_paths.identity(r, g, arrays, ctx) if is_array(r) and is_array(g)
            else False for r, g in zip(returned, given)]


def as_bool(value):
    """A 0-d bool array: a Python bool as a constant, an array's truth (nonzero, as cond)."""
    if not is_array(value):
        return as_array(_np.array(bool(value)))
    if value.shape != ():
        value = REGISTRY["reshape"](value, shape=())
    return value if value.dtype == _np.bool_ else REGISTRY["cast"](value, dtype=_np.bool_)


class Refusal:
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


class BranchPaths:
    """After an `if`: which variables are, on which paths, the arrays they were before
    (alias_paths), and the extra outputs of the `cond` that say so."""

    def __init__(self, originals, identities, written):
        self.originals, self.identities, self.written = originals, identities, written
        self.extra = {}        # (kind, k) -> position among the extra outputs

    def add_outputs(self, ctx_t, ctx_e, fresh_t, fresh_e, outs_t, outs_e):
        for k, orig in enumerate(self.originals):
            if not is_array(orig) or self.identities[k][0] is self.identities[k][1] is True:
                continue
            if self.written[k]:
                # a branch wrote into its array in place: eagerly, the caller's array
                self.extra[("value", k)] = len(self.extra)
                outs_t.append(ctx_t.node_of(fresh_t[k]))
                outs_e.append(ctx_e.node_of(fresh_e[k]))
            s_t, s_e = self.identities[k]
            if s_t is not CROSS and s_e is not CROSS and (is_array(s_t) or is_array(s_e)):
                self.extra[("same", k)] = len(self.extra)
                outs_t.append(ctx_t.node_of(as_bool(s_t)))
                outs_e.append(ctx_e.node_of(as_bool(s_e)))

    def settle(self, leaves, extra, pred, refusal):
        """Write the branches' in-place updates into the original arrays, and link (or
        mark) each merged result that is an original array on some paths only."""
        out = list(leaves)
        for k, orig in enumerate(self.originals):
            if not is_array(orig) or not is_array(out[k]):
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
            if s_t is CROSS or s_e is CROSS:
                refusal.mark(k, orig, out[k])
            elif ("same", k) in self.extra:
                alias_paths.link(orig, out[k], extra[self.extra[("same", k)]])
            elif s_t is True:
                alias_paths.link(orig, out[k], as_bool(pred))
            elif s_e is True:
                alias_paths.link(orig, out[k], REGISTRY["logical_not"](as_bool(pred)))
        return out


def tracked_loop(cond_fn, body_fn, values, names, written, leaves, track):
    """The loop's functions and values again, carrying for each variable in `track` a flag
    (is it still the array it entered as?) and, for one the body writes into, that
    array's value: eagerly, a write on an iteration that starts with the original array
    goes into it. Returns (cond_fn, body_fn, values, names) for control_trace's _Loop."""
    n_top = len(values)
    kept_k = [k for k in track if written[k]]
    flags0 = tuple(as_array(_np.array(True)) for _ in track)
    kept0 = tuple(leaves[k] for k in kept_k)

    def cond_ext(*vals):
        return cond_fn(*vals[:n_top])

    def body_ext(*vals):
        user, flags = vals[:n_top], vals[n_top:n_top + len(track)]
        kept = vals[n_top + len(track):]
        given = flatten(tuple(user))[0]
        new = body_fn(*user)
        new = tuple(new) if isinstance(new, list) else new
        returned = flatten(new)[0]
        if len(returned) != len(given):
            return new      # _trace_loop reports the structure
        same = identities_of(returned, given)
        new_flags = tuple(REGISTRY["logical_and"](f, as_bool(same[k]))
                          for f, k in zip(flags, track))
        new_kept = tuple(REGISTRY["where"](flags[track.index(k)], given[k], v)
                         for k, v in zip(kept_k, kept))
        return tuple(new) + new_flags + new_kept
    ext = values + flags0 + kept0
    names_ext = None if names is None else tuple(names) + ("<same>",) * (len(ext) - n_top)
    return cond_ext, body_ext, ext, names_ext


def settle_loop(loop, originals, identities, written, flags, kept, refusal):
    """Write a loop's in-place updates into the original arrays, and link (or mark) each
    result that is its original array on some runs only. `loop` is control_trace's _Loop:
    its results, what the body returned, and zero_iterations()."""
    out = list(loop.out_leaves[:len(originals)])
    zero = []

    def zero_iterations():
        if not zero:
            zero.append(loop.zero_iterations())
        return zero[0]
    for k, orig in enumerate(originals):
        if not is_array(orig) or not is_array(out[k]):
            continue
        if k in loop.returned:
            # eagerly the result is the array it entered as (no iteration) or what the
            # body made, with that array's memory layout
            layouts.merge(out[k], [orig, loop.returned[k]], lambda: [
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
        if s is CROSS or (k not in flags and loop.random_condition):
            refusal.mark(k, orig, out[k])
            continue
        # a new array on every iteration: the original when the loop ran no time
        alias_paths.link(orig, out[k], flags[k] if k in flags else zero_iterations())
    return out
