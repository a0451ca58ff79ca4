"""A CPython extension that makes the per-call path of a compiled program one C call.

For a batch-1 model the generated code runs in about 10 µs, and the Python around it
(checking inputs, binding parameters, the ctypes call, copying outputs, finding the entry
for the arguments, wrapping the result) cost about as much again.

`Caller` serves one CProgram: it checks each input and parameter against the planned
shape, dtype and layout, points the program's table at them, rebinds a parameter
only when its array object changed, releases the GIL while the generated code runs, and
returns fresh output arrays. The program reads its inputs in place: another thread that
writes an input meanwhile changes what it reads, as with any NumPy function that releases
the GIL. Anything it does not handle (a wrong or non-contiguous input,
another array type) makes it return None, and CProgram takes its Python path, which
converts or raises the clear error. A Caller is also the program's lock (`with caller:`),
shared by both paths: the table and buffers belong to one call at a time.

The same module holds the Dispatcher and HybridBlock.__call__ in C (fastdispatch.py
describes them). Its C is csrc/fastcall.c, which includes csrc/fastdispatch.c.

Building it needs the Python and NumPy headers; without them kiln keeps its Python paths.
"""
import importlib.machinery
import importlib.util
import os
import sysconfig
import threading

from . import build, fixed_source
from .. import fallbacks

MODULE = "kiln_fastcall"

_module = None
_lock = threading.Lock()


def _get():
    global _module
    with _lock:
        if _module is None:
            _module = _build() or False
        return _module or None


def caller_type():
    """kiln_fastcall.Caller, or None when the extension cannot be built here."""
    module = _get()
    return module.Caller if module else None


def dispatcher():
    """A new kiln_fastcall.Dispatcher for one hybridized function, or None."""
    module = _get()
    if not module:
        return None
    from ..._core import autograd
    from ..._core.ndarray import ndarray
    _install_block_call(module)
    return module.Dispatcher(ndarray, autograd._state, ndarray._FRESH)


_block_class = []            # [HybridBlock], registered by kiln.gluon.block
_block_call_installed = []


def serve_block_calls(block_class):
    """Register the block class whose __call__ the C BlockCall takes over. kiln.gluon
    registers HybridBlock when it is imported: the backend sits below gluon and does not
    import it."""
    with _lock:
        _block_class[:] = [block_class]


def _install_block_call(module):
    """HybridBlock.__call__ becomes the C BlockCall (fastdispatch.py): the same paths
    without a Python frame. Done once, when the first dispatcher is made (no block pays it
    before any has a compiled program to run); whatever is put there later stays."""
    with _lock:
        if _block_call_installed or not _block_class:
            return
        _block_call_installed.append(True)
        block_class = _block_class[0]
    from ..._core import trace
    # the thread-local tracing state: BlockCall reads the calling thread's on every call
    block_class.__call__ = module.as_method(module.BlockCall(trace._local))


def _build():
    if os.environ.get("KILN_NO_FASTCALL"):
        return _without("turned off (KILN_NO_FASTCALL)")
    try:
        import numpy
        include = sysconfig.get_paths()["include"]
        if not os.path.exists(os.path.join(include, "Python.h")):
            return _without(f"no Python headers ({include}/Python.h; e.g. apt install "
                            "python3-dev)")
        # -O2: glue code, and -O3 -funroll-loops added a third to its 0.5 s compile, which
        # a cold first call waits for
        lib = build.load(fixed_source.text("fastcall.c"),
                         extra_flags=("-pthread", f"-I{include}", f"-I{numpy.get_include()}"),
                         opt=("-O2",))
        loader = importlib.machinery.ExtensionFileLoader(MODULE, lib._name)
        spec = importlib.util.spec_from_file_location(MODULE, lib._name, loader=loader)
        module = importlib.util.module_from_spec(spec)
        loader.exec_module(module)
        return module
    except Exception as exc:   # a compiler error, a NumPy without its C API: keep Python
        return _without(f"it did not build: {type(exc).__name__}: {str(exc)[:200]}")


def _without(why):
    """No extension: compiled calls take the Python path, a few microseconds more per call
    (no warning, see backend/fallbacks.py; kiln.explain says why)."""
    fallbacks.record("C fast-call extension", "each compiled call goes through Python",
                     f"the C fast-call extension is not used: {why}")
    return None
