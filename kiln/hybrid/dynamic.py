"""When hybridize's dimensions become symbolic, and which program serves which sizes.

Three policies (`hybridize(...)` flags, MXNet's and torch.compile's meanings):
- `static_shape=True`: one program per input shape, as before;
- default ("auto"): the first call specializes; when a later call differs from an earlier
  one only in some sizes (same structure and ranks; in any mode, dtype, with or without
  gradients: a size that varied in training varies in prediction too), the next program
  is built with every size symbolic, as dynamic=True, and the trace pins by guards the
  sizes it needs concrete (a weight's, a reshape's): sizes that vary later (the length
  after the batch) are served by that program too. When that build fails, one with only
  the sizes seen to change is tried; when that fails too, sizes of that signature
  specialize (on a backend that cannot run symbolic sizes, programs stay specialized);
- `dynamic=True`: every dimension is symbolic from the first call; `dynamic_axes=
  {'x': {0: 'batch'}}` (argument name or position -> {axis: symbol name}) names the
  symbolic ones up front; a name used twice says those sizes are equal.

A symbolic program is served to a call only after its guards (symdim.py) hold for the
call's sizes; the check is made once per concrete signature, whose entry is then cached.
"""
import inspect

from .._core.base import KilnError
from .._core.symdim import ShapeEnv, SymInt

POLICIES = ("auto", "dynamic", "static")


def policy_from_flags(static_shape=False, dynamic=None, dynamic_axes=None):
    if static_shape and (dynamic or dynamic_axes):
        raise KilnError("hybridize: static_shape=True contradicts dynamic/dynamic_axes")
    if static_shape or dynamic is False:
        return ShapePolicy("static")
    return ShapePolicy("dynamic" if dynamic else "auto", dynamic_axes)


class ShapePolicy:
    """One hybridized function's choices of symbolic dimensions and its symbolic programs."""

    def __init__(self, mode="auto", dynamic_axes=None):
        if mode not in POLICIES:
            raise KilnError(f"hybridize: unknown shape policy {mode!r}; expected one of "
                            f"{POLICIES}")
        self.mode = mode
        self.dynamic_axes = dict(dynamic_axes or {})
        self.first_shapes = {}     # family -> input shapes of the first call
        self.varying = {}          # family -> {(input, axis)} seen to change
        self.programs = {}         # relaxed key -> [symbolic entries], oldest first
        self.refused = {}          # relaxed key -> why a symbolic build fell back
        self.builds = []           # [Build]: every trace, with why it was needed

    @staticmethod
    def relaxed_key(key):
        """A signature key with the sizes left out (ranks kept)."""
        structure, avals, training, grad_mask = key
        return structure, tuple((len(s), d) for s, d in avals), training, grad_mask

    @staticmethod
    def family(relaxed):
        """The calls whose sizes are compared: structure and ranks (not dtypes, mode or
        gradients: token ids given as floats in training and as ints later vary alike)."""
        return None if relaxed is None else (relaxed[0], tuple(r for r, _ in relaxed[1]))

    def observe(self, key):
        """Note a call's signature; returns its relaxed key."""
        relaxed = self.relaxed_key(key)
        shapes = [s for s, _ in key[1]]
        family = self.family(relaxed)
        first = self.first_shapes.setdefault(family, shapes)
        if first is not shapes:
            changed = self.varying.setdefault(family, set())
            for k, (a, b) in enumerate(zip(first, shapes)):
                changed.update((k, axis) for axis, (x, y) in enumerate(zip(a, b)) if x != y)
        return relaxed

    def serving(self, relaxed, shapes):
        """A symbolic entry whose guards accept these input shapes, or None."""
        for entry in reversed(self.programs.get(relaxed, ())):
            bindings = entry.symbolic.bind(shapes)
            if bindings is not None and entry.symbolic.env.accepts(bindings):
                return entry
        return None

    def plan(self, fn, relaxed, shapes, backend_symbolic):
        """SymbolicInputs for a build of these shapes, or None to specialize."""
        plans = self.plans(fn, relaxed, shapes, backend_symbolic)
        return plans[0] if plans else None

    def plans(self, fn, relaxed, shapes, backend_symbolic):
        """The SymbolicInputs to try in turn for a build of these shapes (none: specialize).
        In auto mode, once sizes varied: every size symbolic, then only those that varied."""
        if self.mode == "static" or relaxed in self.refused:
            return []
        names = dict(self._named_axes(fn, len(shapes)))
        every = dict(names)
        for k, shape in enumerate(shapes):
            for axis in range(len(shape)):
                every.setdefault((k, axis), None)
        if self.mode == "dynamic":
            return [SymbolicInputs(shapes, every)]
        varying = self.varying.get(self.family(relaxed), ()) if backend_symbolic else ()
        if not varying:
            return [SymbolicInputs(shapes, names)] if names else []
        for position in varying:
            names.setdefault(position, None)
        plans = [SymbolicInputs(shapes, every, varying), SymbolicInputs(shapes, names, varying)]
        return plans[:1] if len(every) == len(names) else plans

    def _named_axes(self, fn, n_inputs):
        if not self.dynamic_axes:
            return {}
        params = _argument_names(fn)
        found = {}
        for arg, axes in self.dynamic_axes.items():
            k = arg if isinstance(arg, int) else params.get(arg)
            if k is None or not 0 <= k < n_inputs:
                raise KilnError(f"hybridize: dynamic_axes names argument {arg!r}, which is "
                                f"not one of the array arguments {sorted(params)}")
            for axis, name in axes.items():
                found[(k, int(axis))] = str(name)
        return found

    def add(self, relaxed, entry, env):
        """A symbolic program built under `env` (its guards). A trace that needed every
        symbol's value gains nothing from symbols: later sizes of `relaxed` specialize
        directly. Sizes 0 and 1 are classes of their own (broadcasting, empty arrays): a
        program pinned to them says nothing about the trace needing other sizes' values."""
        self.programs.setdefault(relaxed, []).append(entry)
        pinned = [g for g in env.guards if g.kind() == "specialized" and g.rhs[1] not in (0, 1)]
        if pinned and {g.lhs[1] for g in pinned} >= entry.symbolic.wanted():
            self.refuse(relaxed, f"the trace needs the value of every symbolic size "
                                 f"({pinned[0]!r})")

    def refuse(self, relaxed, reason):
        self.refused[relaxed] = reason

    def note_build(self, key, plan, stale):
        """Remember a trace of signature `key` (made with `plan`, or specialized) and why no
        program served it; `stale`: an entry of this very signature whose captured
        constants changed."""
        relaxed = self.relaxed_key(key)
        shapes = [s for s, _ in key[1]]
        if stale:
            why = "captured constants changed"
        elif not any(self.relaxed_key(b.key) == relaxed for b in self.builds):
            why = "first call of this kind (structure, dtypes, ranks, mode, gradients)"
        elif self.mode == "static":
            why = "static_shape: one program per shape"
        elif relaxed in self.refused:
            why = f"sizes cannot be symbolic here: {self.refused[relaxed]}"
        elif self.programs.get(relaxed):
            why = "the symbolic program's guards reject these sizes: " + "; ".join(
                _failed_guards(self.programs[relaxed], shapes))
        elif plan is not None:
            why = "sizes changed: they become symbolic"
        else:
            why = "new sizes, not yet seen to vary"
        self.builds.append(Build(key, plan, why))


class Build:
    """One trace of a hybridized function: the signature, its symbolic sizes, and why."""

    def __init__(self, key, plan, why):
        self.key = key
        structure, avals, self.training, grad_mask = key
        self.shapes = [tuple(s) for s, _ in avals]
        self.gradients = grad_mask is not None
        self.symbolic = dict(plan.positions) if plan is not None else {}
        self.why = why

    def __str__(self):
        mode = "train" if self.training else "predict"
        grad = " +grad" if self.gradients else ""
        sym = ", ".join(f"in{k}[{axis}]" for k, axis in sorted(self.symbolic))
        return (f"{self.shapes} {mode}{grad}" + (f" symbolic {sym}" if sym else "")
                + f": {self.why}")


def _failed_guards(entries, shapes):
    """Why each symbolic entry refuses `shapes`: a fixed size, or the first failing guard."""
    reasons = []
    for entry in entries:
        bindings = entry.symbolic.bind(shapes)
        if bindings is None:
            reasons.append("a size it keeps fixed differs")
            continue
        failed = [g for g in entry.symbolic.env.guards if not g.holds(bindings)]
        reasons.append(repr(failed[0]) if failed else "a negative size")
    return reasons


def _argument_names(fn):
    target = getattr(fn, "forward", fn)
    try:
        params = list(inspect.signature(target).parameters.values())
    except (TypeError, ValueError):
        return {}
    params = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return {p.name: k for k, p in enumerate(params)}


class SymbolicInputs:
    """The symbolic shapes one build gives its array arguments, and its ShapeEnv."""

    def __init__(self, shapes, names, varying=None):
        self.env = ShapeEnv()
        self.positions = {}          # (input, axis) -> symbol name
        # the positions seen to vary (auto mode): the program is worth keeping only if
        # their symbols stay free; None: every symbol is wanted free
        self.varying = None if varying is None else frozenset(varying)
        auto = 0
        for (k, axis), name in sorted(names.items(), key=lambda kv: kv[0]):
            if axis >= len(shapes[k]):
                raise KilnError(f"hybridize: dynamic_axes names axis {axis} of argument "
                                f"{k}, which has shape {shapes[k]}")
            if name is None:
                name, auto = f"s{auto}", auto + 1
                while name in names.values():
                    name, auto = f"s{auto}", auto + 1
            self.positions[(k, axis)] = name
        self.shapes = []
        for k, shape in enumerate(shapes):
            dims = []
            for axis, size in enumerate(shape):
                name = self.positions.get((k, axis))
                if name is None:
                    dims.append(size)
                    continue
                if self.env.symbols.setdefault(name, size) != size:
                    raise KilnError(f"hybridize: the dimensions named {name!r} differ in "
                                    f"this call ({self.env.symbols[name]} and {size})")
                dims.append(SymInt.symbol(name, size))
            self.shapes.append(tuple(dims))

    def wanted(self):
        """The symbols a program is built to keep free."""
        if self.varying is None:
            return set(self.env.symbols)
        return {self.positions[p] for p in self.varying if p in self.positions}

    def bind(self, shapes):
        """{symbol: size} for a call's input shapes, or None when they do not fit (a
        fixed size differs, or one symbol would take two values)."""
        bindings = {}
        if len(shapes) != len(self.shapes):
            return None
        for traced, shape in zip(self.shapes, shapes):
            if len(traced) != len(shape):
                return None
            for dim, size in zip(traced, shape):
                if isinstance(dim, SymInt):
                    if bindings.setdefault(dim.expr[1], size) != size:
                        return None
                elif dim != size:
                    return None
        return bindings

    def describe(self):
        axes = ", ".join(f"input {k} axis {axis} = {name}"
                         for (k, axis), name in sorted(self.positions.items()))
        lines = [f"symbolic: {axes}"]
        for guard in self.env.guards:
            lines.append(f"  guard ({guard.kind()}): {guard!r}")
        pinned = self.env.specialized()
        if pinned:
            lines.append("  specialized in: " + ", ".join(sorted(pinned)))
        return "\n".join(lines)
