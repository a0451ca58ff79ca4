"""MXNet's `mx.util`: the NumPy-semantics switches and decorators.

MXNet 1.x starts in "legacy" mode and code opts into NumPy semantics with `npx.set_np()` or
the `use_np` decorators on Blocks and functions. kiln has only NumPy semantics, so every
switch here reports "on", turning it off is refused, and the decorators return what they
decorate unchanged (a class keeps its identity, so isinstance checks still hold).
"""
import contextlib
import os

from .._core.base import KilnError


def is_np_array():
    """True: kiln's arrays are always NumPy-style `np.ndarray`s."""
    return True


def is_np_shape():
    """True: zero-size dimensions and scalars (shape ()) are always allowed."""
    return True


def _set(what, active):
    if not active:
        raise KilnError(f"set_{what}(False): kiln has only NumPy semantics; MXNet's legacy "
                        f"{what.replace('_', ' ')} mode does not exist here")
    return True


def set_np_shape(active):
    """Returns the previous state (always True); set_np_shape(False) is refused."""
    return _set("np_shape", active)


def set_np_array(active):
    """Returns the previous state (always True); set_np_array(False) is refused."""
    return _set("np_array", active)


def set_np(shape=True, array=True, dtype=False):
    """Accepted: kiln always uses NumPy shape and array semantics."""
    _set("np_shape", shape)
    _set("np_array", array)


def reset_np():
    """Accepted; kiln stays in NumPy mode (there is no other)."""


@contextlib.contextmanager
def np_shape(active=True):
    """`with mx.util.np_shape(True):` -- a no-op scope; False is refused."""
    _set("np_shape", active)
    yield


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


use_np = _identity_decorator("use_np")
use_np_array = _identity_decorator("use_np_array")
use_np_shape = _identity_decorator("use_np_shape")
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
