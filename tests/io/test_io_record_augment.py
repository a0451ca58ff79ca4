"""ImageRecordIter's augmentations (kiln/io/record_augment.py) against MXNet 1.9.1 on the
images of tests/fixtures/io/augment.rec (made by make_augment_fixture.py)."""
import json

import numpy as np
import pytest

import kiln
from kiln import io as kio
from kiln.io.hls import hls_to_rgb, rgb_to_hls

from io_fixture import fixture_path

pytest.importorskip("PIL")
_REC = dict(path_imgrec=fixture_path("augment.rec"), path_imgidx=fixture_path("augment.idx"),
            batch_size=3)


def _mxnet(name):
    return np.load(fixture_path("augment.npz"))[name]


def _case(name):
    kw = json.loads(str(np.load(fixture_path("augment.npz"))["cases"]))[name]
    kw["data_shape"] = tuple(kw["data_shape"])
    return kw


def _first(**kw):
    return next(iter(kio.ImageRecordIter(**_REC, **kw))).data[0].asnumpy()


@pytest.mark.parametrize("name", ["plain", "rotate90", "rotate30", "rotate30_fill0",
                                  "scale_half", "pad", "crop_size", "resized_crop_identity",
                                  "mirror"])
def test_deterministic_augmentations_match_mxnet(name):
    got, want = _first(**_case(name)), _mxnet(name)
    assert got.shape == want.shape and got.dtype == np.float32
    # a crop resized to the output goes through one bilinear resize (one grey level)
    np.testing.assert_allclose(got, want, atol=1.0 if name == "crop_size" else 0.0)


def test_uint8_batches_are_the_augmented_pixels_without_normalization():
    got = _first(**_case("uint8"))
    assert got.dtype == np.uint8
    np.testing.assert_array_equal(got, _mxnet("uint8"))


def test_int8_batches_subtract_the_mean_and_saturate():
    got = _first(**_case("int8"))
    assert got.dtype == np.int8 and got.min() < 0 and got.max() == 127
    np.testing.assert_array_equal(got, _mxnet("int8"))
    same = kio.ImageRecordInt8Iter(**_REC, **{k: v for k, v in _case("int8").items()
                                              if k != "dtype"})
    np.testing.assert_array_equal(next(iter(same)).data[0].asnumpy(), got)
    assert next(iter(kio.ImageRecordUInt8Iter(**_REC, data_shape=(3, 16, 20)))).data[0] \
        .dtype == np.uint8


def test_labels_from_an_image_list():
    it = kio.ImageRecordIter(**_REC, data_shape=(3, 16, 20), label_width=2,
                             path_imglist=fixture_path("augment.lst"))
    np.testing.assert_array_equal(next(iter(it)).label[0].asnumpy(), _mxnet("imglist_labels"))


def _centre(img, height, width):
    h, w = img.shape[:2]
    y0, x0 = (h - height) // 2, (w - width) // 2
    return img[y0:y0 + height, x0:x0 + width]


def test_lightness_shift_converts_as_opencv():
    """MXNet drew one whole-number shift of L per image; some shift in [-30, 30] through
    kiln's HLS conversion must give MXNet's pixels, up to OpenCV's float rounding."""
    record = kiln.recordio.MXIndexedRecordIO(fixture_path("augment.idx"),
                                             fixture_path("augment.rec"), "r")
    for k, mx_img in enumerate(_mxnet("random_l")):
        _, payload = kiln.recordio.unpack(record.read_idx(k))
        src = _centre(kiln.image.imdecode(payload).asnumpy(), 16, 20)
        hls = rgb_to_hls(src).astype(np.int64)
        errors = []
        for shift in range(-30, 31):
            moved = np.clip(hls + [0, shift, 0], 0, [180, 255, 255]).astype(np.uint8)
            errors.append(np.abs(hls_to_rgb(moved).transpose(2, 0, 1) - mx_img).max())
        assert min(errors) <= 6, (k, min(errors))
        assert max(errors) > 20  # the shift is visible, so the search means something


def test_hls_round_trip_is_close():
    img = np.random.default_rng(0).integers(0, 256, (40, 40, 3)).astype(np.uint8)
    back = hls_to_rgb(rgb_to_hls(img)).astype(int)
    assert np.abs(back - img).max() <= 4 and np.abs(back - img).mean() < 1


def test_brightness_scales_pixels_as_mxnet():
    plain, want = _mxnet("plain"), _mxnet("brightness")
    for p, w in zip(plain, want):
        ok = (w > 0) & (w < 255) & (p > 20)
        alpha = np.median(w[ok] / p[ok])
        assert 0.5 <= alpha <= 1.5
        np.testing.assert_allclose(w[ok], np.floor(p[ok] * alpha + 0.5), atol=1.0)
    got = _first(**_case("brightness"))
    ratio = got[(got > 0) & (got < 255) & (plain > 20)] / plain[(got > 0) & (got < 255)
                                                               & (plain > 20)]
    assert 0.5 <= ratio.min() and ratio.max() <= 1.5


_RANDOM = dict(max_rotate_angle=20, max_shear_ratio=0.2, max_aspect_ratio=0.2,
               min_random_scale=0.8, max_random_scale=1.2, pad=2, rand_crop=True,
               brightness=0.3, contrast=0.3, saturation=0.3, pca_noise=0.1, random_h=10,
               random_s=10, random_l=10, rand_mirror=True)


@pytest.mark.parametrize("extra", [{}, dict(random_resized_crop=True, min_random_area=0.3,
                                            min_aspect_ratio=0.75, max_aspect_ratio=1.33)])
def test_random_augmentations_are_seeded_and_in_range(extra):
    kw = dict(_RANDOM, data_shape=(3, 12, 14), **extra)
    a, b = _first(seed_aug=5, **kw), _first(seed_aug=5, **kw)
    c = _first(seed_aug=6, **kw)
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)
    assert a.shape == (3, 3, 12, 14) and a.min() >= 0 and a.max() <= 255
    np.testing.assert_array_equal(a, np.round(a))  # uint8 pixels before normalization


def test_mean_image_is_subtracted(tmp_path):
    mean = np.random.default_rng(1).uniform(0, 255, (3, 16, 20)).astype(np.float32)
    kiln.nd.save(str(tmp_path / "mean.nd"), {"mean_img": kiln.nd.array(mean)})
    got = _first(data_shape=(3, 16, 20), mean_img=str(tmp_path / "mean.nd"), scale=0.5)
    np.testing.assert_allclose(got, (_mxnet("plain") - mean) * 0.5, rtol=1e-6, atol=1e-4)


def test_missing_mean_image_is_computed_and_saved_as_mxnet_does(tmp_path):
    path = tmp_path / "mean.nd"
    got = _first(data_shape=(3, 16, 20), mean_img=str(path))
    mean = kiln.nd.load(str(path))["mean_img"].asnumpy()
    np.testing.assert_allclose(mean, _mxnet("plain").mean(0), rtol=1e-6, atol=1e-4)
    np.testing.assert_allclose(got, _mxnet("plain") - mean, atol=1e-4)
    (tmp_path / "bad.nd").write_bytes(b"not an nd file")
    with pytest.raises(kiln.KilnError):
        _first(data_shape=(3, 16, 20), mean_img=str(tmp_path / "bad.nd"))


def test_bad_augmentation_inputs(tmp_path):
    with pytest.raises(kiln.KilnError, match="min_crop_size <= max_crop_size"):
        _first(data_shape=(3, 16, 20), min_crop_size=9, max_crop_size=4)
    with pytest.raises(kiln.KilnError, match="smaller than max_crop_size=40"):
        _first(data_shape=(3, 16, 20), min_crop_size=30, max_crop_size=40)
    bad = tmp_path / "bad.lst"
    bad.write_text("0\tfive\timg.png\n")
    with pytest.raises(kiln.KilnError, match="bad.lst line 1"):
        kio.ImageRecordIter(**_REC, data_shape=(3, 16, 20), path_imglist=str(bad))
    short = tmp_path / "short.lst"
    short.write_text("0\t1\ta.png\n")
    with pytest.raises(kiln.KilnError, match="image index 1, which path_imglist"):
        _first(data_shape=(3, 16, 20), path_imglist=str(short))
    with pytest.raises(kiln.KilnError, match="float32, uint8 or int8"):
        _first(data_shape=(3, 16, 20), dtype="float16")
    assert _first(data_shape=(3, 16, 20), aug_seq="aug_default").shape == (3, 3, 16, 20)
    with pytest.raises(kiln.KilnError, match="default augmenter only"):
        _first(data_shape=(3, 16, 20), aug_seq="det_aug_default")
    with pytest.raises(kiln.KilnError, match=r"\['max_rotate'\] are not supported"):
        _first(data_shape=(3, 16, 20), max_rotate=3)
