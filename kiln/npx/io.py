"""npx.save / npx.load: arrays, lists and dicts of arrays in NumPy's .npz format.

Loading never unpickles: object arrays are refused, so a hostile file cannot run code.
"""
import io
import os
import tempfile
import zipfile

import numpy as _np

from .._core.base import KilnError, bfloat16_dtype
from .._core.bfloat16 import is_bfloat16
from .._core.ndarray import ndarray

_KIND_KEY = "__kiln_kind__"
# NumPy's .npy header has no bfloat16 (it writes '<V2'): such entries are stored as their
# uint16 bits, and this entry names them
_BFLOAT16_KEY = "__kiln_bfloat16__"


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
    bf16 = [k for k, v in entries.items() if is_bfloat16(_np.asarray(v).dtype)]
    if bf16:
        entries = dict(entries)
        for k in bf16:
            entries[k] = _np.asarray(entries[k]).view(_np.uint16)
        entries[_BFLOAT16_KEY] = _np.array(bf16)
    buf = io.BytesIO()
    _np.savez(buf, **entries)
    write_bytes_atomic(path, buf.getvalue())


def write_bytes_atomic(path, data):
    """Write `data` to `path` through a temporary file beside it, so a reader never sees
    half a file and a failed write leaves the old one."""
    path = os.fspath(path)
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(os.path.abspath(path)), prefix=".kiln-",
                               suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def read_npz(path, what="npx.load"):
    """Read every entry of an .npz file as NumPy arrays, refusing pickled objects."""
    try:
        with _np.load(os.fspath(path), allow_pickle=False) as data:
            entries = {k: data[k] for k in data.files}
    except FileNotFoundError:
        raise KilnError(f"{what}: no such file: {path}") from None
    except (ValueError, OSError, zipfile.BadZipFile, EOFError, KeyError) as exc:
        raise KilnError(f"{what}: {path} is not a valid kiln/NumPy array file "
                        f"(corrupt, truncated or holding pickled objects): {exc}") from None
    return decode_bfloat16(entries, f"{what}: {path}")


def decode_bfloat16(entries, source):
    """Entries as written by write_npz_atomic: the uint16 bits it names become bfloat16."""
    names = entries.pop(_BFLOAT16_KEY, None)
    if names is None:
        return entries
    if names.dtype.kind != "U" or names.ndim != 1:
        raise KilnError(f"{source}: malformed {_BFLOAT16_KEY} entry")
    for k in names.tolist():
        if k not in entries or entries[k].dtype != _np.uint16:
            raise KilnError(f"{source}: bfloat16 entry {k!r} is missing or not uint16 bits")
        entries[k] = entries[k].view(bfloat16_dtype())
    return entries


def load(file):
    entries = read_npz(file)
    kind = entries.pop(_KIND_KEY, None)
    kind = str(kind) if kind is not None else "dict"
    for k, v in entries.items():
        if v.dtype.kind not in "fiub" and not is_bfloat16(v.dtype):
            raise KilnError(f"npx.load: entry {k!r} has unsupported dtype {v.dtype}")
    if kind == "list":
        try:
            order = sorted(entries, key=lambda k: int(k.split("_")[1]))
        except (IndexError, ValueError):
            raise KilnError(f"npx.load: {file} has malformed list entries") from None
        return [ndarray._wrap(entries[k]) for k in order]
    return {k: ndarray._wrap(v) for k, v in entries.items()}
