"""kiln.recordio (mx.recordio) and ImageRecordDataset against files written and read by
MXNet 1.9.1 (tests/fixtures/recordio/make_recordio_fixture.py): the same bytes written,
the same records, headers, images and labels read; corrupt files give clear errors."""
import json
import os
import shutil

import numpy as onp
import pytest

from kiln import recordio
from kiln.base import KilnError
from kiln.gluon.data import DataLoader, RecordFileDataset
from kiln.gluon.data.vision import ImageRecordDataset
from paths import FIXTURES

HERE = os.path.join(FIXTURES, "recordio")
EXPECTED = onp.load(os.path.join(HERE, "expected.npz"))
RAW = [bytes.fromhex(h) for h in json.loads(str(EXPECTED["raw_payloads"]))]
HEADERS = json.loads(str(EXPECTED["headers"]))


def _fixture(tmp_path, name):
    for ext in (".rec", ".idx"):
        if os.path.exists(os.path.join(HERE, name + ext)):
            shutil.copy(os.path.join(HERE, name + ext), tmp_path / (name + ext))
    return str(tmp_path / (name + ".rec"))


def test_reads_mxnets_records_including_split_ones():
    reader = recordio.MXRecordIO(os.path.join(HERE, "raw.rec"), "r")
    got = []
    while (rec := reader.read()) is not None:
        got.append(rec)
    assert got == RAW
    reader.reset()
    assert reader.read() == RAW[0]
    reader.close()


def test_writes_the_bytes_mxnet_writes(tmp_path):
    with recordio.MXRecordIO(tmp_path / "raw.rec", "w") as writer:
        for payload in RAW:
            writer.write(payload)
    assert (tmp_path / "raw.rec").read_bytes() == open(os.path.join(HERE, "raw.rec"),
                                                       "rb").read()
    source = recordio.MXIndexedRecordIO(os.path.join(HERE, "small.idx"),
                                        os.path.join(HERE, "small.rec"), "r")
    writer = recordio.MXIndexedRecordIO(tmp_path / "small.idx", tmp_path / "small.rec", "w")
    for key in source.keys:
        writer.write_idx(key, source.read_idx(key))
    writer.close()
    for ext in (".rec", ".idx"):
        assert (tmp_path / f"small{ext}").read_bytes() == open(
            os.path.join(HERE, f"small{ext}"), "rb").read()


def test_headers_and_pack_unpack_as_mxnet():
    reader = recordio.MXIndexedRecordIO(os.path.join(HERE, "small.idx"),
                                        os.path.join(HERE, "small.rec"), "r")
    assert reader.keys == [0, 1, 2, 3]
    for key, (flag, label, rid, rid2) in zip(reader.keys, HEADERS):
        record = reader.read_idx(key)
        header, payload = recordio.unpack(record)
        assert (header.flag, header.id, header.id2) == (flag, rid, rid2)
        onp.testing.assert_array_equal(onp.asarray(header.label, onp.float32),
                                       onp.asarray(label, onp.float32))
        repacked = recordio.pack(recordio.IRHeader(0, header.label, header.id, header.id2),
                                 payload)
        assert repacked == record


def test_image_record_dataset_matches_mxnet(tmp_path):
    pytest.importorskip("PIL")
    ds = ImageRecordDataset(_fixture(tmp_path, "small"))
    assert len(ds) == 4
    for i in range(4):
        img, label = ds[i]
        assert img.dtype == onp.uint8
        onp.testing.assert_array_equal(img.asnumpy(), EXPECTED[f"image{i}"])
        onp.testing.assert_array_equal(onp.asarray(label, onp.float32), EXPECTED[f"label{i}"])
    onp.testing.assert_array_equal(ImageRecordDataset(_fixture(tmp_path, "small"), flag=0)[3][0]
                                   .asnumpy(), EXPECTED["gray_flag0"])
    doubled = ImageRecordDataset(_fixture(tmp_path, "small"),
                                 transform=lambda x, y: (x.shape, y * 2))
    assert doubled[0] == ((5, 7, 3), 6.0)
    assert RecordFileDataset(_fixture(tmp_path, "small"))[2] == recordio.MXIndexedRecordIO(
        os.path.join(HERE, "small.idx"), os.path.join(HERE, "small.rec"), "r").read_idx(2)


def test_image_records_load_in_worker_processes(tmp_path):
    pytest.importorskip("PIL")
    ds = ImageRecordDataset(_fixture(tmp_path, "small")).transform(
        lambda img, label: (img.astype("float32").mean(), float(onp.sum(label))))
    ds[0]  # the parent has read (and moved its file offset) before the workers fork
    loader = DataLoader(ds, batch_size=2, num_workers=2)
    means = onp.concatenate([x.asnumpy() for x, _ in loader])
    onp.testing.assert_allclose(means, [EXPECTED[f"image{i}"].mean() for i in range(4)],
                                rtol=1e-5)


def test_pack_img_roundtrip_is_bgr_like_opencv():
    pytest.importorskip("PIL")
    bgr = EXPECTED["source0"][:, :, ::-1]  # the RGB image MXNet decoded, in OpenCV's order
    record = recordio.pack_img(recordio.IRHeader(0, 2.0, 9, 0), bgr, quality=3,
                               img_fmt=".png")
    header, back = recordio.unpack_img(record, iscolor=1)
    assert header.label == 2.0 and header.id == 9
    onp.testing.assert_array_equal(back, bgr)
    gray = recordio.unpack_img(recordio.pack_img((0, 0.0, 0, 0), EXPECTED["gray_source"],
                                                 img_fmt=".png"))[1]
    onp.testing.assert_array_equal(gray, EXPECTED["gray_source"])
    blue = onp.zeros((8, 8, 3), onp.uint8) + onp.array([200, 50, 10], onp.uint8)  # B, G, R
    jpg = recordio.unpack_img(recordio.pack_img((0, 0.0, 0, 0), blue, quality=95))[1]
    assert jpg.shape == blue.shape and onp.abs(jpg.astype(int) - blue).max() <= 3
    with pytest.raises(KilnError, match="img_fmt must be"):
        recordio.pack_img((0, 0.0, 0, 0), bgr, img_fmt=".gif")
    with pytest.raises(KilnError, match="cannot decode"):
        recordio.unpack_img(recordio.pack((0, 0.0, 0, 0), b"not an image"))


def _corrupt(tmp_path, data, idx=None):
    rec = tmp_path / "bad.rec"
    rec.write_bytes(data)
    (tmp_path / "bad.idx").write_text(idx if idx is not None else "0\t0\n")
    return str(rec)


@pytest.mark.parametrize("cut", [3, 10, 17, 30])
def test_truncated_records_name_the_file_and_offset(tmp_path, cut):
    data = open(os.path.join(HERE, "raw.rec"), "rb").read()
    rec = _corrupt(tmp_path, data[:cut])
    reader = recordio.MXRecordIO(rec, "r")
    with pytest.raises(KilnError, match=r"bad\.rec is truncated at byte \d+"):
        while reader.read() is not None:
            pass


def test_corrupt_files_are_clear_errors(tmp_path):
    data = open(os.path.join(HERE, "raw.rec"), "rb").read()
    bad_magic = _corrupt(tmp_path, data[:8] + b"\x00\x00\x00\x00" + data[12:])
    reader = recordio.MXRecordIO(bad_magic, "r")
    reader.read()
    with pytest.raises(KilnError, match=r"corrupt at byte 8: expected the record magic "
                                        r"0xced7230a, found 0x00000000"):
        reader.read()
    # a split record's middle part with no first part
    orphan = _corrupt(tmp_path, data[0x1c:0x28])
    with pytest.raises(KilnError, match=r"corrupt at byte 0: record part flag 2 outside"):
        recordio.MXRecordIO(orphan, "r").read()
    with pytest.raises(KilnError, match=r"bad\.idx line 2: expected 'key<TAB>byte offset'"):
        RecordFileDataset(_corrupt(tmp_path, data, "0\t0\nimport os\n"))
    with pytest.raises(KilnError, match=rf"puts key 1 at byte {len(data)}, past the end of"):
        RecordFileDataset(_corrupt(tmp_path, data, f"0\t0\n1\t{len(data)}\n"))[1]
    with pytest.raises(KilnError, match="cannot read the index"):
        recordio.MXIndexedRecordIO(tmp_path / "none.idx", bad_magic, "r")
    with pytest.raises(KilnError, match="24-byte header"):
        recordio.unpack(b"short")
    with pytest.raises(KilnError, match="promises 5 float32 labels"):
        recordio.unpack(recordio.pack((0, [1.0, 2.0, 3.0, 4.0, 5.0], 0, 0), b"")[:30])
    with pytest.raises(KilnError, match="open for reading"):
        recordio.MXRecordIO(bad_magic, "r").write(b"x")


def test_mxnet_alias_reaches_recordio():
    import kiln.mx.alias as alias
    fresh = alias.install()
    try:
        import mxnet as mx
        assert mx.recordio.MXIndexedRecordIO is recordio.MXIndexedRecordIO
        assert mx.gluon.data.vision.ImageRecordDataset is ImageRecordDataset
    finally:
        if fresh:
            alias.uninstall()


def test_damaged_files_never_crash(tmp_path):
    pytest.importorskip("PIL")
    rng = onp.random.default_rng(0)
    good = open(os.path.join(HERE, "small.rec"), "rb").read()
    index = open(os.path.join(HERE, "small.idx")).read()
    outcomes = set()
    for trial in range(100):
        data = bytearray(good)
        for _ in range(int(rng.integers(1, 4))):
            data[int(rng.integers(len(data)))] = int(rng.integers(256))
        if trial % 3 == 0:
            data = data[:int(rng.integers(len(data)))]
        try:
            ds = ImageRecordDataset(_corrupt(tmp_path, bytes(data), index))
            for i in range(len(ds)):
                ds[i]
            outcomes.add("read")
        except KilnError:
            outcomes.add("error")
    assert outcomes == {"read", "error"}
