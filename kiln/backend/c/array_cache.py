"""A cache of large NumPy data blocks, as MXNet's pooled storage keeps its CPU memory.

Eager CNN code makes and drops arrays of the same few large sizes on every step (a
convolution's output, its ReLU, their gradients: 75 MB each for 128 x 64 x 48 x 48
float32). glibc serves every block above 32 MB from a fresh mmap and unmaps it on free, so
each such array is paid again in page faults: on this machine np.maximum(x, 0) over 75 MB
took 7 ms of user and 9 ms of system time with a fresh output, and no system time writing
into an existing one. This module gives NumPy a data allocator (NumPy's
PyDataMem_SetHandler, in the calling context) that keeps freed blocks of at least
MIN_BYTES, up to a total of LIMIT_BYTES (the oldest go back first), and hands one back
for a request of the same size. A large request it cannot serve first returns at least
its size of cached blocks to the system, so the process's peak memory stays what it was
without the cache. Smaller blocks go straight to the system allocator. It is
on from `import kiln`; KILN_ARRAY_CACHE=0 leaves NumPy's allocator alone.

Each block carries its true size in a header written by this allocator, so a cached
block is never handed out for a larger request, whatever size NumPy passes to free.
After a fork (DataLoader workers) the child starts with an unlocked mutex. The allocator
is C, csrc/array_cache.c.
"""
import ctypes
import threading

import numpy as _np

from . import fixed_source

MIN_BYTES = 4 << 20


def _limit_bytes():
    """An eighth of physical memory, from 256 MB to 4 GB: the cache holds two of VGG's
    largest activations at batch 128 (1.6 GB each) on the 24 GB development machine."""
    import os
    try:
        physical = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        physical = 8 << 30
    return max(256 << 20, min(4 << 30, physical // 8))


LIMIT_BYTES = _limit_bytes()

class _Allocator(ctypes.Structure):
    _fields_ = [("ctx", ctypes.c_void_p), ("malloc", ctypes.c_void_p),
                ("calloc", ctypes.c_void_p), ("realloc", ctypes.c_void_p),
                ("free", ctypes.c_void_p)]


class _Handler(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char * 127), ("version", ctypes.c_uint8),
                ("allocator", _Allocator)]


_SET_HANDLER = 304      # PyDataMem_SetHandler's index in NumPy's C-API table (NumPy >= 1.22)
_state = {}
_lock = threading.Lock()


def _library():
    from .build import load
    lib = load(fixed_source.text("array_cache.c"))
    lib.kac_configure.argtypes = [ctypes.c_size_t, ctypes.c_size_t]
    lib.kac_stats.argtypes = [ctypes.POINTER(ctypes.c_int64)]
    return lib


def _numpy_core():
    return getattr(_np, "_core", None) or _np.core


def _set_handler(capsule):
    get_pointer = ctypes.pythonapi.PyCapsule_GetPointer
    get_pointer.restype = ctypes.c_void_p
    get_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
    table = get_pointer(_numpy_core()._multiarray_umath._ARRAY_API, None)
    set_handler = ctypes.PYFUNCTYPE(ctypes.py_object, ctypes.py_object)(
        ctypes.c_void_p.from_address(table + _SET_HANDLER * ctypes.sizeof(ctypes.c_void_p)).value)
    return set_handler(capsule)


def install():
    """Make NumPy allocate array data through the cache in the calling thread's context
    (and the threads started from it later take the default again: NumPy keeps the
    handler in a context variable). Returns False where it cannot (no C compiler, or a
    NumPy without memory handlers)."""
    with _lock:
        try:
            return _install()
        except Exception:   # noqa: BLE001 - a cache is an optimization, never required
            return False


def _install():
    if "capsule" not in _state:
        from .build import available
        if not available() or not hasattr(_numpy_core().multiarray, "get_handler_name"):
            return False
        lib = _library()
        lib.kac_configure(MIN_BYTES, LIMIT_BYTES)
        handler = _Handler()
        handler.name = b"kiln_array_cache"
        handler.version = 1
        handler.allocator = _Allocator(None, *(ctypes.cast(getattr(lib, f"kac_{f}"),
                                                           ctypes.c_void_p).value
                                               for f in ("malloc", "calloc", "realloc",
                                                         "free")))
        new_capsule = ctypes.pythonapi.PyCapsule_New
        new_capsule.restype = ctypes.py_object
        new_capsule.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
        # the handler and the library live as long as the process: arrays keep a
        # reference to the capsule, and their blocks come back to kac_free
        _state.update(lib=lib, handler=handler, name=ctypes.c_char_p(b"mem_handler"))
        _state["capsule"] = new_capsule(ctypes.addressof(handler), _state["name"], None)
    _set_handler(_state["capsule"])
    return True


def stats():
    """{'hits', 'misses', 'cached_bytes', 'blocks'} of the cache (zeros before install)."""
    values = (ctypes.c_int64 * 4)()
    if "lib" in _state:
        _state["lib"].kac_stats(values)
    return dict(zip(("hits", "misses", "cached_bytes", "blocks"), values))


def release():
    """Give every cached block back to the system."""
    if "lib" in _state:
        _state["lib"].kac_release()
