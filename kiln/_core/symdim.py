"""Symbolic dimensions: a graph's sizes that are named rather than fixed (a batch, a length).

A `SymInt` is an integer expression over named symbols (`batch`, `batch * 784`,
`(seq + 1) // 2`) that also carries its value in the call being traced (its hint). Shape
rules compute with it like an int: arithmetic builds new expressions, so a shape that only
flows through (+, -, *, //, %) stays symbolic. Where code needs a concrete answer (a
comparison, `int()`, `range()`, an f-string, a NumPy allocation), the answer is taken from
the hint and a `Guard` is recorded in the active `ShapeEnv`: the program is only valid for
calls where that answer holds, and every guard is checked before a call is served
(`ShapeEnv.accepts`). A guard remembers which line of kiln and of the user's code forced
it, so `explain` can say why a program specialized.

Every symbol is a size, so it is >= 0 (known without a guard); two dimensions that must be
equal share one symbol or carry an equality guard; a divisibility a rule relied on is a
guard on `d % k == 0`.
"""
import operator
import os
import sys
import threading

from .base import KilnError, user_frame
from .size_polynomials import exact_quotient, expression_of, polynomial, substitute

_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class SymbolicShapeError(KilnError):
    """A symbolic size was made concrete outside a build, where no guard can be kept."""


_ARITHMETIC = {"+": operator.add, "-": operator.sub, "*": operator.mul,
               "//": operator.floordiv, "%": operator.mod}


def _evaluate(expr, env):
    kind = expr[0]
    if kind in ("sym", "const"):
        return env[expr[1]] if kind == "sym" else expr[1]
    return _ARITHMETIC[kind](_evaluate(expr[1], env), _evaluate(expr[2], env))


def _text(expr):
    kind = expr[0]
    if kind in ("sym", "const"):
        return str(expr[1])
    return f"({_text(expr[1])} {kind} {_text(expr[2])})"


def _symbols_of(expr, out):
    if expr[0] == "sym":
        out.add(expr[1])
    elif expr[0] not in ("const",):
        _symbols_of(expr[1], out)
        _symbols_of(expr[2], out)
    return out


def _lift(value):
    """(expression, hint) of an int or SymInt; None for anything else."""
    if isinstance(value, SymInt):
        return value.expr, value.hint
    if isinstance(value, bool):
        return None
    try:
        v = value.__index__()
    except (AttributeError, TypeError):
        return None
    return ("const", v), v


def _combine(op, a, b, hint):
    (ea, ha), (eb, hb) = a, b
    if ea[0] == "const" and eb[0] == "const":
        return hint
    if op == "*" and (ea == ("const", 0) or eb == ("const", 0)):
        return 0
    if op in ("+", "-") and eb == ("const", 0):
        return SymInt(ea, ha)
    if op == "+" and ea == ("const", 0):
        return SymInt(eb, hb)
    if op in ("*", "//") and eb == ("const", 1):
        return SymInt(ea, ha)
    if op == "*" and ea == ("const", 1):
        return SymInt(eb, hb)
    if op in ("//", "%"):
        quotient = exact_quotient(ea, eb)
        if quotient is not None:       # (batch * 400) // batch: 400, the remainder 0
            if op == "%":
                return 0
            expr = expression_of(quotient)
            return expr[1] if expr[0] == "const" else SymInt(expr, hint)
    return SymInt((op, ea, eb), hint)


class SymInt:
    """An integer-valued expression over size symbols, with its value in this trace."""
    __slots__ = ("expr", "hint")

    def __init__(self, expr, hint):
        self.expr = expr
        self.hint = int(hint)

    @classmethod
    def symbol(cls, name, hint):
        return cls(("sym", name), hint)

    @property
    def name(self):
        return _text(self.expr)

    def symbols(self):
        return _symbols_of(self.expr, set())

    def evaluate(self, bindings):
        return _evaluate(self.expr, bindings)

    # ---- arithmetic stays symbolic ----------------------------------------------------------
    def _binary(self, other, op, reflected=False):
        b = _lift(other)
        if b is None:
            return NotImplemented
        a = (self.expr, self.hint)
        if reflected:
            a, b = b, a
        ha, hb = a[1], b[1]
        if op in ("//", "%") and hb == 0:
            raise ZeroDivisionError("integer division or modulo by zero")
        return _combine(op, a, b, _ARITHMETIC[op](ha, hb))

    def __add__(self, o): return self._binary(o, "+")          # noqa: E704
    def __radd__(self, o): return self._binary(o, "+", True)   # noqa: E704
    def __sub__(self, o): return self._binary(o, "-")          # noqa: E704
    def __rsub__(self, o): return self._binary(o, "-", True)   # noqa: E704
    def __mul__(self, o): return self._binary(o, "*")          # noqa: E704
    def __rmul__(self, o): return self._binary(o, "*", True)   # noqa: E704
    def __floordiv__(self, o): return self._binary(o, "//")    # noqa: E704
    def __rfloordiv__(self, o): return self._binary(o, "//", True)  # noqa: E704
    def __mod__(self, o): return self._binary(o, "%")          # noqa: E704
    def __rmod__(self, o): return self._binary(o, "%", True)   # noqa: E704

    def __neg__(self):
        return _combine("-", (("const", 0), 0), (self.expr, self.hint), -self.hint)

    def __pos__(self):
        return self

    # ---- what needs a concrete answer is guarded --------------------------------------------
    def _compare(self, other, op):
        b = _lift(other)
        if b is None:
            return NotImplemented
        if b[0] == self.expr:                       # the same expression: no guard needed
            return op in ("==", "<=", ">=")
        if b[0][0] == "const" and _nonnegative(self.expr):
            known = _known_about_size(op, b[1])
            if known is not None:
                return known
        outcome = _COMPARE[op](self.hint, b[1])
        _record(self.expr, op, b[0], outcome)
        return outcome

    def __eq__(self, o): return self._compare(o, "==")   # noqa: E704
    def __ne__(self, o): return self._compare(o, "!=")   # noqa: E704
    def __lt__(self, o): return self._compare(o, "<")    # noqa: E704
    def __le__(self, o): return self._compare(o, "<=")   # noqa: E704
    def __gt__(self, o): return self._compare(o, ">")    # noqa: E704
    def __ge__(self, o): return self._compare(o, ">=")   # noqa: E704

    def __hash__(self):
        # structural: a shape inside an op's attributes (a common-subexpression key) stays
        # symbolic; an equal int is only found through __eq__, which guards
        return hash(("SymInt", self.expr))

    def concrete(self):
        """The value in this trace, valid for every call where the recorded guard holds."""
        _record(self.expr, "==", ("const", self.hint), True)
        return self.hint

    def condition(self, op, value):
        """The guard `self <op> value` (an int) would record, as a `Pending` to record later
        only if it turns out to matter; None when it holds for every size."""
        if self.expr[0] != "const" and _nonnegative(self.expr):
            if _known_about_size(op, value) is not None:
                return None
        return Pending(self.expr, op, ("const", value), _COMPARE[op](self.hint, value))

    def __index__(self):
        return self.concrete()

    __int__ = __index__

    def __float__(self):
        return float(self.concrete())

    def __bool__(self):
        # `if nbytes:` asks whether a size is 0; guarding its value would pin the program
        return self._compare(0, "!=")

    def __format__(self, spec):
        render = getattr(_local, "render", None)
        if render is not None and not spec:
            return render(self.expr)
        return format(self.concrete(), spec)

    def __repr__(self):
        return self.name

    def __str__(self):
        render = getattr(_local, "render", None)
        return render(self.expr) if render is not None else self.name


_COMPARE = {"==": int.__eq__, "!=": int.__ne__, "<": int.__lt__, "<=": int.__le__,
            ">": int.__gt__, ">=": int.__ge__}


def _nonnegative(expr):
    """Whether an expression is >= 0 for all sizes (made of sizes, +, *, //, %)."""
    kind = expr[0]
    if kind == "sym":
        return True
    if kind == "const":
        return expr[1] >= 0
    return kind != "-" and _nonnegative(expr[1]) and _nonnegative(expr[2])


def _known_about_size(op, value):
    """What `size <op> value` is for every size (sizes are >= 0), or None."""
    if value <= 0 and op in (">=",) or value < 0 and op in (">", "!="):
        return True
    if value <= 0 and op == "<" or value < 0 and op in ("<=", "=="):
        return False
    return None


class Guard:
    """`lhs <op> rhs` had `outcome` when traced; `where` says which code asked."""
    __slots__ = ("lhs", "op", "rhs", "outcome", "where")

    def __init__(self, lhs, op, rhs, outcome, where):
        self.lhs, self.op, self.rhs, self.outcome, self.where = lhs, op, rhs, outcome, where

    def holds(self, bindings):
        try:
            a, b = _evaluate(self.lhs, bindings), _evaluate(self.rhs, bindings)
        except ZeroDivisionError:
            return False
        return _COMPARE[self.op](a, b) == self.outcome

    def always_holds(self, minimum=0):
        """Does the guard hold for every value of its symbols from `minimum` up? Proved
        for polynomials in the sizes (+, -, *): with each size written s = minimum + t,
        lhs - rhs is a polynomial in the t >= 0 whose coefficients all have one sign;
        anything else (//, %, a sign that varies) is not proved."""
        shift = {} if not minimum else {
            name: ("+", ("sym", name), ("const", minimum))
            for name in _symbols_of(self.lhs, set()) | _symbols_of(self.rhs, set())}
        lhs = polynomial(substitute(self.lhs, shift))
        rhs = polynomial(substitute(self.rhs, shift))
        if lhs is None or rhs is None:
            return False
        diff = dict(lhs)
        for mono, c in rhs.items():
            diff[mono] = diff.get(mono, 0) - c
        coeffs = [c for c in diff.values() if c]
        constant = diff.get((), 0)
        nonneg, nonpos = all(c >= 0 for c in coeffs), all(c <= 0 for c in coeffs)
        positive = nonneg and constant > 0       # > 0 at every size
        negative = nonpos and constant < 0
        op = self.op if self.outcome else {"==": "!=", "!=": "==", "<": ">=", "<=": ">",
                                           ">": "<=", ">=": "<"}[self.op]
        return {">=": nonneg, "<=": nonpos, ">": positive, "<": negative,
                "==": not coeffs, "!=": positive or negative}[op]

    def kind(self):
        """'specialized' (a symbol pinned to a value), 'equal-to', 'divisible-by' or
        'condition'."""
        equal = self.op == ("==" if self.outcome else "!=")    # (`s != 8` failed: s == 8)
        if self.lhs[0] == "%" and self.rhs == ("const", 0) and equal:
            return "divisible-by"
        if equal and self.lhs[0] == "sym":
            return "specialized" if self.rhs[0] == "const" else "equal-to"
        return "condition"

    def __repr__(self):
        op = self.op if self.outcome else {"==": "!=", "!=": "==", "<": ">=", "<=": ">",
                                           ">": "<=", ">=": "<"}[self.op]
        return f"{_text(self.lhs)} {op} {_text(self.rhs)}  [{self.where}]"


class ShapeEnv:
    """The symbols of one program and the guards its build recorded."""

    def __init__(self):
        self.symbols = {}     # name -> hint at the trace
        self.guards = []
        self._seen = set()

    def symbol(self, name, hint):
        self.symbols.setdefault(name, int(hint))
        return SymInt.symbol(name, hint)

    def record(self, lhs, op, rhs, outcome, where=None):
        key = (lhs, op, rhs)
        if key in self._seen:
            return
        self._seen.add(key)
        self.guards.append(Guard(lhs, op, rhs, outcome, where or _who_asked()))

    def accepts(self, bindings):
        """Does a program built under this env serve sizes `bindings` ({symbol: int})?"""
        return all(v >= 0 for v in bindings.values()) and \
            all(g.holds(bindings) for g in self.guards)

    def general(self, minimum=0):
        """Does a program built under this env serve every size from `minimum` up (no
        guard restricts it there)?"""
        return all(g.always_holds(minimum) for g in self.guards)

    def specialized(self):
        """The symbols a guard pinned to one value: the program is not general in them."""
        return {g.lhs[1] for g in self.guards if g.kind() == "specialized"}


_local = threading.local()


def active_env():
    return getattr(_local, "env", None)


class _ThreadSetting:
    """Sets one attribute of this thread's state for the code inside the block."""
    def __init__(self, value):
        self.value = value

    def __enter__(self):
        self.saved = getattr(_local, self.attribute, None)
        setattr(_local, self.attribute, self.value)
        return self.value

    def __exit__(self, *exc):
        setattr(_local, self.attribute, self.saved)


class building(_ThreadSetting):
    """Record the guards of everything done inside (a trace, its passes, its compile)."""
    attribute = "env"


class Pending:
    """A guard recorded only if it turns out to matter (a view decision, once a write comes)."""
    __slots__ = ("lhs", "op", "rhs", "outcome", "where", "env")

    def __init__(self, lhs, op, rhs, outcome):
        self.lhs, self.op, self.rhs, self.outcome = lhs, op, rhs, outcome
        self.where = _who_asked()
        self.env = active_env()

    def current(self):      # the build that asked is still the one running
        return self.env is not None and self.env is active_env()

    def commit(self):
        """Record the guard in the build that asked; nothing once that build is over (its
        program is fixed, and a later write is eager code of its own)."""
        if self.current():
            self.env.record(self.lhs, self.op, self.rhs, self.outcome, self.where)


class rendering(_ThreadSetting):
    """Inside, a symbolic size written into text (an f-string, str()) is `render(expr)`, an
    expression generated C computes from each call's sizes, not its traced value (guarded)."""
    attribute = "render"


def _record(lhs, op, rhs, outcome):
    env = active_env()
    if env is None:
        raise SymbolicShapeError(
            f"the symbolic size {_text(lhs)} needs a concrete value ({op} {_text(rhs)}) "
            "outside a build, where no guard can keep the program valid")
    env.record(lhs, op, rhs, outcome)


def _who_asked():
    """The innermost kiln line outside this module, and the user's line, if any."""
    frame = sys._getframe(3)
    here = os.path.abspath(__file__)
    kiln_line = ""
    while frame is not None:
        path = os.path.abspath(frame.f_code.co_filename)
        if path != here and path.startswith(_PACKAGE_DIR + os.sep):
            rel = os.path.relpath(path, os.path.dirname(_PACKAGE_DIR))
            kiln_line = f"{rel}:{frame.f_lineno} in {frame.f_code.co_name}"
            break
        if path != here:
            break
        frame = frame.f_back
    user = user_frame()
    parts = [p for p in (kiln_line, user and f"{user[0]}:{user[1]} {user[2]}") if p]
    return "; ".join(parts) or "unknown"


def same_shape(a, b):
    """a == b for shapes that may hold symbolic sizes: ranks first, and a size compared
    with itself needs no guard (tuple == compares items before lengths)."""
    return len(a) == len(b) and all(x is y or x == y for x, y in zip(a, b))


def same_at_every_size(a, b):
    """Shapes a == b whatever the sizes' values (proved, no guard): skip a no-op only then."""
    return len(a) == len(b) and all(x is y or (provably(x, "==", y) if isinstance(
        x, SymInt) or isinstance(y, SymInt) else x == y) for x, y in zip(a, b))


def provably(a, op, b):
    """Does `a <op> b` (ints or SymInts) hold at every size? Proved without a guard; False
    when not proved, for code that only takes a faster or narrower path when it holds."""
    return Guard(_lift(a)[0], op, _lift(b)[0], True, "").always_holds()


def difference(a, b):
    """a - b for sizes; an int when the symbols cancel (a window's length, not its ends')."""
    d = a - b
    return d.hint if isinstance(d, SymInt) and provably(d, "==", d.hint) else d


def is_symbolic(dim):
    return isinstance(dim, SymInt)


def has_symbolic(shape):
    return any(isinstance(d, SymInt) for d in shape)


def graph_is_symbolic(graph):     # (an input no output reads counts: its size is bound)
    return any(has_symbolic(n.shape) for n in graph.inputs + graph.nodes)


def _map_sizes(value, size):
    """`value` (an op attribute: int, SymInt, or tuples/lists/dicts of them) with each
    symbolic size s replaced by size(s)."""
    if isinstance(value, SymInt):
        return size(value)
    if isinstance(value, (tuple, list)):
        mapped = [_map_sizes(v, size) for v in value]
        return tuple(mapped) if isinstance(value, tuple) else mapped
    if isinstance(value, dict):
        return {k: _map_sizes(v, size) for k, v in value.items()}
    return value


def concrete_value(value, bindings):
    """`value` with its symbolic sizes replaced by their values in a call."""
    return _map_sizes(value, lambda s: s.evaluate(bindings))


def hinted(value):
    """`value` with its symbolic sizes replaced by their values in the trace (for a
    stand-in array that never reaches a result: see aliasing.py)."""
    return _map_sizes(value, lambda s: s.hint)


def mentions_symbolic(value):
    if isinstance(value, SymInt):
        return True
    if isinstance(value, (tuple, list)):
        return any(mentions_symbolic(v) for v in value)
    if isinstance(value, dict):
        return any(mentions_symbolic(v) for v in value.values())
    return False
