"""Compiling generated C with the system compiler, with an on-disk cache.

The cache key is a hash of the source, the flags and the compiler's version, so a changed
compiler or flag never reuses a stale object. Writes are atomic (compile to a temporary
name, then rename), so two processes building the same graph at once are safe. A cached
object that fails to load is deleted and rebuilt. An in-memory dict sits in front of the
disk, so a second identical graph in one process costs a dictionary lookup.
"""
import ctypes
import hashlib
import os
import re
import stat
import subprocess
import tempfile
import threading

from ..._core.base import KilnError
from .. import fallbacks

# No reassociation by default: with -fassociative-math GCC rewrites (g + h) - h into g,
# which turns eager's NaN (h = inf) into a finite number. The dot-product loops that need
# reassociation to vectorize say so themselves (`#pragma omp simd reduction`, honoured
# under -fopenmp-simd without linking OpenMP). KILN_FAST_MATH=1 opts back in (README).
FLAGS = ("-march=native", "-fPIC", "-shared", "-std=c99", "-fno-math-errno",
         "-fno-trapping-math", "-fopenmp-simd",
         "-fwrapv",   # integer overflow wraps, as in NumPy, instead of being undefined
         "-Wno-unused-variable", "-Wno-unused-function", "-Wno-unknown-pragmas")
FAST_MATH_FLAGS = ("-fassociative-math", "-fno-signed-zeros")


# KILN_ASAN=1 builds every library with AddressSanitizer: an out-of-bounds read or write
# in generated code then stops the process with a report. The process must have the ASan
# runtime loaded first (LD_PRELOAD; see tests/backend/test_asan.py), as Python is not built with it.
ASAN_FLAGS = ("-fsanitize=address", "-fno-omit-frame-pointer")


def _on(name):
    return os.environ.get(name, "") not in ("", "0")


def _opt_in_flags():
    return (FAST_MATH_FLAGS if _on("KILN_FAST_MATH") else ()) + (
        ASAN_FLAGS if _on("KILN_ASAN") else ())

_loaded = {}
_building = {}     # key -> lock held while that key is compiled
_lock = threading.Lock()
_compiler_info = {}


class CompilerUnavailable(KilnError):
    """The C backend cannot build libraries here: no working compiler, or no directory
    to keep them in."""


def _compiler_command():
    """(the compiler command, where that choice came from)."""
    cc = os.environ.get("CC")
    return (cc, "from CC") if cc else ("cc", "the default; CC chooses another")


def compiler():
    """The compiler command and its version string, or raise CompilerUnavailable."""
    cc, origin = _compiler_command()
    hit = _compiler_info.get(cc)
    if hit is not None:
        if isinstance(hit, Exception):
            raise hit
        return hit
    try:
        res = subprocess.run([cc, "--version"], capture_output=True, text=True, timeout=30)
        version = res.stdout.strip().splitlines()[0] if res.returncode == 0 and res.stdout else ""
        if res.returncode != 0 or not version:
            raise CompilerUnavailable(f"C compiler {cc!r} ({origin}) did not report a "
                                      f"version (`{cc} --version` exit code {res.returncode})")
        probe = "" if _probe_passed_before(cc, version) else _compile_probe(cc)
        if not probe:
            _remember_probe(cc, version)
        if probe:
            raise CompilerUnavailable(f"C compiler {cc!r} ({origin}) cannot build a shared "
                                      f"library: {probe}")
    except (OSError, subprocess.SubprocessError) as exc:
        err = CompilerUnavailable(f"no working C compiler ({cc!r}, {origin}): {exc}")
        _compiler_info[cc] = err
        raise err from None
    except CompilerUnavailable as err:
        _compiler_info[cc] = err
        raise
    _compiler_info[cc] = (cc, version)
    return cc, version


def _probe_marker(cc, version):
    digest = hashlib.sha256("\0".join((cc, version, " ".join(FLAGS))).encode()).hexdigest()
    return os.path.join(cache_dir(), f"probe-{digest[:24]}.ok")


def _probe_passed_before(cc, version):
    # the probe compile costs ~50 ms of every process's first call; its success is cached
    try:
        return os.path.exists(_probe_marker(cc, version))
    except OSError:
        return False


def _remember_probe(cc, version):
    _remember_file(_probe_marker(cc, version))


def _compile_probe(cc):
    with tempfile.TemporaryDirectory(prefix="kiln-probe-") as tmp:
        src = os.path.join(tmp, "probe.c")
        with open(src, "w") as f:
            f.write("int kiln_probe(void) { return 42; }\n")
        out = os.path.join(tmp, "probe.so")
        res = subprocess.run([cc, *FLAGS, "-o", out, src], capture_output=True, text=True,
                             timeout=120)
        if res.returncode != 0 or not os.path.exists(out):
            return (res.stderr or res.stdout or "unknown error").strip()[:500]
    return ""


def _remember_file(path):
    try:
        with open(path, "w"):
            pass
    except OSError:
        pass


def available():
    try:
        compiler()
        return True
    except CompilerUnavailable:
        return False


def record_unavailable(reason):
    """Note that graphs run on the NumPy executor because the C backend is unavailable,
    and warn once (a user who chose that executor does not come here)."""
    fallbacks.record("C backend", "graphs run on the NumPy executor",
                     f"the C backend is unavailable: {reason}")
    warn_no_compiler(reason)


def warn_no_compiler(reason):
    """One warning for everything a missing compiler slows down (the C backend, oneDNN's
    shim), whichever meets it first."""
    fallbacks.warn_once("C compiler", (
        f"the C backend is unavailable: {reason}. Without a C compiler kiln runs "
        "hybridized graphs on the NumPy executor instead of generated C, and "
        "convolutions on its own kernels instead of oneDNN, "
        "each up to 10x slower. To fix: install a C compiler (e.g. `apt install gcc`) or "
        "set CC=/path/to/cc. KILN_BACKEND=numpy (and KILN_DNNL=0) choose those paths "
        "without this warning."))


def _vector_flags():
    # GCC vectorizes with 256-bit registers on AVX-512 machines unless told otherwise; the
    # batch-1 matmul loop, bound by reading the weights, runs about 25% faster with 512
    if "avx512f" in _cpu_flags():
        return ("-mprefer-vector-width=512",)
    return ()


_flags_cached = []


def _cpu_flags():
    if not _flags_cached:
        found = set()
        try:
            with open("/proc/cpuinfo") as f:
                for line in f:
                    if line.startswith("flags"):
                        found = set(line.split(":", 1)[1].split())
                        break
        except OSError:
            pass
        _flags_cached.append(found)
    return _flags_cached[0]


def _cpu_signature():
    """What -march=native depends on: a cache shared across machines must not mix them."""
    import platform
    flags = ""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith(("flags", "Features", "model name")):
                    flags += line
                    if line.startswith(("flags", "Features")):
                        break
    except OSError:
        pass
    return platform.machine() + hashlib.sha256(flags.encode()).hexdigest()[:16]


_cache_dirs = {}       # the configured directory -> the one used
_cache_lock = threading.Lock()


def cache_dir():
    """Where compiled libraries are kept: KILN_CACHE_DIR, else ~/.cache/kiln.

    One that cannot be used (a regular file, a path under one, a read-only place such as
    /proc) is replaced by a private directory under the system's temporary directory, with
    a warning once. Keeping the C backend is better for users than falling back to the
    NumPy executor: compiled programs stay up to 10x faster, and only the reuse of
    compiled libraries across runs is at stake (and not even that while the temporary
    directory lasts)."""
    configured = os.environ.get("KILN_CACHE_DIR") or os.path.join(
        os.path.expanduser("~"), ".cache", "kiln")
    found = _cache_dirs.get(configured)
    if found is not None:
        return found
    with _cache_lock:
        found = _cache_dirs.get(configured)
        if found is None:
            problem = _unusable(configured)
            if problem is None:
                found = configured
            else:
                found = _private_temp_dir()
                where = (f"KILN_CACHE_DIR={configured}" if os.environ.get("KILN_CACHE_DIR")
                         else f"the default cache directory {configured}")
                fallbacks.record("compile cache", f"they are kept in {found}",
                                 f"{where} cannot hold compiled libraries ({problem})")
                fallbacks.warn_once("compile cache", (
                    f"{where} cannot hold compiled libraries ({problem}); they are kept "
                    f"in {found} instead. Set KILN_CACHE_DIR to a writable directory to "
                    "keep them across runs and silence this warning."))
            _cache_dirs[configured] = found
    return found


def _unusable(path):
    """Why `path` cannot be the cache directory, or None when it can."""
    try:
        os.makedirs(path, exist_ok=True)
    except OSError as exc:
        return exc.strerror or type(exc).__name__
    if not os.path.isdir(path):
        return "not a directory"
    if not os.access(path, os.W_OK | os.X_OK):
        return "not writable"
    return None


def _private_temp_dir():
    """A directory under the system's temporary directory that only this user can write:
    one per user (reused across runs) when it is safely ours, else a new one for this
    process. A shared /tmp lets anyone create names there, and a library someone else
    planted would be loaded and run."""
    uid = os.getuid()
    path = os.path.join(tempfile.gettempdir(), f"kiln-cache-{uid}")
    try:
        os.makedirs(path, mode=0o700, exist_ok=True)
        st = os.lstat(path)
        if stat.S_ISDIR(st.st_mode) and st.st_uid == uid and not st.st_mode & 0o077:
            return path
    except OSError:
        pass
    try:
        return tempfile.mkdtemp(prefix="kiln-cache-")
    except OSError as exc:
        raise CompilerUnavailable(f"no writable directory for compiled libraries "
                                  f"(KILN_CACHE_DIR, then {tempfile.gettempdir()}: "
                                  f"{exc.strerror})") from None


# Small programs (inference graphs) get -O3 -funroll-loops: the gemv kernel of a batch-1
# MLP runs 25% faster with it. Big ones (whole training steps) get -O2 with -O3's
# vectorizer, nearly as fast, compiling in a third of the time (a small CNN's training
# step took 4 s at -O3 -funroll-loops, 1.2 s like this).
BIG_SOURCE = 40_000
SMALL_OPT = ("-O3", "-funroll-loops")
BIG_OPT = ("-O2", "-ftree-vectorize", "-fvect-cost-model=dynamic")


def load(source, extra_flags=(), opt=None):
    """Compile `source` (or find it in the cache) and return the loaded ctypes library.
    opt: optimization flags, by default chosen by the source's size."""
    cc, version = compiler()
    if opt is None:
        opt = SMALL_OPT if len(source) <= BIG_SOURCE else BIG_OPT
    flags = opt + FLAGS + _opt_in_flags() + _vector_flags() + tuple(extra_flags)
    key = hashlib.sha256("\0".join((_without_comments(source), " ".join(flags), cc, version,
                                     _cpu())).encode()).hexdigest()
    with _lock:
        lib = _loaded.get(key)
        if lib is not None:
            return lib
        building = _building.setdefault(key, threading.Lock())
    # one build per key at a time; different sources compile side by side
    with building:
        with _lock:
            lib = _loaded.get(key)
        if lib is not None:
            return lib
        path = os.path.join(cache_dir(), f"kiln_{key[:32]}.so")
        lib = None
        if os.path.exists(path):
            lib = _try_load(path)
            if lib is None:
                _remove(path)        # corrupt or truncated entry: rebuild it
        if lib is None:
            _compile(cc, flags, source, path)
            lib = _try_load(path)
            if lib is None:
                raise KilnError(f"C backend: compiled library {path} could not be loaded")
        with _lock:
            _loaded[key] = lib
        return lib


# The generated comments name graph nodes, and node names carry a process-wide counter:
# the same network built twice differs only there. Keying on the code alone lets the
# second instance reuse the first one's library instead of compiling again. (Generated
# code has no string literal holding a comment opener.)
_COMMENT = re.compile(r"/\*.*?\*/", re.S)


def _without_comments(source):
    return _COMMENT.sub("", source)


def _try_load(path):
    # dlopen of a truncated object can kill the process (SIGBUS), so the file is checked
    # against the digest written beside it before it is ever mapped
    try:
        with open(path, "rb") as f:
            digest = hashlib.sha256(f.read()).hexdigest()
        with open(path + ".sha256") as f:
            if f.read().strip() != digest:
                return None
    except OSError:
        return None
    try:
        lib = ctypes.CDLL(path)
        lib.kiln_abi_version.restype = ctypes.c_int
        if lib.kiln_abi_version() != ABI_VERSION:
            return None
        return lib
    except (OSError, AttributeError):
        return None


ABI_VERSION = 1


def _write_atomic(path, text):
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), prefix=".kiln-digest-")
    with os.fdopen(fd, "w") as f:
        f.write(text)
    os.replace(tmp, path)


_cpu_cached = []


def _cpu():
    if not _cpu_cached:
        _cpu_cached.append(_cpu_signature())
    return _cpu_cached[0]


def _remove(path):
    try:
        os.unlink(path)
    except OSError:
        pass


def _compile(cc, flags, source, path):
    directory = os.path.dirname(path)
    fd, tmp_so = tempfile.mkstemp(dir=directory, prefix=".kiln-build-", suffix=".so")
    os.close(fd)
    try:
        # the source goes in on stdin: a temporary file name would be recorded in the object,
        # so two processes building the same entry at once would write different bytes and
        # one could pair its .so with the other's digest (then the load fails)
        res = subprocess.run([cc, *flags, "-x", "c", "-o", tmp_so, "-", "-lm"],
                             input=source,
                             capture_output=True, text=True, timeout=600)
        if res.returncode != 0:
            raise KilnError("C backend: the compiler rejected generated code (a kiln bug); "
                            f"{cc} said:\n{(res.stderr or res.stdout)[:4000]}")
        with open(tmp_so, "rb") as f:
            digest = hashlib.sha256(f.read()).hexdigest()
        _write_atomic(path + ".sha256", digest)
        os.replace(tmp_so, path)     # atomic: readers see the old entry or the whole new one
        if os.environ.get("KILN_KEEP_SOURCE"):
            with open(path[:-3] + ".c", "w") as f:
                f.write(source)
    finally:
        if os.path.exists(tmp_so):
            _remove(tmp_so)
