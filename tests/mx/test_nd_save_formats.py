"""nd.save/nd.load beyond dense V2 records: sparse arrays (csr, row_sparse) in MXNet's
sparse record, and files of MXNet before 0.9 (no magic: a u32 rank and u32 dimensions).
The sparse fixture was written by real MXNet 1.9.1 (tests/fixtures/mxnet/make_fixtures.py);
the legacy records are built here from the format's layout."""
import os
import struct

import numpy as np
import pytest

pytest.importorskip("scipy.sparse")

from kiln import nd  # noqa: E402
from kiln._core.base import KilnError  # noqa: E402
from paths import FIXTURES  # noqa: E402

SPARSE_FIXTURE = os.path.join(FIXTURES, "mxnet", "ndsave-sparse.params")
HEADER = struct.pack("<QQ", 0x112, 0)


def test_sparse_arrays_load_from_mxnets_file_and_save_to_the_same_bytes(tmp_path):
    csr, rows, dense = nd.load(SPARSE_FIXTURE)
    assert csr.stype == "csr" and csr.asnumpy().tolist() == [[0, 1.5, 0], [2, 0, 3]]
    assert rows.stype == "row_sparse" and rows.dtype == np.float64
    assert rows.indices.asnumpy().tolist() == [1]
    assert dense.stype == "default" and dense.asnumpy().tolist() == [1, 1]
    out = tmp_path / "again.params"
    nd.save(str(out), [csr, rows, dense])
    with open(SPARSE_FIXTURE, "rb") as f:
        assert out.read_bytes() == f.read()


def _legacy(shape, values):
    record = struct.pack(f"<I{len(shape)}I", len(shape), *shape)
    if shape:
        record += struct.pack("<iii", 1, 0, 0) + np.asarray(values, "<f4").tobytes()
    return record


def _file(tmp_path, *records):
    path = tmp_path / "legacy.params"
    path.write_bytes(HEADER + struct.pack("<Q", len(records)) + b"".join(records)
                     + struct.pack("<Q", 0))
    return str(path)


def test_files_of_mxnet_before_0_9_load(tmp_path):
    path = _file(tmp_path, _legacy((2, 3), range(6)), _legacy((), []))
    first, empty = nd.load(path)
    assert first.asnumpy().tolist() == [[0, 1, 2], [3, 4, 5]]
    assert empty.size == 0


@pytest.mark.parametrize("record", [
    struct.pack("<I", 1 << 20),                          # neither a magic nor a rank
    struct.pack("<II", 1, 1000) + struct.pack("<iii", 1, 0, 0),   # values missing
    struct.pack("<IIII", 3, 1 << 31, 1 << 31, 1 << 31),  # far beyond the element cap
])
def test_hostile_legacy_records_are_refused(tmp_path, record):
    with pytest.raises(KilnError):
        nd.load(_file(tmp_path, record))


def _csr_record(indptr, storage=(2,), indices=(0, 1)):
    return (struct.pack("<Ii", 0xF993FAC9, 2) + struct.pack("<iq", 1, *storage)
            + struct.pack("<iqq", 2, 2, 2) + struct.pack("<iii", 1, 0, 0)
            + struct.pack("<iiq", 6, 1, len(indptr)) + struct.pack("<iiq", 6, 1, len(indices))
            + np.ones(min(storage[0], 2), "<f4").tobytes() + np.asarray(indptr, "<i8").tobytes()
            + np.asarray(indices, "<i8").tobytes())


def test_sparse_records_are_checked_like_any_csr_parts(tmp_path):
    assert nd.load(_file(tmp_path, _csr_record([0, 1, 2])))[0].asnumpy().tolist() == \
        [[1, 0], [0, 1]]
    with pytest.raises(KilnError):
        nd.load(_file(tmp_path, _csr_record([0, 2, 1])))       # indptr falls
    with pytest.raises(KilnError):
        nd.load(_file(tmp_path, _csr_record([0, 1, 2], storage=(1 << 40,))))
