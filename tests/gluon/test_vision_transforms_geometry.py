"""gluon.data.vision.transforms that move, crop or recolour pixels: Rotate/RandomRotation
and CropResize against MXNet 1.9.1's outputs
(tests/fixtures/detection/make_transform_fixture.py), and RandomCrop, RandomGray, RandomApply
on seeded draws, with MXNet's shapes and dtypes."""
import os

import numpy as onp
import pytest

import kiln
from kiln.gluon.data.vision import transforms as T
from paths import FIXTURES

PIL = pytest.importorskip("PIL.Image")
FIXTURE = onp.load(os.path.join(FIXTURES, "detection",
                                "transforms.npz"))


def test_mxnet_1_9_names_are_all_there():
    names = ["Block", "Cast", "CenterCrop", "Compose", "CropResize", "HybridBlock",
             "HybridSequential", "Normalize", "RandomApply", "RandomBrightness",
             "RandomColorJitter", "RandomContrast", "RandomFlipLeftRight",
             "RandomFlipTopBottom", "RandomHue", "RandomLighting", "RandomResizedCrop",
             "RandomRotation", "RandomSaturation", "Resize", "Rotate", "Sequential",
             "ToTensor", "RandomCrop", "RandomGray", "HybridRandomApply", "HybridCompose"]
    assert [n for n in names if not hasattr(T, n)] == []


@pytest.mark.parametrize("i", range(5))
def test_rotate_matches_mxnet(i):
    deg, zoom_in, zoom_out = FIXTURE[f"rotate{i}_args"]
    got = T.Rotate(deg, bool(zoom_in), bool(zoom_out))(kiln.np.array(FIXTURE["chw"]))
    assert got.dtype == onp.float32 and got.shape == FIXTURE["chw"].shape
    onp.testing.assert_allclose(got.asnumpy(), FIXTURE[f"rotate{i}"], atol=2e-6)


def test_image_imrotate_takes_one_angle_per_image_as_mxnet():
    chw = FIXTURE["chw"]
    batch = kiln.np.array(onp.stack([chw, chw[:, ::-1]]))
    got = kiln.image.imrotate(batch, kiln.np.array([15.0, -70.0]))
    onp.testing.assert_allclose(got.asnumpy(), FIXTURE["rotate_batch"], atol=2e-6)
    kiln.np.random.seed(4)
    a = kiln.image.random_rotate(batch, (-10, 10)).asnumpy()
    kiln.np.random.seed(4)
    onp.testing.assert_array_equal(a, kiln.image.random_rotate(batch, (-10, 10)).asnumpy())
    with pytest.raises(kiln.KilnError, match="2 images take 2 angles, got 3"):
        kiln.image.imrotate(batch, [1.0, 2.0, 3.0])
    with pytest.raises(kiln.KilnError, match="one image takes one angle"):
        kiln.image.imrotate(chw, [1.0])
    with pytest.raises(TypeError):          # MXNet 1.9.1 raises a TypeError here
        kiln.image.imrotate(chw, kiln.np.array([1.0, 2.0]))
    with pytest.raises(kiln.KilnError, match="float32"):
        kiln.image.imrotate(chw.astype("float64"), 1.0)


def test_random_rotation_is_a_rotation_by_a_seeded_angle():
    chw = FIXTURE["chw"]
    batch = onp.stack([chw, chw[:, ::-1]])
    kiln.np.random.seed(3)
    a = T.RandomRotation((-30, 30))(batch).asnumpy()
    kiln.np.random.seed(3)
    b = T.RandomRotation((-30, 30))(batch).asnumpy()
    onp.testing.assert_array_equal(a, b)
    assert a.shape == batch.shape and a.dtype == onp.float32
    # each image took its own angle in the range: some angle reproduces it
    angles = onp.linspace(-30, 30, 601)
    for img, out in zip(batch, a):
        errs = [onp.abs(T.Rotate(d)(img).asnumpy() - out).max() for d in angles]
        assert min(errs) < 0.02
    assert T.RandomRotation((-30, 30), rotate_with_proba=0.0)(chw) is chw
    with pytest.raises(kiln.KilnError, match="float32"):
        T.RandomRotation((-30, 30))(FIXTURE["hwc"][0])
    with pytest.raises(kiln.KilnError, match="lower < upper"):
        T.RandomRotation((30, -30))
    with pytest.raises(kiln.KilnError, match="cannot both be True"):
        T.Rotate(10, zoom_in=True, zoom_out=True)


def test_crop_resize_matches_mxnet_and_resizes():
    hwc = FIXTURE["hwc"]
    got = T.CropResize(1, 2, 5, 4)(hwc)
    assert got.dtype == onp.uint8
    onp.testing.assert_array_equal(got.asnumpy(), FIXTURE["cropresize"])
    resized = T.CropResize(1, 2, 5, 4, size=(3, 2))(hwc[0]).asnumpy()
    onp.testing.assert_array_equal(resized, onp.asarray(
        PIL.fromarray(hwc[0, 2:6, 1:6]).resize((3, 2), PIL.BILINEAR)))
    with pytest.raises(kiln.KilnError, match="not inside the 8x7 image"):
        T.CropResize(5, 0, 5, 4)(hwc[0])


def test_random_crop_pads_then_crops_a_box_of_the_padded_image():
    img = onp.arange(5 * 6 * 3, dtype=onp.uint8).reshape(5, 6, 3)
    padded = onp.pad(img, ((2, 2), (2, 2), (0, 0)))
    kiln.np.random.seed(0)
    outs = [T.RandomCrop(4, pad=2)(img).asnumpy() for _ in range(20)]
    kiln.np.random.seed(0)
    again = [T.RandomCrop(4, pad=2)(img).asnumpy() for _ in range(20)]
    corners = set()
    for out, out2 in zip(outs, again):
        onp.testing.assert_array_equal(out, out2)
        assert out.shape == (4, 4, 3) and out.dtype == onp.uint8
        hits = [(y, x) for y in range(6) for x in range(7)
                if (padded[y:y + 4, x:x + 4] == out).all()]
        assert hits
        corners.add(hits[0])
    assert len(corners) > 3  # the corner really is random
    out = T.RandomCrop((3, 2), pad=(1, 0, 0, 2), pad_value=9)(img).asnumpy()
    assert out.shape == (2, 3, 3)
    # smaller than the size: the whole (aspect-matched) image is upsampled
    assert T.RandomCrop(10)(img).shape == (10, 10, 3)
    assert T.RandomCrop(4)(onp.stack([img, img])).shape == (2, 4, 4, 3)


def test_random_gray_gives_the_gray_level_in_float32():
    img = FIXTURE["hwc"][0]
    gray = T.RandomGray(p=1.0)(img).asnumpy()
    assert gray.dtype == onp.float32 and gray.shape == img.shape
    expected = img.astype(onp.float32) @ onp.array([0.2989, 0.587, 0.114], onp.float32)
    for c in range(3):
        onp.testing.assert_allclose(gray[:, :, c], expected, rtol=1e-6)
    kept = T.RandomGray(p=0.0)(img).asnumpy()
    assert kept.dtype == onp.float32
    onp.testing.assert_array_equal(kept, img)


def test_random_apply_applies_with_probability_p():
    img = FIXTURE["hwc"][0]
    flip = T.RandomApply([T.RandomFlipLeftRight(p=1.0)], p=0.5)
    kiln.np.random.seed(5)
    flipped = [not (onp.asarray(flip(img)) == img).all() for _ in range(200)]
    assert 60 < sum(flipped) < 140
    assert T.RandomApply(T.RandomFlipLeftRight(p=1.0), p=1.0)(img).asnumpy()[0, 0].tolist() \
        == img[0, -1].tolist()
    assert T.RandomApply(T.RandomFlipLeftRight(p=1.0), p=0.0)(img) is img


def test_transforms_pass_the_rest_of_a_sample_through():
    from kiln.gluon.data import ArrayDataset
    imgs = FIXTURE["hwc"]
    ds = ArrayDataset(imgs, onp.array([3, 5])).transform(
        T.Compose([T.ToTensor(), T.Normalize(0.5, 0.25)]))
    x, y = ds[1]
    assert x.shape == (3, 7, 8) and int(y) == 5
    onp.testing.assert_allclose(x.asnumpy(), (imgs[1].transpose(2, 0, 1) / 255 - 0.5) / 0.25,
                                rtol=1e-5, atol=1e-6)
    out, label, extra = T.RandomFlipLeftRight(p=1.0)(imgs[0], 7, "id")
    assert (label, extra) == (7, "id")
    onp.testing.assert_array_equal(out.asnumpy(), imgs[0][:, ::-1])
