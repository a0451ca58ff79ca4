"""mx.image's augmenters and ImageIter (kiln/mx/image/augment.py, kiln/mx/image/iterator.py) against
MXNet 1.9.1 (tests/fixtures/io/image_aug.npz, made by make_image_aug_fixture.py). Both draw
from Python's `random` and NumPy's global generator, so the same seeds give the same draws."""
import random

import numpy as np
import pytest

import kiln
from kiln import image

from io_fixture import fixture_path

pytest.importorskip("PIL")


def _want(key):
    return np.load(fixture_path("image_aug.npz"))[key]


def _seeded(k):
    random.seed(k)
    np.random.seed(k)


def _image():
    yy, xx = np.mgrid[0:12, 0:16]
    return np.stack([xx * 13.0, yy * 17.0, (xx + yy) * 5.0], -1).astype(np.float32)


_EIG = (np.array([55.46, 4.794, 1.148]), np.array([[-0.5675, 0.7192, 0.4009],
                                                  [-0.5808, -0.0045, -0.8140],
                                                  [-0.5836, -0.6948, 0.4203]]))
_AUGS = {
    "brightness": lambda: image.BrightnessJitterAug(0.4),
    "contrast": lambda: image.ContrastJitterAug(0.4),
    "saturation": lambda: image.SaturationJitterAug(0.4),
    "hue": lambda: image.HueJitterAug(0.3),
    "color_jitter": lambda: image.ColorJitterAug(0.3, 0.3, 0.3),
    "lighting": lambda: image.LightingAug(0.1, *_EIG),
    "gray": lambda: image.RandomGrayAug(1.0),
    "flip": lambda: image.HorizontalFlipAug(1.0),
    "random_crop": lambda: image.RandomCropAug((10, 8)),
    "center_crop": lambda: image.CenterCropAug((10, 8)),
    "normalize": lambda: image.ColorNormalizeAug(kiln.nd.array([10, 20, 30]),
                                                 kiln.nd.array([2, 3, 4])),
}


@pytest.mark.parametrize("name", sorted(_AUGS))
def test_augmenter_matches_mxnet_with_the_same_seeds(name):
    aug = _AUGS[name]()
    _seeded(3)
    got = aug(kiln.nd.array(_image())).asnumpy()
    np.testing.assert_allclose(got, _want("aug/" + name), rtol=1e-5, atol=1e-3)


def test_random_size_crop_picks_mxnets_boxes():
    for k in range(4):
        _seeded(k)
        _, box = image.random_size_crop(kiln.nd.array(_image()), (6, 6), (0.2, 0.9),
                                        (0.5, 2.0))
        assert tuple(box) == tuple(_want(f"box/{k}"))


def test_copy_make_border():
    img = kiln.nd.array(_image())
    np.testing.assert_array_equal(image.copyMakeBorder(img, 1, 2, 3, 4, type=0,
                                                       value=7).asnumpy(), _want("border"))
    for code in (1, 2, 3, 4):
        np.testing.assert_array_equal(image.copyMakeBorder(img, 2, 1, 1, 2, type=code)
                                      .asnumpy(), _want(f"border/{code}"))


def test_create_augmenter_builds_mxnets_list_and_dumps():
    augs = image.CreateAugmenter((3, 8, 10), resize=12, rand_crop=True, rand_resize=True,
                                 rand_mirror=True, mean=True, std=True, brightness=0.1,
                                 hue=0.1, pca_noise=0.1, rand_gray=0.1)
    assert [type(a).__name__ for a in augs] == [
        "ResizeAug", "RandomSizedCropAug", "HorizontalFlipAug", "CastAug", "ColorJitterAug",
        "HueJitterAug", "LightingAug", "RandomGrayAug", "ColorNormalizeAug"]
    assert augs[0].dumps() == '["resizeaug", {"size": 12, "interp": 2}]'
    out = _image().astype(np.uint8)
    for aug in augs:
        out = aug(out)
    assert out.shape == (8, 10, 3) and out.dtype == np.float32
    with pytest.raises(kiln.KilnError, match="rand_resize needs rand_crop"):
        image.CreateAugmenter((3, 8, 10), rand_resize=True)
    with pytest.raises(kiln.KilnError, match="expected a float image"):
        image.BrightnessJitterAug(0.1)(_image().astype(np.uint8))


@pytest.mark.parametrize("handle", ["pad", "discard", "roll_over"])
def test_image_iter_matches_mxnet_over_two_epochs(handle):
    it = image.ImageIter(batch_size=2, data_shape=(3, 16, 20),
                         path_imgrec=fixture_path("augment.rec"),
                         path_imgidx=fixture_path("augment.idx"), last_batch_handle=handle)
    got = []
    for _ in range(2):
        got.extend(it)
        it.reset()
    assert len(got) == int(_want(f"iter/{handle}/n"))
    for k, batch in enumerate(got):
        np.testing.assert_array_equal(batch.data[0].asnumpy(),
                                      _want(f"iter/{handle}/{k}/data"))
        np.testing.assert_array_equal(batch.label[0].asnumpy(),
                                      _want(f"iter/{handle}/{k}/label"))
        assert batch.pad == int(_want(f"iter/{handle}/{k}/pad"))


def test_image_iter_reads_files_named_by_a_list(tmp_path):
    from PIL import Image
    rng = np.random.default_rng(0)
    rows = []
    for k in range(3):
        pixels = rng.integers(0, 256, (10, 12, 3)).astype(np.uint8)
        Image.fromarray(pixels).save(tmp_path / f"p{k}.png")
        rows.append([float(k), 2.0 * k, f"p{k}.png"])
    it = image.ImageIter(batch_size=3, data_shape=(3, 10, 12), imglist=rows,
                         path_root=str(tmp_path), label_width=2)
    batch = it.next()
    np.testing.assert_array_equal(batch.label[0].asnumpy(), [[0, 0], [1, 2], [2, 4]])
    np.testing.assert_array_equal(batch.data[0].asnumpy()[1],
                                  np.asarray(Image.open(tmp_path / "p1.png")).transpose(2, 0, 1))
    bad = image.ImageIter(batch_size=1, data_shape=(3, 10, 12), imglist=[[0.0, "none.png"]],
                          path_root=str(tmp_path))
    with pytest.raises(kiln.KilnError, match="cannot read image"):
        bad.next()
    with pytest.raises(kiln.KilnError, match=r"data_shape must be \(3, H, W\)"):
        image.ImageIter(batch_size=1, data_shape=(1, 10, 12), imglist=rows)
