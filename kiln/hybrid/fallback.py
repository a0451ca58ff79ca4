"""Honest fallbacks: when tracing cannot build a graph, run the code eagerly and say why.

A "break" is tracing stopped by something a graph cannot express: a concrete value asked
of a symbol (`asnumpy()`, `float(x)`, `bool(x)` in control flow kiln did not convert), a
`try` around array code, a branch/loop kiln could not merge. hybridize then keeps that
signature eager (correct results and gradients, through the ordinary autograd tape) and
warns once, naming the construct and the user's file:line. With strict=True the break is
an error instead. A hybridized block that falls back still calls its children, and each
hybridized child compiles on its own, so only the breaking level runs op by op.
"""
import os
import warnings
import weakref

from .._core.base import KilnError, SymbolicValueError, user_frame
from ..graph import guards
from .._core.base import GraphBreak

_KILN_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class HybridizeFallbackWarning(UserWarning):
    """hybridize runs (part of) a model eagerly; the message says what broke the trace."""


class HybridizeError(KilnError):
    """hybridize(strict=True) met code it cannot compile."""


class Break:
    """Why tracing stopped: kind ('concrete-value', 'unsupported', 'no-source',
    'control-flow'), the construct, a readable reason and the user's file:line."""

    def __init__(self, kind, construct, reason, file=None, line=None, code=""):
        self.kind, self.construct, self.reason = kind, construct, reason
        self.file, self.line, self.code = file, line, code

    @property
    def where(self):
        return f"{self.file}:{self.line}" if self.file else "<unknown>"

    def __str__(self):
        text = f"{self.where}: {self.construct} -- {self.reason}"
        return text + (f"\n    {self.code}" if self.code else "")

    __repr__ = __str__


def _user_frame_of(exc):
    """(file, line, code object) of the innermost traceback frame outside kiln."""
    found = None
    tb = exc.__traceback__
    while tb is not None:
        path = os.path.abspath(tb.tb_frame.f_code.co_filename)
        if not path.startswith(_KILN_DIR + os.sep):
            found = (tb.tb_frame.f_code.co_filename, tb.tb_lineno, tb.tb_frame.f_code)
        tb = tb.tb_next
    return found


def classify(exc):
    """A Break for an exception that means "cannot trace this", else None."""
    from ..graph.convert import NOTES, failure_of
    if isinstance(exc, GraphBreak):
        kind, construct = exc.kind, exc.construct
        reason = str(exc).split("\n")[0]
    elif isinstance(exc, SymbolicValueError):
        kind = "concrete-value"
        construct = str(exc).split(" needs a concrete value")[0]
        reason = (f"{construct} needs a concrete value, but inside hybridize the array is "
                  "a symbol")
    else:
        return None
    file = line = None
    code_line = ""
    frame = _user_frame_of(exc)
    if frame is not None:
        file, line, code = frame
        import linecache
        code_line = linecache.getline(file, line).strip()
        note = NOTES.get(code, {}).get(line)
        failed = failure_of(code)
        if note is not None:
            kind, reason = "unsupported", f"{reason}; {note}"
        elif failed is not None:
            kind = failed[0]
            reason = f"{failed[1]}; tracing then needed {construct}"
    return Break(kind, construct, reason, file, line, code_line)


def strong(fn):
    """`fn`, or what it refers to when it is a weakref.ref (None once that is gone)."""
    return fn() if isinstance(fn, weakref.ref) else fn


class EagerEntry:
    """A signature hybridize could not compile: the function runs eagerly."""
    eager = True
    guards = None

    def __init__(self, fn, brk):
        self._fn = fn       # the CachedFunction's own: maybe a weakref.ref to the block
        self.breaks = [brk]

    fn = property(lambda self: strong(self._fn))

    @property
    def program(self):
        raise HybridizeError(f"nothing was compiled for this input signature: "
                             f"{self.breaks[0]}")

    def run_inference(self, arrays):
        return self.fn(*arrays)

    def run(self, args):
        return self.fn(*args)


RETRACE_WARNING_AFTER = 8


def build_entry(cached, args, grad_mask):
    """cached._build(args, grad_mask), with guards recorded and breaks handled."""
    _count_guard_retraces(cached)
    rec = guards.start()
    try:
        try:
            entry = cached._build(args, grad_mask)
        except (GraphBreak, SymbolicValueError) as exc:
            brk = classify(exc)
            if getattr(cached, "strict", False):
                raise HybridizeError(f"hybridize(strict=True): cannot compile "
                                     f"{cached.name}: {brk}") from exc
            cached.__dict__.setdefault("breaks", []).append(brk)
            if not getattr(cached, "quiet", False):
                _warn(cached.name, brk)
            return EagerEntry(cached._fn, brk)
    finally:
        guards.stop(rec)
    entry.guards = rec.check()
    return entry


def _count_guard_retraces(cached):
    """A captured constant that changes on every call makes every call trace again: say so
    (once), since the user would rather pass it as an argument."""
    stale = [e for e in cached.entries.values()
             if e.guards is not None and not e.guards()]
    if not stale:
        return
    n = cached.__dict__["_guard_retraces"] = cached.__dict__.get("_guard_retraces", 0) + 1
    if n == RETRACE_WARNING_AFTER:
        names = ", ".join(stale[0].guards.descriptions)
        where = user_frame() or ("<kiln>", 0, "")
        warnings.warn_explicit(
            f"kiln.hybridize: {cached.name} was traced again {n} times because captured "
            f"constants keep changing ({names}); pass such values as arguments instead",
            HybridizeFallbackWarning, where[0], where[1])


def _warn(name, brk):
    message = (f"kiln.hybridize: {name} runs eagerly (not compiled) for this input "
               f"signature: {brk.construct} at {brk.where} -- {brk.reason}. "
               "kiln.explain(...) shows details; hybridize(strict=True) makes this an error.")
    if brk.file is not None:
        warnings.warn_explicit(message, HybridizeFallbackWarning, brk.file, brk.line)
    else:
        where = user_frame() or ("<kiln>", 0, "")
        warnings.warn_explicit(message, HybridizeFallbackWarning, where[0], where[1])

