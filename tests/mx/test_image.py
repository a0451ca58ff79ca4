"""kiln.image (MXNet's mx.image) on Pillow: decoding, resizing and crops."""
import io
import sys

import numpy as onp
import pytest

import kiln
from kiln import image

PIL = pytest.importorskip("PIL.Image")


def _rgb(h=12, w=16, seed=0):
    return onp.random.RandomState(seed).randint(0, 256, (h, w, 3)).astype(onp.uint8)


def _png_bytes(arr):
    buf = io.BytesIO()
    PIL.fromarray(arr).save(buf, format="PNG")
    return buf.getvalue()


def test_imread_and_imdecode_roundtrip_png(tmp_path):
    arr = _rgb()
    path = tmp_path / "x.png"
    path.write_bytes(_png_bytes(arr))
    img = image.imread(str(path))
    assert img.dtype == onp.uint8 and img.shape == (12, 16, 3)
    onp.testing.assert_array_equal(img.asnumpy(), arr)
    onp.testing.assert_array_equal(image.imdecode(_png_bytes(arr), to_rgb=False).asnumpy(),
                                   arr[:, :, ::-1])
    gray = image.imread(str(path), flag=0)
    assert gray.shape == (12, 16, 1)
    expected = onp.asarray(PIL.fromarray(arr).convert("L"))
    onp.testing.assert_array_equal(gray.asnumpy()[:, :, 0], expected)


def test_bad_files_are_clear_errors(tmp_path):
    with pytest.raises(kiln.KilnError, match="cannot decode 9 bytes"):
        image.imdecode(b"not a png")
    with pytest.raises(kiln.KilnError, match="cannot read"):
        image.imread(str(tmp_path / "missing.png"))
    truncated = tmp_path / "t.png"
    truncated.write_bytes(_png_bytes(_rgb())[:40])
    with pytest.raises(kiln.KilnError, match="t.png"):
        image.imread(str(truncated))


def test_imresize_matches_pillow_and_keeps_dtype():
    arr = _rgb()
    out = image.imresize(kiln.np.array(arr, dtype="uint8"), 7, 5)
    assert out.shape == (5, 7, 3) and out.dtype == onp.uint8
    expected = onp.asarray(PIL.fromarray(arr).resize((7, 5), PIL.BILINEAR))
    onp.testing.assert_array_equal(out.asnumpy(), expected)
    # float images go plane by plane and stay float32
    f = arr.astype(onp.float32) / 255
    outf = image.imresize(f, 7, 5, interp=0)
    assert outf.dtype == onp.float32
    onp.testing.assert_allclose(outf.asnumpy() * 255, onp.asarray(
        PIL.fromarray(arr).resize((7, 5), PIL.NEAREST)), atol=1e-3)


def test_resize_short_keeps_aspect():
    assert image.resize_short(_rgb(12, 16), 6).shape == (6, 8, 3)
    assert image.resize_short(_rgb(16, 12), 6).shape == (8, 6, 3)


def test_crops():
    arr = _rgb(12, 16)
    onp.testing.assert_array_equal(image.fixed_crop(arr, 3, 2, 5, 4).asnumpy(),
                                   arr[2:6, 3:8])
    assert image.fixed_crop(arr, 3, 2, 5, 4, size=(10, 8)).shape == (8, 10, 3)
    with pytest.raises(kiln.KilnError, match="not inside"):
        image.fixed_crop(arr, 14, 0, 5, 4)
    out, box = image.center_crop(arr, (8, 6))
    assert box == (4, 3, 8, 6)
    onp.testing.assert_array_equal(out.asnumpy(), arr[3:9, 4:12])
    # a crop larger than the image is scaled down to fit, then resized to the size asked
    out, box = image.center_crop(arr, (32, 24))
    assert box == (0, 0, 16, 12) and out.shape == (24, 32, 3)
    for _ in range(5):
        out, (x0, y0, w, h) = image.random_crop(arr, (5, 4))
        assert 0 <= x0 <= 11 and 0 <= y0 <= 8 and (w, h) == (5, 4)
        onp.testing.assert_array_equal(out.asnumpy(), arr[y0:y0 + 4, x0:x0 + 5])


def test_color_normalize():
    arr = _rgb().astype(onp.float32)
    mean, std = onp.array([10.0, 20.0, 30.0], onp.float32), onp.array([2.0, 4.0, 8.0],
                                                                      onp.float32)
    out = image.color_normalize(kiln.np.array(arr), kiln.np.array(mean), kiln.np.array(std))
    onp.testing.assert_allclose(out.asnumpy(), (arr - mean) / std, rtol=1e-6)


def test_without_pillow_the_error_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "PIL", None)
    with pytest.raises(kiln.KilnError, match=r"kiln\[image\]"):
        image.imdecode(b"\x89PNG")
