"""MXNet's binary NDArray list format (`nd.save`, `export`'s `-0000.params`), both ways.

Written from the format's layout (all little-endian), never by unpickling:

    u64 0x112 (list magic)   u64 0 (reserved)
    u64 count, then `count` arrays:
        u32 magic: 0xF993FAC9 (V2) or 0xF993FACA (V3, MXNet 2's numpy shapes);
                   0xF993FAC8 (V1) has no storage-type field
        i32 storage type (V2/V3): 0 dense; 1 row_sparse and 2 csr are refused
        shape: u32 ndim, then ndim x i64 (V3 marks "no shape" with ndim -1 as i32)
        (an empty shape ends the record here in V1/V2)
        i32 device type, i32 device id
        i32 dtype flag (0 f32, 1 f64, 2 f16, 3 u8, 4 i32, 5 i8, 6 i64, 7 bool)
        the values: prod(shape) x itemsize bytes
    u64 name count (0, or `count`), then each name: u64 length, bytes (UTF-8)

Every read is bounds-checked against the bytes that are there, so a hostile or truncated
file gives a KilnError saying what was expected where, and sizes are checked before any
allocation.
"""
import struct

import numpy as _np

from .._core.base import KilnError
from ..npx.io import (MAX_PARAMS_FILE_BYTES, MAX_RANK, MAX_TENSOR_ELEMENTS, read_capped,
                      read_npz, write_bytes_atomic)

LIST_MAGIC = 0x112
V1, V2, V3 = 0xF993FAC8, 0xF993FAC9, 0xF993FACA
DTYPES = {0: "float32", 1: "float64", 2: "float16", 3: "uint8", 4: "int32", 5: "int8",
          6: "int64", 7: "bool"}
FLAGS = {_np.dtype(v): k for k, v in DTYPES.items()}
MAX_ARRAYS = 1 << 20
MAX_NAME = 1 << 16


class _Reader:
    def __init__(self, data, source):
        self.data, self.pos, self.source = data, 0, source

    def take(self, n, what):
        if n < 0 or self.pos + n > len(self.data):
            raise KilnError(f"{self.source}: truncated MXNet params file: needs {n} bytes "
                            f"for {what} at offset {self.pos}, only "
                            f"{len(self.data) - self.pos} left")
        out = self.data[self.pos:self.pos + n]
        self.pos += n
        return out

    def unpack(self, fmt, what):
        return struct.unpack("<" + fmt, self.take(struct.calcsize("<" + fmt), what))[0]


def is_mxnet_params(head):
    return len(head) >= 8 and struct.unpack("<Q", head[:8])[0] == LIST_MAGIC


def _array(r, k):
    where = f"array {k}"
    magic = r.unpack("I", f"{where}'s magic")
    if magic not in (V1, V2, V3):
        raise KilnError(f"{r.source}: {where} has magic {magic:#x}; expected an MXNet "
                        f"NDArray record ({V2:#x}, {V3:#x} or {V1:#x}; files from MXNet "
                        "before 0.9 are not supported)")
    if magic != V1:
        stype = r.unpack("i", f"{where}'s storage type")
        if stype != 0:
            kind = {1: "row_sparse", 2: "csr"}.get(stype, f"unknown ({stype})")
            raise KilnError(f"{r.source}: {where} has {kind} storage; kiln reads dense "
                            "arrays only")
    ndim = r.unpack("i", f"{where}'s rank")
    if ndim == -1 and magic == V3:
        raise KilnError(f"{r.source}: {where} has no shape (an uninitialized array)")
    if not 0 <= ndim <= MAX_RANK:
        raise KilnError(f"{r.source}: {where} declares rank {ndim} (expected 0..{MAX_RANK})")
    shape = tuple(r.unpack("q", f"{where}'s shape") for _ in range(ndim))
    size = 1
    for d in shape:
        if d < 0:
            raise KilnError(f"{r.source}: {where} has a negative dimension in {shape}")
        size *= d
        if size > MAX_TENSOR_ELEMENTS:
            raise KilnError(f"{r.source}: {where} declares shape {shape}: {size} elements or "
                            f"more, larger than the cap of {MAX_TENSOR_ELEMENTS} elements per "
                            "array")
    if ndim == 0 and magic != V3:
        return _np.zeros((0,), "float32")   # MXNet 1.x writes an empty array as rank 0
    r.unpack("i", f"{where}'s device type")
    r.unpack("i", f"{where}'s device id")
    flag = r.unpack("i", f"{where}'s dtype flag")
    if flag not in DTYPES:
        raise KilnError(f"{r.source}: {where} has dtype flag {flag}; kiln reads "
                        f"{sorted(DTYPES)} ({', '.join(DTYPES.values())})")
    dtype = _np.dtype(DTYPES[flag]).newbyteorder("<")
    raw = r.take(size * dtype.itemsize, f"{where}'s {size} values of {dtype.name}")
    if dtype.kind == "b":   # a byte other than 0/1 is not a bool compiled code can cast
        return (_np.frombuffer(raw, _np.uint8) != 0).reshape(shape)
    return _np.frombuffer(raw, dtype).reshape(shape).astype(dtype.newbyteorder("="))


def parse(data, source="<params>"):
    """(list of arrays, list of names or None) from the bytes of an MXNet params file."""
    r = _Reader(memoryview(data), source)      # slices of a view copy nothing
    magic = r.unpack("Q", "the file magic")
    if magic != LIST_MAGIC:
        raise KilnError(f"{source}: not an MXNet params file (magic {magic:#x}, expected "
                        f"{LIST_MAGIC:#x})")
    r.unpack("Q", "the reserved field")
    count = r.unpack("Q", "the array count")
    if count > MAX_ARRAYS or count * 4 > len(data):
        raise KilnError(f"{source}: declares {count} arrays, more than the file can hold")
    arrays = [_array(r, k) for k in range(count)]
    n_names = r.unpack("Q", "the name count")
    if n_names not in (0, count):
        raise KilnError(f"{source}: has {count} arrays but {n_names} names")
    names = []
    for k in range(n_names):
        length = r.unpack("Q", f"name {k}'s length")
        if length > MAX_NAME:
            raise KilnError(f"{source}: name {k} declares {length} bytes")
        try:
            names.append(bytes(r.take(length, f"name {k}")).decode("utf-8"))
        except UnicodeDecodeError:
            raise KilnError(f"{source}: name {k} is not UTF-8") from None
    if r.pos != len(r.data):
        raise KilnError(f"{source}: {len(r.data) - r.pos} unexpected bytes after the names")
    if n_names and len(set(names)) != len(names):
        raise KilnError(f"{source}: a name appears twice")
    return arrays, (names if n_names else None)


def read(path):
    return parse(read_capped(path, "params file", MAX_PARAMS_FILE_BYTES), str(path))


def read_dict(path):
    """name -> array of a named file (MXNet's export or nd.save of a dict)."""
    arrays, names = read(path)
    if names is None:
        raise KilnError(f"{path}: holds {len(arrays)} unnamed arrays (nd.save of a list), "
                        "not named parameters")
    return dict(zip(names, arrays))


def read_any(path, what="load"):
    """name -> NumPy array of a params file in MXNet's binary format or NumPy's npz."""
    try:
        with open(path, "rb") as f:
            head = f.read(8)
    except OSError as exc:
        raise KilnError(f"{what}: cannot read {path}: {exc}") from None
    if is_mxnet_params(head):
        return read_dict(path)
    return read_npz(path, what)


def encode(arrays, names=None):
    out = [struct.pack("<QQQ", LIST_MAGIC, 0, len(arrays))]
    for a in arrays:
        a = _np.ascontiguousarray(a)
        if a.dtype not in FLAGS:
            raise KilnError(f"MXNet params: dtype {a.dtype} has no MXNet flag "
                            f"({', '.join(DTYPES.values())})")
        if a.ndim == 0:
            a = a.reshape(1)   # MXNet 1.x has no rank-0 arrays
        out.append(struct.pack("<Iii", V2, 0, a.ndim))
        out.append(struct.pack(f"<{a.ndim}q", *a.shape))
        out.append(struct.pack("<iii", 1, 0, FLAGS[a.dtype]))
        out.append(a.astype(a.dtype.newbyteorder("<")).tobytes())
    names = list(names or [])
    out.append(struct.pack("<Q", len(names)))
    for n in names:
        b = n.encode("utf-8")
        out.append(struct.pack("<Q", len(b)) + b)
    return b"".join(out)


def write(path, arrays, names=None):
    write_bytes_atomic(path, encode(arrays, names))
