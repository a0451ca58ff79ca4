"""MXNet's `mx.util`: the NumPy-semantics switches and decorators.

MXNet 1.x starts in "legacy" shape mode and code opts into NumPy shape semantics with
`set_np_shape(True)`, `npx.set_np()`, `with np_shape():` or the `use_np_shape`/`use_np`
decorators. The switch is kept here, per thread as MXNet keeps it. In legacy mode a 0 in a
shape means "unknown" and a shape () "unknown rank": creating such an array (nd.zeros,
nd.ones) is an error, and symbolic shape inference reads 0 as unknown. kiln.np is not
affected: it always has NumPy semantics. Arrays are always NumPy-style (`set_np_array(False)`
is refused).
"""
import contextlib
import functools
import inspect
import os
import threading

from .._core.base import KilnError, where_in_user_code
from .. import npx as _npx

_STATE = threading.local()


def is_np_array():
    """True: kiln's arrays are always NumPy-style `np.ndarray`s."""
    return True


def is_np_shape():
    """Whether NumPy shape semantics are on in this thread (zero-size dimensions and 0-d
    arrays); False, MXNet 1.x's default legacy mode, until switched on."""
    return getattr(_STATE, "np_shape", False)


def check_legacy_shape(name, shape):
    """In legacy shape mode, a creation op given a shape with a 0 (unknown) or () (unknown
    rank) cannot infer its output, as in MXNet 1.x."""
    if is_np_shape():
        return
    dims = (shape,) if isinstance(shape, int) else tuple(shape)
    if len(dims) == 0 or any(int(d) == 0 for d in dims):
        raise KilnError(f"{name}: shape {dims} is not known in MXNet's legacy shape mode "
                        "(0 means an unknown size, () an unknown rank); turn NumPy shape "
                        "semantics on with mx.set_np_shape(True) or `with mx.np_shape():`"
                        + where_in_user_code())


def _set(what, active):
    if not active:
        raise KilnError(f"set_{what}(False): kiln has only NumPy semantics; MXNet's legacy "
                        f"{what.replace('_', ' ')} mode does not exist here")
    return True


def set_np_shape(active):
    """Turn NumPy shape semantics on or off (legacy mode) in this thread; returns the
    previous state."""
    previous = is_np_shape()
    _STATE.np_shape = bool(active)
    return previous


def set_np_array(active):
    """Returns the previous state (always True); set_np_array(False) is refused."""
    return _set("np_array", active)


def set_np(shape=True, array=True, dtype=False):
    """NumPy shape semantics on or off as `shape` says; arrays are always NumPy-style
    (array=False is refused)."""
    _set("np_array", array)
    set_np_shape(shape)


def reset_np():
    """Back to MXNet 1.x's legacy shape mode (arrays stay NumPy-style)."""
    set_np_shape(False)


@contextlib.contextmanager
def np_shape(active=True):
    """`with mx.util.np_shape(active):` -- NumPy shape semantics on (or off) inside."""
    previous = set_np_shape(active)
    try:
        yield
    finally:
        set_np_shape(previous)


@contextlib.contextmanager
def np_array(active=True):
    """`with mx.util.np_array(True):` -- a no-op scope; False is refused."""
    _set("np_array", active)
    yield


def _identity_decorator(name):
    def decorator(func_or_class):
        if not callable(func_or_class):
            raise KilnError(f"mx.util.{name}: decorates a function or a class, got "
                            f"{type(func_or_class).__name__}")
        return func_or_class
    decorator.__name__ = name
    decorator.__doc__ = (f"`@{name}` on a Block class or a function: returns it unchanged, "
                         "since kiln always has NumPy semantics.")
    return decorator


def use_np_shape(func_or_class):
    """`@use_np_shape` on a function: it runs with NumPy shape semantics on; on a class: its
    methods, static functions and properties do (the class is changed in place, so it
    keeps its identity), as MXNet's decorator does."""
    if inspect.isclass(func_or_class):
        for name, member in list(vars(func_or_class).items()):
            if isinstance(member, property):
                setattr(func_or_class, name, property(
                    member.fget and use_np_shape(member.fget),
                    member.fset and use_np_shape(member.fset), member.fdel, member.__doc__))
            elif isinstance(member, (staticmethod, classmethod)):
                setattr(func_or_class, name, type(member)(use_np_shape(member.__func__)))
            elif inspect.isfunction(member):
                setattr(func_or_class, name, use_np_shape(member))
        return func_or_class
    if not callable(func_or_class):
        raise KilnError(f"mx.util.use_np_shape: decorates a function or a class, got "
                        f"{type(func_or_class).__name__}")

    @functools.wraps(func_or_class)
    def scoped(*args, **kwargs):
        with np_shape(True):
            return func_or_class(*args, **kwargs)
    return scoped


def use_np(func_or_class):
    """`@use_np`: NumPy shape semantics (use_np_shape); arrays are always NumPy-style."""
    return use_np_shape(func_or_class)


use_np_array = _identity_decorator("use_np_array")
use_np_default_dtype = _identity_decorator("use_np_default_dtype")


def is_np_default_dtype():
    """False: like MXNet's default, floating arrays are created as float32."""
    return False


def set_np_default_dtype(is_np_default_dtype=True):
    """kiln creates float32 arrays by default, as MXNet does: False is accepted (and returned),
    True (a float64 default) is refused."""
    if is_np_default_dtype:
        raise KilnError("set_np_default_dtype(True): kiln creates float32 arrays by default "
                        "(as MXNet does) and has no float64 default mode")
    return False


# npx.set_np()/reset_np() switch the shape mode too (npx sits below mx and calls this hook)
_npx.SHAPE_MODE_HOOKS.append(set_np_shape)


def getenv(name):
    """The environment variable `name`, or None (MXNet reads its own copy; kiln the OS's)."""
    return os.environ.get(name)


def setenv(name, value):
    """Set the environment variable `name` to `value`, or remove it when `value` is None."""
    if value is None:
        os.environ.pop(name, None)
    else:
        os.environ[name] = str(value)


def get_gpu_count():
    """The number of GPUs: 0, as kiln runs on the CPU."""
    return 0


def get_gpu_memory(gpu_dev_id):
    """An error: kiln runs on the CPU and has no GPU memory to report."""
    raise KilnError(f"get_gpu_memory({gpu_dev_id}): kiln runs on the CPU; there are no GPUs")


def set_module(module):
    """Decorator: set a function's or class's __module__ (how it shows in help())."""
    def decorator(func):
        if module is not None:
            func.__module__ = module
        return func
    return decorator


_UFUNC_OPTIONS = ("out", "where", "casting", "order", "dtype", "subok")


def np_ufunc_legal_option(key, value):
    """Whether a NumPy ufunc keyword is one MXNet's np functions accept with this value."""
    if key not in _UFUNC_OPTIONS:
        return False
    return {"where": value is True or value is None, "casting": value == "same_kind",
            "order": value == "K", "subok": value is True}.get(key, True)


def _wrap_ufunc(func):
    """A decorator for NumPy-style ufuncs (`wrap_np_unary_func`, `wrap_np_binary_func`): keywords
    MXNet does not accept (`where`, `casting`, `order`, `subok` with other values) are refused,
    the rest reach `func`."""
    def wrapped(*args, **kwargs):
        for key, value in kwargs.items():
            if key not in ("out", "dtype") and not np_ufunc_legal_option(key, value):
                raise KilnError(f"{func.__name__}: {key}={value!r} is not supported")
        return func(*args, **kwargs)
    wrapped.__name__, wrapped.__doc__ = func.__name__, func.__doc__
    return wrapped


wrap_np_unary_func = wrap_np_binary_func = _wrap_ufunc


def get_cuda_compute_capability(ctx):
    """An error: kiln runs on the CPU and has no CUDA device."""
    raise KilnError(f"get_cuda_compute_capability({ctx}): kiln runs on the CPU; there is "
                    "no CUDA device")
