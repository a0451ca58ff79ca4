"""Where the vision datasets live on disk, how they are fetched and checked, and the
readers for their standard formats (gzip IDX, CIFAR binary batches).

Files are checked against the SHA-1 sums MXNet publishes. A file whose sum differs is
fetched again when a network is there; offline that is an error, unless the environment
variable KILN_DATASET_VERIFY=0 says to accept unverified files (for local stand-ins in the
same format). The readers check every size field against the bytes present, so a
truncated or corrupt file is an error naming the file, never a crash. Nothing is unpickled.
"""
import gzip
import os
import struct
import zlib

import numpy as _np

from ...._core.base import KilnError

def data_dir():
    """MXNet's data folder: $MXNET_HOME, else ~/.mxnet."""
    return os.path.expanduser(os.environ.get("MXNET_HOME") or os.path.join("~", ".mxnet"))


def default_root(name):
    return os.path.join(data_dir(), "datasets", name)


def resolve_root(root, name):
    """`root` as given, with MXNet's default (under MXNET_HOME) when it is the default."""
    default = os.path.join("~", ".mxnet", "datasets", name)
    if root is None or root == default:
        return default_root(name)
    return os.path.expanduser(root)


def _verify_enabled():
    return os.environ.get("KILN_DATASET_VERIFY", "1").strip().lower() not in ("0", "false",
                                                                                 "no", "off")


def ensure_files(dataset, root, files, url_dir, archive=None):
    """Make sure each (name, sha1) in `files` is in `root` with its sum, downloading what is
    missing or different (`archive`=(name, sha1), a tar.gz holding them, when given).
    Returns the full paths. Raises KilnError naming the files and the folder otherwise."""
    from ...utils import _get_repo_url, check_sha1, download
    paths = [os.path.join(root, name) for name, _ in files]
    verify = _verify_enabled()

    def problems():
        out = []
        for path, (name, sha1) in zip(paths, files):
            if not os.path.isfile(path):
                out.append((name, "missing"))
            elif verify and not check_sha1(path, sha1):
                out.append((name, f"SHA-1 differs from MXNet's {sha1}"))
        return out

    bad = problems()
    if not bad:
        return paths
    try:
        if archive is not None:
            tar_path = download(_get_repo_url() + url_dir + archive[0], path=root + os.sep,
                                sha1_hash=archive[1])
            _extract_members(tar_path, root, [name for name, _ in files])
        else:
            for name, sha1 in files:
                download(_get_repo_url() + url_dir + name, path=os.path.join(root, name),
                         sha1_hash=sha1)
    except KilnError as exc:
        listing = "; ".join(f"{name} ({why})" for name, why in bad)
        hint = ("" if all(why == "missing" for _, why in bad) else
                " (set KILN_DATASET_VERIFY=0 to accept files in the right format whose "
                "SHA-1 differs, such as local stand-ins)")
        raise KilnError(f"{dataset}: cannot use {listing} in {root}, and downloading "
                        f"failed ({exc}). Put the files in {root} (or pass root=...){hint}"
                        ) from None
    return paths


def _extract_members(tar_path, root, names):
    """Extract just the named files, flattened into `root` (never a path from the archive)."""
    import tarfile
    wanted = set(names)
    with tarfile.open(tar_path) as tar:
        for member in tar.getmembers():
            base = os.path.basename(member.name)
            if member.isfile() and base in wanted:
                src = tar.extractfile(member)
                with open(os.path.join(root, base), "wb") as out:
                    out.write(src.read())


def _read_all(path, compressed):
    try:
        if compressed:
            with gzip.open(path, "rb") as f:
                return f.read()
        with open(path, "rb") as f:
            return f.read()
    except (OSError, EOFError, zlib.error) as exc:
        raise KilnError(f"cannot read {path}: it is not a valid gzip file (corrupt or "
                        f"truncated): {exc}") from None


# IDX type codes (the third byte of the magic number) -> NumPy big-endian dtype
_IDX_TYPES = {0x08: ">u1", 0x09: ">i1", 0x0B: ">i2", 0x0C: ">i4", 0x0D: ">f4", 0x0E: ">f8"}


def read_idx(path, ndim):
    """An IDX file (MNIST's format, gzip-compressed) as a NumPy array with `ndim` dims."""
    raw = _read_all(path, compressed=path.endswith(".gz"))
    if len(raw) < 4 or raw[0] != 0 or raw[1] != 0 or raw[2] not in _IDX_TYPES:
        raise KilnError(f"{path}: not an IDX file (bad magic number {raw[:4].hex()})")
    if raw[3] != ndim:
        raise KilnError(f"{path}: expected an IDX file with {ndim} dimensions, it has {raw[3]}")
    header = 4 + 4 * ndim
    if len(raw) < header:
        raise KilnError(f"{path}: truncated IDX header ({len(raw)} bytes)")
    dims = struct.unpack(f">{ndim}I", raw[4:header])
    dtype = _np.dtype(_IDX_TYPES[raw[2]])
    expected = int(_np.prod(dims, dtype=_np.int64)) * dtype.itemsize
    if len(raw) - header != expected:
        raise KilnError(f"{path}: the header promises {dims} items ({expected} bytes) but "
                        f"{len(raw) - header} bytes follow (truncated or corrupt file)")
    return _np.frombuffer(raw, dtype=dtype, offset=header).reshape(dims).astype(
        dtype.newbyteorder("="))


def read_cifar_batch(path, label_bytes):
    """A CIFAR binary batch: records of `label_bytes` label bytes then a 3x32x32 image.
    Returns (images (N, 32, 32, 3) uint8, labels (N, label_bytes) int32)."""
    raw = _read_all(path, compressed=False)
    record = label_bytes + 3072
    if not raw or len(raw) % record:
        raise KilnError(f"{path}: {len(raw)} bytes is not a whole number of {record}-byte "
                        f"CIFAR records (truncated or corrupt file)")
    data = _np.frombuffer(raw, dtype=_np.uint8).reshape(-1, record)
    images = data[:, label_bytes:].reshape(-1, 3, 32, 32).transpose(0, 2, 3, 1)
    return _np.ascontiguousarray(images), data[:, :label_bytes].astype(_np.int32)
