"""npx.save / npx.load: arrays, lists and dicts round-trip; hostile files are refused."""
import os
import pickle
import zipfile

import numpy as onp
import pytest

from kiln import np, npx, KilnError
from conftest import assert_close


def test_single_array_loads_as_list_of_one(tmp_path):
    f = str(tmp_path / "x-file")
    x = np.arange(4)
    npx.save(f, x)
    assert os.path.exists(f)                 # the exact file name, no suffix added
    x2 = npx.load(f)
    assert isinstance(x2, list) and len(x2) == 1
    assert x2[0].dtype == onp.float32
    assert_close(x2[0], x)


def test_list_round_trip(tmp_path):
    f = str(tmp_path / "x-files")
    x, y = np.arange(4), np.zeros(4)
    npx.save(f, [x, y])
    x2, y2 = npx.load(f)
    assert_close(x2, x)
    assert_close(y2, y)
    many = [np.ones(i + 1) * i for i in range(12)]   # order survives arr_10 vs arr_2
    npx.save(f, many)
    assert [a.shape for a in npx.load(f)] == [(i + 1,) for i in range(12)]


def test_dict_round_trip_keeps_dtypes(tmp_path):
    f = str(tmp_path / "mydict")
    d = {"x": np.arange(4), "y": np.zeros(4), "i": np.array(onp.arange(3, dtype=onp.int32)),
         "b": np.array([True, False]), "dense0.weight": np.ones((2, 3))}
    npx.save(f, d)
    d2 = npx.load(f)
    assert isinstance(d2, dict) and set(d2) == set(d)
    for key in d:
        assert d2[key].dtype == d[key].dtype
        assert_close(d2[key], d[key])


def test_loaded_arrays_are_writable(tmp_path):
    f = str(tmp_path / "w")
    npx.save(f, np.ones(3))
    (x,) = npx.load(f)
    x[0] = 5
    x += 1
    assert x.tolist() == [6.0, 2.0, 2.0]


def test_pickle_bearing_file_is_refused_without_running_it(tmp_path):
    marker = tmp_path / "pwned"

    class Evil:
        def __reduce__(self):
            return (open, (str(marker), "w"))

    f = tmp_path / "evil.npz"
    with zipfile.ZipFile(f, "w") as z:
        buf = onp.lib.format
        with z.open("arr_0.npy", "w") as fh:
            buf.write_array(fh, onp.array([Evil()], dtype=object), allow_pickle=True)
    with pytest.raises(KilnError):
        npx.load(str(f))
    assert not marker.exists()
    raw = tmp_path / "raw.pkl"
    raw.write_bytes(pickle.dumps(Evil()))
    with pytest.raises(KilnError):
        npx.load(str(raw))
    assert not marker.exists()


@pytest.mark.parametrize("content", [b"", b"not an array file", b"PK\x03\x04garbage" * 10])
def test_corrupt_file_raises_kiln_error(tmp_path, content):
    f = tmp_path / "bad"
    f.write_bytes(content)
    with pytest.raises(KilnError):
        npx.load(str(f))


def test_truncated_file(tmp_path):
    f = str(tmp_path / "t")
    npx.save(f, {"w": np.ones((50, 50))})
    data = open(f, "rb").read()
    open(f, "wb").write(data[: len(data) // 2])
    with pytest.raises(KilnError):
        npx.load(f)


def test_missing_file_and_bad_values(tmp_path):
    with pytest.raises(KilnError):
        npx.load(str(tmp_path / "nope"))
    with pytest.raises(KilnError):
        npx.save(str(tmp_path / "x"), "not an array")
    with pytest.raises(KilnError):
        npx.save(str(tmp_path / "x"), {1: np.ones(2)})


def test_arrays_pickle_only_as_plain_data():
    # the design changed (issue 26): an array pickles as its dtype name, shape and bytes,
    # rebuilt by one checked constructor (tests/core/test_array_pickle.py); files are still
    # never unpickled by kiln (test_pickle_bearing_file_is_refused_without_running_it)
    stream = pickle.dumps(np.ones(2))
    assert b"from_pickled" in stream and b"numpy" not in stream
    assert pickle.loads(stream).tolist() == [1.0, 1.0]
