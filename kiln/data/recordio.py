"""MXNet's RecordIO files (`mx.recordio`): .rec record files and their .idx indexes,
read and written in pure Python, byte for byte as MXNet (dmlc-core) does.

A record is [magic 0xced7230a][uint32: cflag << 29 | length][data, zero-padded to 4 bytes],
little-endian. A payload holding the magic number at a 4-byte aligned offset is stored in
parts (cflag 1 = first, 2 = middle, 3 = last) with the magic cut out; reading puts it back.
An .idx file is text, one "key<TAB>byte offset" line per record.

Image records (`pack_img`/`unpack_img`) hold a 24-byte header (flag, label, id, id2), a
label vector when flag > 0, then an encoded image; images are BGR arrays as in MXNet
(which uses OpenCV), encoded and decoded with Pillow (the `image` extra).

Nothing here unpickles or evaluates anything from a file. A corrupt or truncated file is a
KilnError naming the file, the byte offset, what was expected and what was found.
"""
import numbers
import os
import struct
from collections import namedtuple

import numpy as _np

from .._core.base import KilnError

MAGIC = 0xCED7230A
_MAGIC_BYTES = struct.pack("<I", MAGIC)
_MAX_LENGTH = (1 << 29) - 1

IRHeader = namedtuple("HEADER", ["flag", "label", "id", "id2"])
_IR_FORMAT = "<IfQQ"
_IR_SIZE = struct.calcsize(_IR_FORMAT)


class MXRecordIO:
    """Sequential reading ('r') or writing ('w') of a .rec file."""

    def __init__(self, uri, flag):
        self.uri = os.fspath(uri)
        if flag not in ("r", "w"):
            raise KilnError(f"recordio: flag must be 'r' or 'w', got {flag!r}")
        self.flag = flag
        self.handle = None
        self.is_open = False
        self.open()

    @property
    def writable(self):
        return self.flag == "w"

    def open(self):
        try:
            self.handle = open(self.uri, "wb" if self.writable else "rb")
        except OSError as exc:
            raise KilnError(f"recordio: cannot open {self.uri} for "
                            f"{'writing' if self.writable else 'reading'}: {exc.strerror}"
                            ) from None
        self.pid = os.getpid()
        self.is_open = True

    def close(self):
        if self.is_open:
            self.handle.close()
            self.is_open = False
            self.pid = None

    def __del__(self):
        try:
            self.close()
        except Exception:  # interpreter shutdown
            pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __getstate__(self):
        """Picklable for worker processes: the copy reopens the file by name."""
        state = dict(self.__dict__)
        state.update(handle=None, is_open=False, pid=None)
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        if state.get("uri") is not None:
            self.open()

    def _check_pid(self, allow_reset):
        """A forked process must not share the parent's file offset: reopen once there."""
        if self.pid != os.getpid():
            if not allow_reset:
                raise KilnError(f"recordio: {self.uri} was opened for writing in another "
                                f"process; open it again in this one")
            self.close()
            self.open()

    def reset(self):
        """Back to the start of the file (reading), or start it over (writing)."""
        self.close()
        self.open()

    def tell(self):
        return self.handle.tell()

    def write(self, buf):
        """Append one record holding the bytes `buf`."""
        if not self.writable:
            raise KilnError(f"recordio: {self.uri} is open for reading, not writing")
        self._check_pid(allow_reset=False)
        self.handle.write(encode_record(bytes(buf)))

    def read(self):
        """The next record's bytes, or None at the end of the file."""
        if self.writable:
            raise KilnError(f"recordio: {self.uri} is open for writing, not reading")
        self._check_pid(allow_reset=True)
        return read_record(self.handle, self.uri)


def _lrec(cflag, length):
    return struct.pack("<II", MAGIC, (cflag << 29) | length)


def encode_record(data):
    """The bytes of one record of payload `data`, split where it holds the magic number."""
    if len(data) > _MAX_LENGTH:
        raise KilnError(f"recordio: a record holds at most {_MAX_LENGTH} bytes, got "
                        f"{len(data)}")
    parts, start = [], 0
    for i in range(0, len(data) - len(data) % 4, 4):
        if data[i:i + 4] == _MAGIC_BYTES:
            parts += [_lrec(1 if start == 0 else 2, i - start), data[start:i]]
            start = i + 4
    parts += [_lrec(3 if start else 0, len(data) - start), data[start:],
              b"\0" * (-len(data) % 4)]
    return b"".join(parts)


def read_record(f, name):
    """Read one record from the binary file `f` at its position; None at a clean end."""
    out, expect_more = [], False
    size = os.fstat(f.fileno()).st_size
    while True:
        at = f.tell()
        head = f.read(8)
        if not head and not expect_more:
            return None
        if len(head) < 8:
            raise KilnError(f"recordio: {name} is truncated at byte {at}: expected an 8-byte "
                            f"record header, found {len(head)} bytes")
        magic, lrec = struct.unpack("<II", head)
        if magic != MAGIC:
            raise KilnError(f"recordio: {name} is corrupt at byte {at}: expected the record "
                            f"magic 0x{MAGIC:08x}, found 0x{magic:08x}")
        cflag, length = lrec >> 29, lrec & _MAX_LENGTH
        if cflag > 3 or (cflag in (2, 3)) != expect_more:
            raise KilnError(f"recordio: {name} is corrupt at byte {at}: record part flag "
                            f"{cflag} {'inside' if expect_more else 'outside'} a split "
                            f"record")
        if at + 8 + length + (-length % 4) > size:
            raise KilnError(f"recordio: {name} is truncated at byte {at}: the record header "
                            f"promises {length} bytes, the file ends first")
        out.append(f.read(length))
        f.read(-length % 4)
        if cflag in (0, 3):
            return b"".join(out)
        out.append(_MAGIC_BYTES)
        expect_more = True


class MXIndexedRecordIO(MXRecordIO):
    """A .rec file with its .idx index, for random access: read_idx(key), write_idx(key,
    buf). `keys` lists the keys in file order; key_type converts the index's keys."""

    def __init__(self, idx_path, uri, flag, key_type=int):
        self.idx_path = os.fspath(idx_path)
        self.idx, self.keys = {}, []
        self.key_type = key_type
        self.fidx = None
        super().__init__(uri, flag)

    def open(self):
        super().open()
        self.idx, self.keys = {}, []
        if self.writable:
            try:
                self.fidx = open(self.idx_path, "w")
            except OSError as exc:
                raise KilnError(f"recordio: cannot open {self.idx_path} for writing: "
                                f"{exc.strerror}") from None
            return
        self.fidx = None
        for key, pos in read_index(self.idx_path, self.key_type):
            self.keys.append(key)  # a repeated key is listed again and reads its last record
            self.idx[key] = pos

    def close(self):
        super().close()
        if self.fidx is not None:
            self.fidx.close()
            self.fidx = None

    def __getstate__(self):
        state = super().__getstate__()
        state["fidx"] = None
        return state

    def seek(self, idx):
        """Move to the record with key `idx`."""
        self._check_pid(allow_reset=True)
        if idx not in self.idx:
            raise KilnError(f"recordio: key {idx!r} is not in {self.idx_path}")
        self.handle.seek(self.idx[idx])

    def read_idx(self, idx):
        self.seek(idx)
        pos = self.idx[idx]
        record = self.read()
        if record is None:
            raise KilnError(f"recordio: {self.idx_path} puts key {idx!r} at byte {pos}, "
                            f"past the end of {self.uri}")
        return record

    def write_idx(self, idx, buf):
        key = self.key_type(idx)
        pos = self.tell()
        self.write(buf)
        self.fidx.write(f"{key}\t{pos}\n")
        self.idx[key] = pos
        self.keys.append(key)


def read_index(path, key_type=int):
    """(key, byte offset) pairs of an .idx file, checked line by line."""
    try:
        with open(path, "r", encoding="utf-8", errors="strict") as f:
            lines = f.read().splitlines()
    except OSError as exc:
        raise KilnError(f"recordio: cannot read the index {path}: {exc.strerror}") from None
    except UnicodeDecodeError as exc:
        raise KilnError(f"recordio: {path} is not a text index (byte {exc.start} is not "
                        f"UTF-8)") from None
    out = []
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        fields = line.strip().split("\t")
        try:
            if len(fields) != 2:
                raise ValueError
            key, pos = key_type(fields[0]), int(fields[1])
            if pos < 0:
                raise ValueError
        except ValueError:
            raise KilnError(f"recordio: {path} line {n}: expected 'key<TAB>byte offset', "
                            f"found {line[:80]!r}") from None
        out.append((key, pos))
    return out


def pack(header, s):
    """Header + payload bytes. A numeric label goes in the header (flag 0); a label vector
    is stored as float32 before the payload, with flag = its length."""
    header = IRHeader(*header)
    if isinstance(header.label, numbers.Number):
        header = header._replace(flag=0)
    else:
        label = _np.asarray(header.label, dtype=_np.float32).reshape(-1)
        header = header._replace(flag=label.size, label=0)
        s = label.tobytes() + bytes(s)
    return struct.pack(_IR_FORMAT, *header) + bytes(s)


def unpack(s):
    """(IRHeader, payload bytes) of a record; the label is a float32 array when flag > 0."""
    s = bytes(s)
    if len(s) < _IR_SIZE:
        raise KilnError(f"recordio.unpack: a record starts with a {_IR_SIZE}-byte header, "
                        f"got {len(s)} bytes")
    header = IRHeader(*struct.unpack(_IR_FORMAT, s[:_IR_SIZE]))
    s = s[_IR_SIZE:]
    if header.flag > 0:
        if len(s) < 4 * header.flag:
            raise KilnError(f"recordio.unpack: the header promises {header.flag} float32 "
                            f"labels ({4 * header.flag} bytes), {len(s)} bytes follow")
        label = _np.frombuffer(s, _np.float32, header.flag).copy()
        header = header._replace(label=label)
        s = s[4 * header.flag:]
    return header, s


def unpack_img(s, iscolor=-1):
    """(IRHeader, image) of an image record: a BGR (H, W, 3) uint8 NumPy array as OpenCV
    gives it (iscolor=1), (H, W) gray (0), or as stored (-1)."""
    from .image import _pil_image
    import io
    header, payload = unpack(s)
    Image = _pil_image()
    try:
        with Image.open(io.BytesIO(payload)) as img:
            if iscolor == 0:
                img = img.convert("L")
            elif iscolor == 1 or img.mode not in ("L", "RGB", "RGBA"):
                img = img.convert("RGB")
            arr = _np.asarray(img)
    except Exception as exc:  # Pillow raises several types for bad data
        raise KilnError(f"recordio.unpack_img: cannot decode the {len(payload)}-byte image "
                        f"({type(exc).__name__}: {exc})") from None
    if arr.ndim == 3:
        arr = arr[:, :, [2, 1, 0] + list(range(3, arr.shape[2]))]
    return header, _np.ascontiguousarray(arr)


def pack_img(header, img, quality=95, img_fmt=".jpg"):
    """Encode a BGR (H, W, 3) or gray (H, W) uint8 image (as OpenCV arrays are) and pack it.
    img_fmt '.jpg' (quality 0-100) or '.png' (quality = compression level 0-9)."""
    from .image import _pil_image
    import io
    Image = _pil_image()
    arr = _np.asarray(img.asnumpy() if hasattr(img, "asnumpy") else img)
    if arr.dtype != _np.uint8 or arr.ndim not in (2, 3) or (
            arr.ndim == 3 and arr.shape[2] not in (1, 3)):
        raise KilnError(f"recordio.pack_img: expected a uint8 (H, W) or (H, W, 3) image, got "
                        f"{arr.dtype} of shape {arr.shape}")
    if arr.ndim == 3 and arr.shape[2] == 1:
        arr = arr[:, :, 0]
    pil = Image.fromarray(arr[:, :, ::-1].copy() if arr.ndim == 3 else arr)
    fmt = img_fmt.lower().lstrip(".")
    buf = io.BytesIO()
    if fmt in ("jpg", "jpeg"):
        pil.save(buf, format="JPEG", quality=int(quality))
    elif fmt == "png":
        pil.save(buf, format="PNG", compress_level=min(max(int(quality), 0), 9))
    else:
        raise KilnError(f"recordio.pack_img: img_fmt must be '.jpg' or '.png', got "
                        f"{img_fmt!r}")
    return pack(header, buf.getvalue())
