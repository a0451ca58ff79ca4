"""Finding oneDNN, compiling the shim against its headers, and loading both.

oneDNN comes from the PyPI wheels `onednn-cpu-gomp` (libdnnl.so.3, no RPATH) and
`onednn-devel-cpu-gomp` (headers); pyproject.toml makes them a default dependency on x86-64
Linux. The library is dlopened by path with RTLD_GLOBAL, so the shim, compiled and cached
like generated C (kiln/backend/c/build.py), resolves its symbols without link flags.

KILN_DNNL=0 turns the layer off (kiln's own kernels are then used everywhere); tests use
it to check that kiln stays correct without the library.
"""
import contextlib
import ctypes
import os
import sys
import threading

from .. import fallbacks

_state = {}
_lock = threading.Lock()
_forced_off = []

WHEEL = "onednn-cpu-gomp"
HEADERS_WHEEL = "onednn-devel-cpu-gomp"
# compiled as one library, in this order: conv.c, pool.c, matmul.c, elementwise.c, held.c,
# bnorm.c and lowp.c build and run their ops with shim.c's machinery; activation.c is
# plain loops; batch.c keeps the convolutions and poolings of run-time batch
SOURCES = ("shim.c", "conv.c", "pool.c", "matmul.c", "elementwise.c", "held.c", "bnorm.c",
           "lowp.c", "activation.c", "batch.c")


def _wheel_file(dist, suffix):
    try:
        from importlib import metadata
        files = metadata.files(dist) or ()
    except Exception:       # not installed, or metadata unreadable
        return None
    for f in files:
        if str(f).replace("\\", "/").endswith("/" + suffix):
            path = os.path.normpath(str(f.locate()))
            if os.path.exists(path):
                return path
    return None


def _find():
    """(path of libdnnl.so.3, include directory) or a reason string."""
    if not _supported_here():
        return f"oneDNN is used on x86-64 Linux only (this is {sys.platform} {os.uname().machine})"
    lib = _wheel_file(WHEEL, "libdnnl.so.3")
    header = _wheel_file(HEADERS_WHEEL, "include/oneapi/dnnl/dnnl.h")
    if lib is None or header is None:
        return (f"oneDNN not installed: pip install {WHEEL}==2023.2.0 "
                f"{HEADERS_WHEEL}==2023.2.0 (kiln's default dependencies on x86-64 Linux)")
    return lib, os.path.dirname(os.path.dirname(os.path.dirname(header)))


# libgomp's spin before a thread sleeps, in its own iterations (a few tens of microseconds
# here; its default is 300,000)
SHORT_SPIN = "30000"


@contextlib.contextmanager
def _openmp_wait(threads):
    """How libgomp's threads wait between primitives, set while libdnnl (and with it libgomp)
    loads, unless the user set OMP_WAIT_POLICY or GOMP_SPINCOUNT. libgomp reads it once,
    then; the environment is restored after, so libraries that load their own libgomp later
    (PyTorch) keep their default.

    With one thread nothing waits, so PASSIVE. With more, a short spin: the threads of a
    team wake for each primitive, and between the primitives run kiln's own loops. Sleeping
    at once (PASSIVE) cost ResNet-18 at batch 1 7.0 ms a call against 4.7 ms with a short
    spin (2 threads, idle machine); libgomp's default long spin took a core from kiln's
    pool: a LeNet step under load took 91-174 ms with it against 22-49 ms PASSIVE. The
    thread count itself already drops to one when the load says other processes are busy."""
    if "OMP_WAIT_POLICY" in os.environ or "GOMP_SPINCOUNT" in os.environ:
        yield
        return
    name, value = ("GOMP_SPINCOUNT", SHORT_SPIN) if threads > 1 else ("OMP_WAIT_POLICY",
                                                                     "PASSIVE")
    os.environ[name] = value
    try:
        yield
    finally:
        os.environ.pop(name, None)


def _load():
    found = _find()
    if isinstance(found, str):
        return found
    lib_path, include = found
    from ..c import build
    try:
        with _openmp_wait(thread_policy()):
            ctypes.CDLL(lib_path, mode=ctypes.RTLD_GLOBAL)
        source = ""
        for name in SOURCES:
            with open(os.path.join(os.path.dirname(__file__), name)) as f:
                source += f.read() + "\n"
        shim = build.load(source, extra_flags=("-I" + include, "-pthread"), opt=("-O2",))
    except build.CompilerUnavailable as exc:
        return f"{_NEEDS_COMPILER}: {exc}"
    except OSError as exc:
        return f"oneDNN found but not loadable: {exc}"
    except Exception as exc:      # a compile error in the shim: a kiln bug, but not fatal
        return f"the oneDNN shim did not build: {str(exc)[:300]}"
    P, I64 = ctypes.c_void_p, ctypes.POINTER(ctypes.c_int64)
    shim.kd_error.restype = ctypes.c_char_p
    shim.kd_init.restype = ctypes.c_int
    shim.kd_conv.restype = P
    shim.kd_conv.argtypes = [ctypes.c_int, ctypes.c_int, I64, I64, I64, I64, I64, I64, I64,
                             ctypes.c_int64, ctypes.c_int]
    shim.kd_pool.restype = P
    shim.kd_pool.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int, I64, I64, I64, I64, I64,
                             I64, ctypes.c_int]
    shim.kd_matmul.restype = P
    shim.kd_matmul.argtypes = [ctypes.c_int, I64, I64, I64, I64, ctypes.c_int64,
                               ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_int,
                               ctypes.c_int64]
    shim.kd_matmul_rows_new.restype = P
    shim.kd_matmul_rows_new.argtypes = [ctypes.c_int64, I64, I64, ctypes.c_int64,
                                        ctypes.c_int, ctypes.c_int]
    shim.kd_conv_batch_new.restype = P
    shim.kd_conv_batch_new.argtypes = [ctypes.c_int, ctypes.c_int, I64, I64, I64, I64, I64,
                                       I64, I64, ctypes.c_int64, ctypes.c_int]
    shim.kd_pool_batch_new.restype = P
    shim.kd_pool_batch_new.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int, I64, I64,
                                       I64, I64, I64, I64, ctypes.c_int]
    shim.kd_batch_free.argtypes = [P]
    shim.kd_batch_free.restype = None
    shim.kd_matmul_rows_free.argtypes = [P]
    shim.kd_matmul_rows_free.restype = None
    shim.kd_bmm_new.restype = P
    shim.kd_bmm_new.argtypes = []
    shim.kd_bmm_free.argtypes = [P]
    shim.kd_bmm_free.restype = None
    shim.kd_elementwise.restype = P
    shim.kd_elementwise.argtypes = [ctypes.c_int, ctypes.c_int64]
    shim.kd_bnorm.restype = P
    shim.kd_bnorm.argtypes = [ctypes.c_int, ctypes.c_int, I64, ctypes.c_float]
    i64, f32 = ctypes.c_int64, ctypes.c_float
    shim.kd_bn_rows_stats.argtypes = [P, i64, i64, i64, P, P, P]
    shim.kd_bn_rows_apply.argtypes = [P, i64, i64, i64, P, P, P, P, f32, P]
    shim.kd_bn_rows_backward.argtypes = [P, P, i64, i64, i64, P, f32, P, P, P, P]
    shim.kd_leaky_forward.argtypes = [P, i64, f32, P]
    shim.kd_leaky_backward.argtypes = [P, P, i64, f32, P]
    for name in ("kd_bn_rows_stats", "kd_bn_rows_apply", "kd_bn_rows_backward",
                 "kd_leaky_forward", "kd_leaky_backward"):
        getattr(shim, name).restype = None
    shim.kd_last_impl.restype = ctypes.c_char_p
    shim.kd_run.restype = ctypes.c_int
    shim.kd_run.argtypes = [P, P, P]
    shim.kd_conv_backward.restype = ctypes.c_int
    shim.kd_conv_backward.argtypes = [P, P, P, P]
    shim.kd_run_held.restype = ctypes.c_int
    shim.kd_run_held.argtypes = [P, P, P, ctypes.c_int]
    shim.kd_arg_layout.restype = ctypes.c_int
    shim.kd_arg_layout.argtypes = [P, ctypes.c_int, I64, ctypes.c_int]
    shim.kd_arg_size.restype = ctypes.c_int64
    shim.kd_arg_size.argtypes = [P, ctypes.c_int]
    shim.kd_free.argtypes = [P]
    if shim.kd_init() != 0:
        return f"oneDNN did not start: {shim.kd_error().decode()}"
    shim.kd_set_threads.argtypes = [ctypes.c_int]
    shim.kd_set_threads.restype = ctypes.c_int
    _state["threads"] = shim.kd_set_threads(thread_policy())
    return shim


def thread_policy():
    """OpenMP threads for oneDNN: KILN_DNNL_THREADS, else every core unless others are busy.

    OpenMP splits a primitive's work evenly and waits for every thread at the end, so one
    thread the OS does not schedule stalls the whole call: on 2 cores shared with other
    busy processes, a LeNet training step took 411 ms with 2 OpenMP threads against 57 ms
    with 1 (kiln's own pool, by contrast, lets idle threads' blocks go to the others).
    Busy means runnable now at normal priority (busy.py); without /proc, the load average
    less one unit taken as this process's own recent work. Decided once per process
    (primitives keep the thread count they were made with)."""
    from ..c.runtime import thread_count
    value = os.environ.get("KILN_DNNL_THREADS")
    if value:
        try:
            return max(1, int(value))
        except ValueError:
            pass
    from .busy import busy_cpus
    cores = thread_count()
    others = busy_cpus()
    if others is None:
        try:
            others = max(0.0, os.getloadavg()[0] - 1.0)
        except OSError:
            others = 0.0
    return max(1, min(cores, int(round(cores - others))))


def threads():
    """The OpenMP threads oneDNN runs on (None when the layer is off)."""
    return _state.get("threads") if shim() is not None else None


def shim():
    """The loaded shim library, or None when the layer is off or unavailable."""
    if _forced_off:
        return None
    if os.environ.get("KILN_DNNL", "1") == "0":
        fallbacks.record("oneDNN", _INSTEAD, "oneDNN is not used: turned off (KILN_DNNL=0)")
        return None
    got = _state.get("shim")
    if got is None:
        with _lock:
            got = _state.get("shim")
            if got is None:
                got = _state["shim"] = _load()
        if isinstance(got, str):
            _note_missing(got)
    return None if isinstance(got, str) else got


def _supported_here():
    return sys.platform.startswith("linux") and os.uname().machine in ("x86_64", "AMD64")


_INSTEAD = "convolutions and pooling run on kiln's own kernels (eagerly about 10x slower)"
_NEEDS_COMPILER = "its shim needs a C compiler"


def _note_missing(reason):
    """Eagerly an order of magnitude slower (backend/fallbacks.py): a oneDNN that should be
    here and is not warns, with how to fix it (a missing compiler, with the compiler's
    warning); on a platform oneDNN is not used on there is nothing to fix."""
    fallbacks.record("oneDNN", _INSTEAD, f"oneDNN is not used: {reason}")
    if not _supported_here():
        return
    if reason.startswith(_NEEDS_COMPILER):
        from ..c import build
        build.warn_no_compiler(reason[len(_NEEDS_COMPILER) + 2:])
        return
    fallbacks.warn_once("oneDNN", (
        f"oneDNN is not used: {reason}. {_INSTEAD[0].upper()}{_INSTEAD[1:]}. To fix: pip "
        f"install {WHEEL}==2023.2.0 {HEADERS_WHEEL}==2023.2.0 (kiln's default dependencies "
        "on x86-64 Linux); KILN_DNNL=0 turns oneDNN off without this warning."))


def available():
    return shim() is not None


def unavailable_reason():
    if _forced_off or os.environ.get("KILN_DNNL", "1") == "0":
        return "turned off (KILN_DNNL=0)"
    shim()
    got = _state.get("shim")
    return got if isinstance(got, str) else None


@contextlib.contextmanager
def disabled():
    """Run a block with kiln's own kernels only (tests compare the two paths)."""
    _forced_off.append(True)
    try:
        yield
    finally:
        _forced_off.pop()
