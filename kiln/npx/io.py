"""npx.save / npx.load: arrays, lists and dicts of arrays in NumPy's .npz format; and the
bounded reading every loader of files users give kiln goes through.

Loading never unpickles: object arrays are refused, so a hostile file cannot run code.
Sizes are checked before anything is allocated: a whole file against its cap before it is
read (read_capped), each .npz member's declared shape against the caps and against the
bytes the member holds before NumPy allocates it (read_npz). Every failure is a KilnError
naming the file and what it declared against which cap: never a MemoryError.
"""
import hashlib
import io
import os
import re
import socket
import stat
import tempfile
import zipfile

import numpy as _np

from .._core.base import KilnError
from .._core.ndarray import ndarray

_KIND_KEY = "__kiln_kind__"

# caps, so a hostile or corrupt file cannot make a reader allocate without bound
MAX_RANK = 32
MAX_TENSOR_ELEMENTS = 1 << 28        # 1 GiB of float32 in one array
MAX_FILE_BYTES = 256 << 20           # a symbol (JSON) file
# MXNet's published VGG-16/19 parameter files are 528 and 548 MiB: a params file, or all
# the arrays an .npz file declares, may hold up to this
MAX_PARAMS_FILE_BYTES = 4 << 30
_CHUNK = 1 << 20


def _to_numpy(value, what):
    if isinstance(value, ndarray):
        return value._concrete(what)
    return _np.asarray(value)


def save(file, arr):
    """Save an array, a list of arrays or a dict of str -> array to `file` (exact name)."""
    if isinstance(arr, dict):
        kind = "dict"
        entries = {}
        for k, v in arr.items():
            if not isinstance(k, str) or k == _KIND_KEY:
                raise KilnError(f"npx.save: dict keys must be strings (not {_KIND_KEY!r}), "
                                f"got {k!r}")
            entries[k] = _to_numpy(v, "npx.save")
    elif isinstance(arr, (list, tuple)):
        kind = "list"
        entries = {f"arr_{i}": _to_numpy(v, "npx.save") for i, v in enumerate(arr)}
    elif isinstance(arr, ndarray):
        kind = "list"
        entries = {"arr_0": _to_numpy(arr, "npx.save")}
    else:
        raise KilnError(f"npx.save: expected an ndarray, a list or a dict of ndarrays, got "
                        f"{type(arr).__name__}")
    entries[_KIND_KEY] = _np.array(kind)
    write_npz_atomic(file, entries)


def write_npz_atomic(path, entries):
    buf = io.BytesIO()
    _np.savez(buf, **entries)
    write_bytes_atomic(path, buf.getvalue())


# A writer's temporary files are named by its process and host, so the next writer into
# the directory can tell the files of one that died mid-write (SIGKILL, the OOM killer:
# no `finally` ran) from those of one still writing, and remove them.
_HOST = hashlib.sha256(socket.gethostname().encode()).hexdigest()[:8]
_TEMP = re.compile(r"\.kiln-(\d+)-([0-9a-f]{8})-.*\.tmp\Z")


def temp_prefix(pid):
    """The name prefix of temporary files written by process `pid` of this host."""
    return f".kiln-{pid}-{_HOST}-"


def _alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:         # another user's process (EPERM): alive
        pass
    return True


def _remove_stale_temps(directory):
    """Remove the temporary files that writers on this host which have since died left in
    `directory`."""
    try:
        names = os.listdir(directory)
    except OSError:
        return
    for name in names:
        found = _TEMP.match(name)
        if found is None or found.group(2) != _HOST:
            continue
        pid = int(found.group(1))
        if pid != os.getpid() and not _alive(pid):
            try:
                os.unlink(os.path.join(directory, name))
            except OSError:
                pass


def write_bytes_atomic(path, data):
    """Write `data` to `path` through a temporary file beside it, so a reader never sees
    half a file and a failed write leaves the old one. Temporary files that killed writers
    left in the directory are removed first."""
    path = os.fspath(path)
    directory = os.path.dirname(os.path.abspath(path))
    _remove_stale_temps(directory)
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=temp_prefix(os.getpid()),
                               suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def read_capped(path, kind="symbol file", limit=MAX_FILE_BYTES):
    """The bytes of `path`, refusing a file larger than `limit` before reading it. A
    regular file is read in one request of its own size; anything else (a pipe, a file
    that grows meanwhile) in bounded chunks, up to the limit."""
    try:
        with open(path, "rb") as f:
            info = os.fstat(f.fileno())
            size = info.st_size if stat.S_ISREG(info.st_mode) else 0
            if size > limit:
                raise KilnError(f"{kind} {path} is larger than the cap: {size} bytes, the "
                                f"cap is {limit} bytes")
            chunks = [f.read(size)] if size else []
            total = sum(len(c) for c in chunks)
            while True:
                chunk = f.read(min(_CHUNK, limit + 1 - total))
                if not chunk:
                    return chunks[0] if len(chunks) == 1 else b"".join(chunks)
                chunks.append(chunk)
                total += len(chunk)
                if total > limit:
                    raise KilnError(f"{kind} {path} is larger than the cap of {limit} bytes")
    except OSError as exc:
        raise KilnError(f"cannot read {kind} {path}: {exc}") from None
    except MemoryError:
        raise KilnError(f"not enough memory to read {kind} {path}") from None


def _declared(f, size, where):
    """(shape, dtype, bytes of data) the .npy header at the start of the open file `f`
    (`size` bytes long) declares, refused unless NumPy may allocate it: a known format, no
    Python objects, sizes within the caps and within the bytes the file holds."""
    fmt = _np.lib.format
    version = fmt.read_magic(f)
    if version not in ((1, 0), (2, 0)):
        raise KilnError(f"{where} has .npy format version {version}; kiln reads 1.0 and 2.0")
    read_header = fmt.read_array_header_1_0 if version == (1, 0) else \
        fmt.read_array_header_2_0
    shape, _, dtype = read_header(f)
    held = size - f.tell()
    if dtype.hasobject:
        raise KilnError(f"{where} holds Python objects (pickled data); kiln never unpickles")
    if len(shape) > MAX_RANK:
        raise KilnError(f"{where} declares {len(shape)} dimensions; the cap is {MAX_RANK}")
    if any(d < 0 for d in shape):
        raise KilnError(f"{where} declares shape {shape}, with a negative dimension")
    count = 1
    for d in shape:
        count *= d          # Python integers: no overflow
    if count > MAX_TENSOR_ELEMENTS:
        raise KilnError(f"{where} declares shape {shape}: {count} elements, more than the "
                        f"cap of {MAX_TENSOR_ELEMENTS} elements per array")
    nbytes = count * dtype.itemsize
    if nbytes > held:
        raise KilnError(f"{where} declares shape {shape} of {dtype.name} ({nbytes} bytes) "
                        f"but holds only {max(held, 0)} bytes (truncated or corrupt)")
    return shape, dtype, nbytes


def _load_error(what, path, exc):
    """The KilnError for an exception raised while reading an array file."""
    if isinstance(exc, KilnError):
        return exc
    if isinstance(exc, FileNotFoundError):
        return KilnError(f"{what}: no such file: {path}")
    if isinstance(exc, MemoryError):
        return KilnError(f"{what}: not enough memory to load {path}")
    # zip/npy parsing of a corrupt file fails in many ways
    return KilnError(f"{what}: {path} is not a valid kiln/NumPy array file (corrupt, "
                     f"truncated or holding pickled objects): {type(exc).__name__}: {exc}")


def read_npy(path, what="load"):
    """The array of an .npy file, its header checked first as read_npz checks members'."""
    path = os.fspath(path)
    try:
        with open(path, "rb") as f:
            _declared(f, os.fstat(f.fileno()).st_size, f"{what}: {path}")
            f.seek(0)
            return _np.load(f, allow_pickle=False)
    except Exception as exc:
        raise _load_error(what, path, exc) from None


def read_npz(source, what="npx.load"):
    """Every entry of an .npz file (a path, or the file's bytes) as NumPy arrays. Each
    member's header is checked first (no Python objects; shapes within the caps and the
    bytes that are there; all the arrays together within MAX_PARAMS_FILE_BYTES), so NumPy
    allocates only what the file holds."""
    if isinstance(source, (bytes, bytearray, memoryview)):
        path, opened = "<bytes>", lambda: io.BytesIO(source)
    else:
        path = os.fspath(source)
        opened = lambda: path  # noqa: E731
    try:
        with zipfile.ZipFile(opened()) as zf:
            total = 0
            for info in zf.infolist():
                where = f"{what}: {path}: member {info.filename[:80]!r}"
                if not info.filename.endswith(".npy"):
                    raise KilnError(f"{where} is not an .npy array")
                with zf.open(info) as f:
                    total += _declared(f, info.file_size, where)[2]
                if total > MAX_PARAMS_FILE_BYTES:
                    raise KilnError(f"{what}: {path} declares arrays of {total} bytes or "
                                    f"more in all; the cap is {MAX_PARAMS_FILE_BYTES} bytes")
        with _np.load(opened(), allow_pickle=False) as data:
            return {k: data[k] for k in data.files}
    except Exception as exc:
        raise _load_error(what, path, exc) from None


def load(file):
    """The arrays saved by `npx.save` in an .npz file: a list or a dict, as they were saved
    (pickled objects are refused)."""
    entries = read_npz(file)
    kind = entries.pop(_KIND_KEY, None)
    kind = str(kind) if kind is not None else "dict"
    for k, v in entries.items():
        if v.dtype.kind not in "fiub":
            raise KilnError(f"npx.load: entry {k!r} has unsupported dtype {v.dtype}")
    if kind == "list":
        try:
            order = sorted(entries, key=lambda k: int(k.split("_")[1]))
        except (IndexError, ValueError):
            raise KilnError(f"npx.load: {file} has malformed list entries") from None
        return [ndarray._wrap(entries[k]) for k in order]
    return {k: ndarray._wrap(v) for k, v in entries.items()}
