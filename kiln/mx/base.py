"""`mxnet.base` under the alias: the pure-Python names of MXNet 1.9.1's python/mxnet/base.py
that user code and MXNet-style libraries import (error classes, type tuples, `py_str`,
`_as_list`, `_Null`, data directories). kiln has no C library: the ctypes type names
(SymbolHandle, mx_uint, c_str_array, ...) are here for scripts that import them (MXNet's
quantization example does, and uses none), and `_LIB` is an object whose every function
raises an error that says so."""
import ctypes
import os

import numpy as _np

from kiln._core.base import KilnError

__all__ = ["MXNetError"]

MXNetError = KilnError   # the same class kiln raises, so `except MXNetError` catches kiln's errors
integer_types = (int, _np.int32, _np.int64)
numeric_types = (float, int, _np.generic)
string_types = (str,)
mx_real_t = _np.float32
error_types = {}


def py_str(x):
    """Bytes from a C string as a Python str (UTF-8)."""
    return x.decode("utf-8")


def data_dir_default():
    """The default directory for downloaded data: `~/.mxnet`."""
    return os.path.join(os.path.expanduser("~"), ".mxnet")


def data_dir():
    """The directory for downloaded data: `$MXNET_HOME`, else `~/.mxnet`."""
    return os.getenv("MXNET_HOME", data_dir_default())


class _NullType:
    """Placeholder for an argument the caller did not give."""

    def __repr__(self):
        return "_Null"


_Null = _NullType()


def register_error(func_name=None, cls=None):
    """Record an error class under its name in `error_types` (usable as a decorator)."""
    if callable(func_name):
        cls, func_name = func_name, func_name.__name__

    def register(mycls):
        error_types[func_name if isinstance(func_name, str) else mycls.__name__] = mycls
        return mycls
    return register if cls is None else register(cls)


class _NotAvailableFor(MXNetError):
    """A function called on a kind of array it does not take; `ending` says which."""
    ending = ""

    def __init__(self, function, alias, *args):
        super().__init__()
        self.function = function.__name__
        self.alias = alias
        self.args = [str(type(a)) for a in args]

    def __str__(self):
        msg = f"Function {self.function}"
        if self.alias:
            msg += f' (namely operator "{self.alias}")'
        if self.args:
            msg += f" with arguments ({', '.join(self.args)})"
        return msg + self.ending


@register_error
class NotImplementedForSymbol(_NotAvailableFor):
    """An NDArray-only function was called on a Symbol."""
    ending = " is not implemented for Symbol and only available in NDArray."


class NotSupportedForSparseNDArray(_NotAvailableFor):
    """A dense-only function was called on a sparse array."""
    ending = " is not supported for SparseNDArray and only available in NDArray."


def _as_list(obj):
    """`obj` itself when it is a list or tuple, else `[obj]`."""
    return obj if isinstance(obj, (list, tuple)) else [obj]


def classproperty(func):
    """A read-only property of the class itself (`Cls.name`), as MXNet's base defines it."""
    return _ClassProperty(func if isinstance(func, (classmethod, staticmethod))
                          else classmethod(func))


class _ClassProperty:
    """The descriptor behind `classproperty`."""

    def __init__(self, fget):
        self.fget = fget

    def __get__(self, obj, klass=None):
        return self.fget.__get__(obj, klass if klass is not None else type(obj))()


# MXNet's ctypes names: importable, so that scripts importing them run; no C library behind
mx_uint = ctypes.c_uint
mx_int = ctypes.c_int
mx_float = ctypes.c_float
NDArrayHandle = SymbolHandle = ExecutorHandle = CachedOpHandle = KVStoreHandle = \
    DataIterHandle = ctypes.c_void_p


def c_str(string):
    """A Python str as a C string (bytes)."""
    return ctypes.c_char_p(string.encode("utf-8"))


def c_str_array(strings):
    """Python strs as a C array of C strings."""
    arr = (ctypes.c_char_p * len(strings))()
    arr[:] = [s.encode("utf-8") for s in strings]
    return arr


def c_array(ctype, values):
    """A C array of `ctype` holding `values`."""
    return (ctype * len(values))(*values)


class _NoLibrary:
    """MXNet's `_LIB` (libmxnet.so through ctypes): kiln has none."""

    def __getattr__(self, name):
        raise MXNetError(f"mxnet.base._LIB.{name}: kiln has no libmxnet C library; its MXNet "
                         "API is Python (use the Python function that wraps this C call)")


_LIB = _NoLibrary()


def check_call(ret):
    """MXNet checks a C call's return code; kiln's calls never reach here (see `_LIB`)."""
    if ret != 0:
        raise MXNetError(f"a C call returned {ret}")
