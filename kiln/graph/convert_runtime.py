"""What converted code calls (as `_kiln_rt.<name>`): each construct decides at run time.

A test that is a Python value (or an eager array) runs the construct as plain Python, so
loops over Python numbers still unroll at trace time; only a symbolic array test becomes a
`cond` / `while_loop` node. Nothing here runs on the hot path: converted code only runs
while hybridize traces.
"""
import types

from .._core.base import SymbolicValueError, GraphBreak
from .._core.dispatch import apply, to_operands
from .._core.ndarray import ndarray, as_array
from .._core import trace
from ..ops.registry import REGISTRY


class _Undefined:
    """A variable that has no value yet where a converted construct starts."""
    __slots__ = ()

    def __repr__(self):
        return "<undefined>"


UNDEF = _Undefined()


def symbolic(value):
    return isinstance(value, ndarray) and value._node is not None


def get(scope, names):
    """The current values of `names` (UNDEF for a variable not assigned yet)."""
    return tuple(scope.get(n, UNDEF) for n in names)


def if_(test, then_fn, else_fn, values, names, returns=False):
    if not symbolic(test):
        return then_fn(*values) if test else else_fn(*values)
    from .control_trace import emit_cond
    return emit_cond(test, then_fn, else_fn, values, None if returns else names,
                     what="if (return)" if returns else "if")


def ifexp(test, then_fn, else_fn):
    if not symbolic(test):
        return then_fn() if test else else_fn()
    from .control_trace import emit_cond
    return emit_cond(test, then_fn, else_fn, (), None, what="conditional expression")


def while_(cond_fn, body_fn, values, names):
    values = tuple(values)
    while True:
        test = cond_fn(*values)
        if symbolic(test):
            from .control_trace import emit_while
            return emit_while(cond_fn, body_fn, values, names)
        if not test:
            return values
        values = tuple(body_fn(*values))


def for_range(bounds, body_fn, values, names):
    """`for names[0] in range(*bounds)`: the body gets (i, *values[1:]) and returns them."""
    values = tuple(values)
    if not any(symbolic(b) for b in bounds):
        for i in range(*[int(b) for b in bounds]):
            values = tuple(body_fn(i, *values[1:]))
        return values
    from .control_trace import emit_while
    start, stop, step = (0, bounds[0], 1) if len(bounds) == 1 else (
        (bounds[0], bounds[1], 1) if len(bounds) == 2 else bounds)
    if symbolic(step):
        raise GraphBreak("for loop: the step of range() must be a Python number when a "
                         "bound is an array", "for ... in range(...)", "unsupported")
    step = int(step)
    stop = as_array(stop).astype("int64")
    ascending = step > 0

    def cond(i, *rest):
        return i < stop if ascending else i > stop

    def body(i, *rest):
        return (i + step,) + tuple(body_fn(i, *rest))[1:]

    counter = as_array(start).astype("int64")
    out = emit_while(cond, body, (counter,) + values[1:], ("<counter>",) + tuple(names[1:]),
                     what="for")
    last = out[0] - step
    previous = values[0]
    if previous is not UNDEF:
        # a loop that ran no time leaves the loop variable as it was, as in Python
        last, previous = to_operands([last, previous])
        last = REGISTRY["where"](out[0] != counter, last, previous)
    return (last,) + tuple(out[1:])


# ---- boolean operators in tests (short-circuit kept for Python values) ---------------------
def not_(value):
    if symbolic(value):
        return REGISTRY["logical_not"](value)
    return not value


def and_(*thunks):
    value = thunks[0]()
    for thunk in thunks[1:]:
        if symbolic(value):
            value = apply(REGISTRY["logical_and"], (value, thunk()), {})
        elif not value:
            return value
        else:
            value = thunk()
    return value


def or_(*thunks):
    value = thunks[0]()
    for thunk in thunks[1:]:
        if symbolic(value):
            value = apply(REGISTRY["logical_or"], (value, thunk()), {})
        elif value:
            return value
        else:
            value = thunk()
    return value


# ---- try statements ------------------------------------------------------------------------
class guard_try:
    """Around a `try` with handlers: compiled code cannot raise, so a `try` whose body ran
    array code while tracing (or whose handler caught something) cannot be compiled."""

    def __init__(self, line):
        self.line = line

    def __enter__(self):
        ctx = trace.current()
        self.start = len(ctx.nodes) if ctx is not None else None
        return self

    def __exit__(self, kind, exc, tb):
        if self.start is None or kind is not None:
            return False
        if len(trace.current().nodes) > self.start:
            raise GraphBreak(f"a `try` statement around array code (line {self.line}): a "
                             "compiled graph cannot raise or catch exceptions",
                             "try/except", "unsupported")
        return False


def caught(line, exc):
    """First statement of every converted `except` handler."""
    if trace.current() is not None:
        if isinstance(exc, SymbolicValueError):
            raise exc
        raise GraphBreak(f"a `try` statement caught {type(exc).__name__} while tracing "
                         f"(line {line}): a compiled graph cannot raise or catch exceptions",
                         "try/except", "unsupported") from exc


# ---- reads that a compiled graph bakes in --------------------------------------------------
def read_attr(obj, name):
    """`self.name` in converted code: a number or array read while tracing becomes a
    constant of the graph, so the guard recorder remembers it (kiln/graph/guards.py)."""
    value = getattr(obj, name)
    from .guards import note_attribute
    note_attribute(obj, name, value)
    if type(value) is types.MethodType and value.__self__ is obj:
        # a helper method of the traced object: converted too, so its own `self.` reads
        # are watched and its array-dependent control flow becomes graph ops
        from .convert import convert
        return convert(value)
    return value
