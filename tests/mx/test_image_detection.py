"""mx.image's detection augmenters and ImageDetIter (kiln/mx/image/detection.py) against
MXNet 1.9.1 (tests/fixtures/io/image_det.npz, made by make_image_det_fixture.py). Both draw
from Python's `random`, so the same seed gives the same crops, paddings and flips."""
import random

import numpy as np
import pytest

import kiln
from kiln import image

from io_fixture import fixture_path

pytest.importorskip("PIL")
_LABEL = np.array([[0, 0.2, 0.2, 0.8, 0.8], [1, 0.5, 0.5, 0.6, 0.9], [3, 0.7, 0.0, 1.0, 0.3]],
                  np.float32)
_COMMON = dict(batch_size=3, data_shape=(3, 24, 32), path_imgrec=fixture_path("det.rec"),
               path_imgidx=fixture_path("det.idx"))


def _want(key):
    return np.load(fixture_path("image_det.npz"))[key]


def _image():
    yy, xx = np.mgrid[0:24, 0:32]
    return np.stack([(xx * 7 + 60) % 256, (yy * 9) % 256, (xx * yy + 2) % 256],
                    -1).astype(np.uint8)


_CASES = {
    "crop": lambda: image.DetRandomCropAug(min_object_covered=0.3, area_range=(0.2, 0.9)),
    "pad": lambda: image.DetRandomPadAug(area_range=(1.2, 2.5), pad_val=(5, 6, 7)),
    "flip": lambda: image.DetHorizontalFlipAug(1.0),
    "multi_crop": lambda: image.CreateMultiRandCropAugmenter(
        min_object_covered=[0.1, 0.5, 0.9], area_range=(0.1, 1.0), skip_prob=0.2),
}


@pytest.mark.parametrize("name", sorted(_CASES))
def test_detection_augmenter_matches_mxnet(name):
    changed = 0
    for seed in range(5):
        random.seed(seed)
        src, label = _CASES[name]()(kiln.nd.array(_image(), dtype="uint8"), _LABEL.copy())
        want_img, want_label = _want(f"{name}/{seed}/image"), _want(f"{name}/{seed}/label")
        np.testing.assert_array_equal(np.asarray(src.asnumpy()), want_img)
        np.testing.assert_allclose(label, want_label, rtol=1e-6, atol=1e-6)
        changed += want_img.shape != _image().shape or not np.array_equal(want_label, _LABEL)
    assert changed  # the cases exercise the augmenter, not only its fallback


def test_image_det_iter_matches_mxnet_over_two_epochs():
    it = image.ImageDetIter(**_COMMON)
    assert tuple(it.label_shape) == tuple(_want("iter/label_shape"))
    assert it.provide_label[0].shape == (3,) + tuple(it.label_shape)
    got = []
    for _ in range(2):
        got.extend(it)
        it.reset()
    assert len(got) == int(_want("iter/n"))
    for k, batch in enumerate(got):
        np.testing.assert_array_equal(batch.data[0].asnumpy(), _want(f"iter/{k}/data"))
        np.testing.assert_allclose(batch.label[0].asnumpy(), _want(f"iter/{k}/label"),
                                   rtol=1e-6)
        assert batch.pad == int(_want(f"iter/{k}/pad"))


def test_augmented_det_iter_moves_boxes_as_mxnet():
    random.seed(11)
    it = image.ImageDetIter(**_COMMON, rand_crop=1, rand_pad=0.5, rand_mirror=True,
                            area_range=(0.3, 2.0), min_object_covered=0.5)
    np.testing.assert_allclose(it.next().label[0].asnumpy(), _want("aug_iter/label"),
                               rtol=1e-5, atol=1e-6)


def test_label_shape_sync_reshape_and_errors():
    a = image.ImageDetIter(**_COMMON)
    b = image.ImageDetIter(**_COMMON)
    b.reshape(label_shape=(5, 5))
    assert a.sync_label_shape(b) is b and a.label_shape == (5, 5)
    assert a.next().label[0].shape == (3, 5, 5)
    with pytest.raises(kiln.KilnError, match="never shrink|objects >= 5"):
        a.reshape(label_shape=(2, 5))
    augs = image.CreateDetAugmenter((3, 20, 20), rand_crop=0.5, rand_pad=0.5,
                                    rand_mirror=True, mean=True, std=True, brightness=0.1)
    assert [type(x).__name__ for x in augs] == [
        "DetRandomSelectAug", "DetHorizontalFlipAug", "DetRandomSelectAug", "DetBorrowAug",
        "DetBorrowAug", "DetBorrowAug", "DetBorrowAug"]
    with pytest.raises(kiln.KilnError, match="DetAugmenters"):
        image.DetRandomSelectAug([image.HorizontalFlipAug(0.5)])
