"""Errors, dtype defaults and the user-line lookup shared by every module."""
import os
import sys

import numpy as _np

DEFAULT_FLOAT = _np.dtype(_np.float32)
DEFAULT_INT = _np.dtype(_np.int64)
SUPPORTED_DTYPES = tuple(_np.dtype(t) for t in (
    _np.float16, _np.float32, _np.float64, _np.int8, _np.uint8, _np.int32, _np.int64, _np.bool_))
_BFLOAT16 = []      # ml_dtypes' bfloat16 once imported (optional: see bfloat16_dtype)

_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # kiln/


class Shaped:
    """ndim and size derived from .shape: graph nodes and the abstract values shape rules
    read (a shape rule takes anything with .shape and .dtype)."""
    __slots__ = ()

    @property
    def ndim(self):
        return len(self.shape)

    @property
    def size(self):
        n = 1
        for d in self.shape:
            n *= d
        return n


class KilnError(Exception):
    """Base class for every error kiln raises on bad user input."""


class ShapeError(KilnError, ValueError):
    """A KilnError (and ValueError) for operands whose shapes do not fit the op; the message names
    the op and the user's line."""
    pass


class ValueRangeError(KilnError, ValueError):
    """A KilnError (and ValueError) for an argument outside the values it may take."""


class UnsupportedError(KilnError, NotImplementedError):
    """A KilnError (and NotImplementedError) for an option kiln (like MXNet) does not offer."""


class DTypeError(KilnError, TypeError):
    """A KilnError (and TypeError) for an unsupported or mismatched dtype."""
    pass


class ArgumentTypeError(KilnError, TypeError):
    """A KilnError (and TypeError) for an argument of a kind the function does not take."""


class KilnIndexError(KilnError, IndexError):
    """A KilnError (and IndexError) for an index out of range or of the wrong kind."""
    pass


class SymbolicValueError(KilnError, TypeError):
    """A concrete value was asked of a symbolic array while tracing."""


MXNetError = KilnError  # code written for MXNet catches this name


class GraphBreak(KilnError):
    """Tracing met code that cannot become part of a graph; hybridize runs it eagerly."""

    def __init__(self, message, construct, kind):
        super().__init__(message)
        self.construct = construct
        self.kind = kind


class ControlFlowError(GraphBreak):
    """A branch or loop with an array test whose paths cannot be merged into one graph
    (eager Python runs it fine, so hybridize falls back)."""

    def __init__(self, message):
        super().__init__(message, message.split(":")[0], "control-flow")


def postorder(roots, children):
    """Every node reachable from `roots`, each after all of its children(node): the
    iterative depth-first order that graphs (inputs first) and the autograd tape use."""
    order, seen = [], set()
    stack = [(n, False) for n in reversed(roots)]
    while stack:
        node, done = stack.pop()
        if done:
            order.append(node)
            continue
        if id(node) in seen:
            continue
        seen.add(id(node))
        stack.append((node, True))
        for child in reversed(children(node)):
            if id(child) not in seen:
                stack.append((child, False))
    return order


_ENTRY_POINTS = set()      # code objects of kiln's command-line entry points


def command_line_entry(fn):
    """Mark `fn` as a command-line entry point (`python -m kiln ...`): the frames outside
    it are the launcher's (runpy, a console script), not user code, so errors raised under
    it name no location unless user code (a script it runs) is on the way."""
    _ENTRY_POINTS.add(fn.__code__)
    return fn


def user_frame():
    """The innermost stack frame outside the kiln package, as (file, line, code); None
    when there is none (Python's frozen modules, such as runpy, are not user code)."""
    frame = sys._getframe(1)
    while frame is not None:
        if frame.f_code in _ENTRY_POINTS:
            return None
        name = frame.f_code.co_filename
        if name.startswith("<frozen "):
            frame = frame.f_back
            continue
        path = os.path.abspath(name)
        if not path.startswith(_PACKAGE_DIR + os.sep):
            line = frame.f_lineno
            code = ""
            try:
                import linecache
                code = linecache.getline(path, line).strip()
            except Exception:  # pragma: no cover - best effort only
                pass
            return path, line, code
        frame = frame.f_back
    return None


def where_in_user_code():
    """The user's file, line and code where the current kiln call was made, as text to append to an
    error message ('' outside user code)."""
    found = user_frame()
    if found is None:
        return ""
    path, line, code = found
    text = f"\n  at {path}:{line}"
    if code:
        text += f"\n    {code}"
    return text


def op_error(op, message, kind=ShapeError):
    """Build an error naming the op and the user's line (always a KilnError)."""
    if kind is IndexError:
        kind = KilnIndexError
    return kind(f"{op}: {message}{where_in_user_code()}")


def bfloat16_dtype():
    """The bfloat16 NumPy dtype (ml_dtypes.bfloat16), imported on first use: NumPy stays
    kiln's only hard dependency."""
    if not _BFLOAT16:
        try:
            import ml_dtypes
        except ImportError as exc:
            raise DTypeError(
                "dtype bfloat16 needs the ml_dtypes package (pip install 'kiln[lowp]' or "
                f"pip install ml_dtypes){where_in_user_code()}") from exc
        _BFLOAT16.append(_np.dtype(ml_dtypes.bfloat16))
    return _BFLOAT16[0]


def normalize_dtype(dtype, default=None):
    """`dtype` (a NumPy dtype, a type or a name; 'float' means kiln's default float) as a NumPy
    dtype kiln supports, or `default` when None; an unsupported one is a DTypeError."""
    if dtype is None:
        return default
    if isinstance(dtype, str) and dtype in ("float", "float_"):
        return DEFAULT_FLOAT
    if isinstance(dtype, str) and dtype == "bfloat16":
        return bfloat16_dtype()
    try:
        dt = _np.dtype(dtype)
    except TypeError as exc:
        raise DTypeError(f"unknown dtype {dtype!r}{where_in_user_code()}") from exc
    if dt not in SUPPORTED_DTYPES and not (dt.kind == "V" and dt.name == "bfloat16"):
        raise DTypeError(
            f"dtype {dt} is not supported; expected one of "
            f"{', '.join(str(d) for d in SUPPORTED_DTYPES)}{where_in_user_code()}")
    return dt


def normalize_axis(op, axis, ndim):
    """One axis, checked and made non-negative."""
    if type(axis) is int and -ndim <= axis < ndim:     # the common case, on most ops
        return axis % ndim
    if not isinstance(axis, (int, _np.integer)) or isinstance(axis, bool):
        raise op_error(op, f"axis must be an int, got {axis!r}", KilnError)
    if not -ndim <= axis < max(ndim, 1):
        raise op_error(op, f"axis {axis} is out of bounds for an array of {ndim} dimensions")
    return int(axis) % max(ndim, 1)


def normalize_axes(op, axis, ndim):
    """None (all axes), an int or a tuple of ints, as a sorted tuple."""
    if axis is None:
        return tuple(range(ndim))
    if isinstance(axis, (list, tuple)):
        axes = tuple(normalize_axis(op, a, ndim) for a in axis)
        if len(set(axes)) != len(axes):
            raise op_error(op, f"repeated axis in {tuple(axis)}")
        return tuple(sorted(axes))
    return (normalize_axis(op, axis, ndim),)
