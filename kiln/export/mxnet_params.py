"""MXNet's binary NDArray list format (`nd.save`, `export`'s `-0000.params`), both ways.

Written from the format's layout (all little-endian), never by unpickling:

    u64 0x112 (list magic)   u64 0 (reserved)
    u64 count, then `count` arrays:
        u32 magic: 0xF993FAC9 (V2) or 0xF993FACA (V3, MXNet 2's numpy shapes);
                   0xF993FAC8 (V1) has no storage-type field
        i32 storage type (V2/V3): 0 dense, 1 row_sparse, 2 csr (read when asked: nd.load)
        a sparse array: its storage shape (the stored values' shape), as a shape is written
        shape: u32 ndim, then ndim x i64 (V3 marks "no shape" with ndim -1 as i32)
        (an empty shape ends the record here in V1/V2)
        i32 device type, i32 device id
        i32 dtype flag (0 f32, 1 f64, 2 f16, 3 u8, 4 i32, 5 i8, 6 i64, 7 bool)
        a sparse array: for each auxiliary array (csr: indptr, indices; row_sparse:
        indices) its dtype flag and shape
        the values: prod(shape) x itemsize bytes (sparse: the stored values), then a
        sparse array's auxiliary arrays
    Files of MXNet before 0.9 have no magic: the first u32 is the rank, dimensions are u32.
    u64 name count (0, or `count`), then each name: u64 length, bytes (UTF-8)

Every read is bounds-checked against the bytes that are there, so a hostile or truncated
file gives a KilnError saying what was expected where, and sizes are checked before any
allocation.
"""
import struct

import numpy as _np

from .._core.base import KilnError, bfloat16_dtype
from .._core.bfloat16 import is_bfloat16
from ..npx.io import (MAX_PARAMS_FILE_BYTES, MAX_RANK, MAX_TENSOR_ELEMENTS, read_capped,
                      read_npz, write_bytes_atomic)

LIST_MAGIC = 0x112
V1, V2, V3 = 0xF993FAC8, 0xF993FAC9, 0xF993FACA
DTYPES = {0: "float32", 1: "float64", 2: "float16", 3: "uint8", 4: "int32", 5: "int8",
          6: "int64", 7: "bool"}
FLAGS = {_np.dtype(v): k for k, v in DTYPES.items()}
BFLOAT16_FLAG = 12      # mshadow's kBfloat16: bfloat16 needs ml_dtypes, so it is looked up apart
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


class SparseRecord:
    """A sparse array of the file, as its parts: `stype` ('csr' or 'row_sparse'), the dense
    `shape`, the stored `data` and the auxiliary arrays `aux` (csr: indptr, indices;
    row_sparse: indices). kiln/mx makes the array and checks the parts."""
    def __init__(self, stype, shape, data, aux):
        self.stype, self.shape, self.data, self.aux = stype, shape, data, aux


SPARSE_STYPES = {1: "row_sparse", 2: "csr"}
NUM_AUX = {"row_sparse": 1, "csr": 2}
LEGACY_MAX_RANK = MAX_RANK      # before 0.9 the first u32 is the rank, not a magic


def _shape(r, where, what, wide=True):
    ndim = r.unpack("i" if wide else "I", f"{where}'s {what} rank")
    if not 0 <= ndim <= MAX_RANK:
        raise KilnError(f"{r.source}: {where} declares {what} rank {ndim} (expected "
                        f"0..{MAX_RANK})")
    return _dims(r, where, what, ndim, "q" if wide else "I")


def _dims(r, where, what, ndim, fmt):
    shape = tuple(r.unpack(fmt, f"{where}'s {what}") for _ in range(ndim))
    size = 1
    for d in shape:
        if d < 0:
            raise KilnError(f"{r.source}: {where} has a negative dimension in {shape}")
        size *= d
        if size > MAX_TENSOR_ELEMENTS:
            raise KilnError(f"{r.source}: {where} declares {what} {shape}: {size} elements "
                            f"or more, larger than the cap of {MAX_TENSOR_ELEMENTS} elements "
                            "per array")
    return shape


def _array(r, k, sparse=False):
    where = f"array {k}"
    magic = r.unpack("I", f"{where}'s magic")
    stype = 0
    if magic not in (V1, V2, V3):
        if magic > LEGACY_MAX_RANK:
            raise KilnError(f"{r.source}: {where} has magic {magic:#x}; expected an MXNet "
                            f"NDArray record ({V2:#x}, {V3:#x} or {V1:#x}) or a rank of "
                            f"0..{LEGACY_MAX_RANK} (MXNet before 0.9)")
        shape = _dims(r, where, "shape", magic, "I")      # legacy: u32 rank and dims
        if not shape:
            return _np.zeros((0,), "float32")
        return _values(r, where, shape)
    if magic != V1:
        stype = r.unpack("i", f"{where}'s storage type")
        if stype != 0 and (stype not in SPARSE_STYPES or not sparse):
            kind = SPARSE_STYPES.get(stype, f"unknown ({stype})")
            raise KilnError(f"{r.source}: {where} has {kind} storage; kiln reads "
                            "dense arrays here (nd.load reads sparse ones)")
    storage = _shape(r, where, "storage shape") if stype else None
    ndim = r.unpack("i", f"{where}'s rank")
    if ndim == -1 and magic == V3:
        raise KilnError(f"{r.source}: {where} has no shape (an uninitialized array)")
    if not 0 <= ndim <= MAX_RANK:
        raise KilnError(f"{r.source}: {where} declares rank {ndim} (expected 0..{MAX_RANK})")
    shape = _dims(r, where, "shape", ndim, "q")
    if ndim == 0 and magic != V3:
        return _np.zeros((0,), "float32")   # MXNet 1.x writes an empty array as rank 0
    if not stype:
        return _values(r, where, shape)
    kind = SPARSE_STYPES[stype]
    r.unpack("i", f"{where}'s device type")
    r.unpack("i", f"{where}'s device id")
    flag = _flag(r, where, "dtype flag")
    aux_meta = [(_flag(r, where, f"aux {i} dtype flag"), _shape(r, where, f"aux {i} shape"))
                for i in range(NUM_AUX[kind])]
    data = _read_values(r, where, flag, storage)
    aux = [_read_values(r, f"{where}'s aux {i}", f, s) for i, (f, s) in enumerate(aux_meta)]
    return SparseRecord(kind, shape, data, aux)


def _flag(r, where, what):
    flag = r.unpack("i", f"{where}'s {what}")
    if flag not in DTYPES and flag != BFLOAT16_FLAG:
        raise KilnError(f"{r.source}: {where} has {what} {flag}; kiln reads "
                        f"{sorted(DTYPES)} ({', '.join(DTYPES.values())}) and "
                        f"{BFLOAT16_FLAG} (bfloat16)")
    return flag


def _values(r, where, shape):
    r.unpack("i", f"{where}'s device type")
    r.unpack("i", f"{where}'s device id")
    flag = r.unpack("i", f"{where}'s dtype flag")
    if flag not in DTYPES and flag != BFLOAT16_FLAG:
        raise KilnError(f"{r.source}: {where} has dtype flag {flag}; kiln reads "
                        f"{sorted(DTYPES)} ({', '.join(DTYPES.values())}) and "
                        f"{BFLOAT16_FLAG} (bfloat16)")
    return _read_values(r, where, flag, shape)


def _read_values(r, where, flag, shape):
    size = int(_np.prod(shape, dtype=_np.int64))
    if flag == BFLOAT16_FLAG:
        raw = r.take(size * 2, f"{where}'s {size} values of bfloat16")
        return _np.frombuffer(raw, "<u2").astype(_np.uint16).view(bfloat16_dtype()).reshape(shape)
    dtype = _np.dtype(DTYPES[flag]).newbyteorder("<")
    raw = r.take(size * dtype.itemsize, f"{where}'s {size} values of {dtype.name}")
    if dtype.kind == "b":   # a byte other than 0/1 is not a bool compiled code can cast
        return (_np.frombuffer(raw, _np.uint8) != 0).reshape(shape)
    return _np.frombuffer(raw, dtype).reshape(shape).astype(dtype.newbyteorder("="))


def parse(data, source="<params>", sparse=False):
    """(list of arrays, list of names or None) from the bytes of an MXNet params file; with
    `sparse`, a sparse array comes as a SparseRecord (else it is refused)."""
    r = _Reader(memoryview(data), source)      # slices of a view copy nothing
    magic = r.unpack("Q", "the file magic")
    if magic != LIST_MAGIC:
        raise KilnError(f"{source}: not an MXNet params file (magic {magic:#x}, expected "
                        f"{LIST_MAGIC:#x})")
    r.unpack("Q", "the reserved field")
    count = r.unpack("Q", "the array count")
    if count > MAX_ARRAYS or count * 4 > len(data):
        raise KilnError(f"{source}: declares {count} arrays, more than the file can hold")
    arrays = [_array(r, k, sparse) for k in range(count)]
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


def read(path, sparse=False):
    return parse(read_capped(path, "params file", MAX_PARAMS_FILE_BYTES), str(path), sparse)


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


def _flag_of(a):
    if is_bfloat16(a.dtype):
        return a.view(_np.uint16), BFLOAT16_FLAG
    if a.dtype in FLAGS:
        return a, FLAGS[a.dtype]
    raise KilnError(f"MXNet params: dtype {a.dtype} has no MXNet flag "
                    f"({', '.join(DTYPES.values())}, bfloat16)")


def _shape_bytes(shape):
    return struct.pack(f"<i{len(shape)}q", len(shape), *shape)


def _encode_sparse(rec):
    stype = {v: k for k, v in SPARSE_STYPES.items()}[rec.stype]
    data, flag = _flag_of(_np.ascontiguousarray(rec.data))
    aux = [_flag_of(_np.ascontiguousarray(a)) for a in rec.aux]
    out = [struct.pack("<Ii", V2, stype), _shape_bytes(data.shape), _shape_bytes(rec.shape),
           struct.pack("<iii", 1, 0, flag)]
    out += [struct.pack("<i", f) + _shape_bytes(a.shape) for a, f in aux]
    out += [x.astype(x.dtype.newbyteorder("<")).tobytes() for x in [data] + [a for a, _ in aux]]
    return b"".join(out)


def encode_record(a):
    """One array's record (what MXNet's NDArray.__getstate__ holds)."""
    if isinstance(a, SparseRecord):
        return _encode_sparse(a)
    a, flag = _flag_of(_np.ascontiguousarray(a))
    if a.ndim == 0:
        a = a.reshape(1)   # MXNet 1.x has no rank-0 arrays
    return b"".join([struct.pack("<Iii", V2, 0, a.ndim), struct.pack(f"<{a.ndim}q", *a.shape),
                     struct.pack("<iii", 1, 0, flag),
                     a.astype(a.dtype.newbyteorder("<")).tobytes()])


def parse_record(data, source="<record>"):
    """The dense array of one record's bytes (MXNet's NDArray.__setstate__)."""
    r = _Reader(memoryview(bytes(data)), source)
    array = _array(r, 0)
    if r.pos != len(r.data):
        raise KilnError(f"{source}: {len(r.data) - r.pos} unexpected bytes after the array")
    return array


def encode(arrays, names=None):
    out = [struct.pack("<QQQ", LIST_MAGIC, 0, len(arrays))]
    out += [encode_record(a) for a in arrays]
    names = list(names or [])
    out.append(struct.pack("<Q", len(names)))
    for n in names:
        b = n.encode("utf-8")
        out.append(struct.pack("<Q", len(b)) + b)
    return b"".join(out)


def write(path, arrays, names=None):
    write_bytes_atomic(path, encode(arrays, names))
