"""ImageDetRecordIter (kiln/io/det_record_iter.py, det_augment.py) against MXNet 1.9.1 on
tests/fixtures/io/det.rec (fixture made by make_image_det_fixture.py), and its random
augmentations' invariants."""
import numpy as np
import pytest

import kiln
from kiln import io as kio

from io_fixture import fixture_path

pytest.importorskip("PIL")
_CASES = {
    "plain": dict(data_shape=(3, 24, 32)),
    "pad_width": dict(data_shape=(3, 24, 32), label_pad_width=30, label_pad_value=-2),
    "mirror": dict(data_shape=(3, 24, 32), rand_mirror_prob=1.0),
    "force_half": dict(data_shape=(3, 12, 16)),
    "shrink_small": dict(data_shape=(3, 20, 20), resize_mode="shrink"),
    "shrink_large": dict(data_shape=(3, 48, 48), resize_mode="shrink"),
    "fit_large": dict(data_shape=(3, 48, 48), resize_mode="fit"),
}


def _want(key):
    return np.load(fixture_path("image_det.npz"))[key]


def _first(**kw):
    it = kio.ImageDetRecordIter(path_imgrec=fixture_path("det.rec"), batch_size=3, **kw)
    batch = next(iter(it))
    return it, batch.data[0].asnumpy(), batch.label[0].asnumpy()


@pytest.mark.parametrize("name", sorted(_CASES))
def test_matches_mxnet_without_random_augmentation(name):
    it, data, label = _first(**_CASES[name])
    assert it.provide_label[0].shape == _want(f"rec/{name}/label").shape
    np.testing.assert_allclose(label, _want(f"rec/{name}/label"), rtol=1e-6, atol=1e-7)
    # one bilinear resize where the output size differs: one grey level (OpenCV rounding)
    atol = 0.0 if name in ("plain", "pad_width", "mirror", "shrink_large") else 1.0
    np.testing.assert_allclose(data, _want(f"rec/{name}/data"), atol=atol)


def test_normalization_where_std_is_given():
    _, data, _ = _first(data_shape=(3, 24, 32), mean_r=10, mean_g=20, mean_b=30, std_r=2,
                        std_g=3, std_b=4, scale=0.5)
    np.testing.assert_allclose(data, _want("rec/normalize/data"), rtol=1e-6)
    _, plain, _ = _first(data_shape=(3, 24, 32))
    _, no_std, _ = _first(data_shape=(3, 24, 32), mean_g=20)
    np.testing.assert_array_equal(no_std[:, 1], plain[:, 1] - 20)   # std 0: no division


def _objects(row):
    header_len = int(row[4])
    raw = row[4:4 + int(row[3])]
    return raw[header_len:].reshape(-1, int(raw[1]))


def test_random_crop_pad_and_colour_keep_labels_valid_and_are_seeded():
    kw = dict(data_shape=(3, 24, 32), rand_crop_prob=1.0, num_crop_sampler=2,
              min_crop_scales=(0.3, 0.6), max_crop_scales=(0.9, 1.0),
              min_crop_aspect_ratios=0.5, max_crop_aspect_ratios=2.0,
              min_crop_overlaps=(0.1, 0.3), max_crop_trials=(30, 30), rand_pad_prob=0.5,
              max_pad_scale=2.0, rand_mirror_prob=0.5, max_random_hue=10,
              random_hue_prob=0.5, max_random_contrast=0.3, random_contrast_prob=0.5,
              crop_emit_mode="overlap", seed_aug=4)
    _, a_data, a_label = _first(**kw)
    _, b_data, b_label = _first(**kw)
    np.testing.assert_array_equal(a_data, b_data)
    np.testing.assert_array_equal(a_label, b_label)
    _, plain, plain_label = _first(data_shape=(3, 24, 32))
    assert not np.array_equal(a_label, plain_label)
    for row in a_label:
        objects = _objects(row)
        assert len(objects) >= 1
        assert (objects[:, 1:5] >= 0).all() and (objects[:, 1:5] <= 1).all()
        assert (objects[:, 3] > objects[:, 1]).all() and (objects[:, 4] > objects[:, 2]).all()


def test_bad_inputs(tmp_path):
    with pytest.raises(kiln.KilnError, match="detection augmenter only"):
        _first(data_shape=(3, 24, 32), aug_seq="aug_default")
    with pytest.raises(kiln.KilnError, match="resize_mode"):
        _first(data_shape=(3, 24, 32), resize_mode="stretch")
    with pytest.raises(kiln.KilnError, match="num_crop_sampler=2"):
        _first(data_shape=(3, 24, 32), num_crop_sampler=2, min_crop_scales=(0.1, 0.2, 0.3))
    with pytest.raises(kiln.KilnError, match="less than the longest label"):
        _first(data_shape=(3, 24, 32), label_pad_width=5)
    with pytest.raises(kiln.KilnError, match="data_shape"):
        _first(data_shape=(1, 24, 32))
    rec = tmp_path / "bad.rec"
    w = kiln.recordio.MXRecordIO(str(rec), "w")
    w.write(kiln.recordio.pack(kiln.recordio.IRHeader(0, np.array([2, 4, 0, 0, 0, 1],
                                                                  np.float32), 0, 0), b"x"))
    w.close()
    with pytest.raises(kiln.KilnError, match="objects of 4"):
        next(iter(kio.ImageDetRecordIter(path_imgrec=str(rec), data_shape=(3, 8, 8),
                                         batch_size=1)))
