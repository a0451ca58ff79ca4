"""gluon.data.vision.transforms: MXNet's definitions, checked on small images."""
import colorsys

import numpy as onp
import pytest

import kiln
from kiln.gluon.data import ArrayDataset, DataLoader
from kiln.gluon.data.vision import transforms as T

PIL = pytest.importorskip("PIL.Image")


def _img(h=6, w=8, seed=0):
    return onp.random.RandomState(seed).randint(0, 256, (h, w, 3)).astype(onp.uint8)


def test_to_tensor_normalize_cast():
    arr = _img()
    t = T.ToTensor()(kiln.np.array(arr, dtype="uint8"))
    assert t.shape == (3, 6, 8) and t.dtype == onp.float32
    onp.testing.assert_allclose(t.asnumpy(), arr.transpose(2, 0, 1) / 255.0, rtol=1e-6)
    assert T.ToTensor()(onp.stack([arr, arr])).shape == (2, 3, 6, 8)
    n = T.Normalize(mean=(0.1, 0.2, 0.3), std=(0.5, 0.25, 2.0))(t).asnumpy()
    expected = (arr.transpose(2, 0, 1) / 255.0 - onp.array([0.1, 0.2, 0.3])[:, None, None]) \
        / onp.array([0.5, 0.25, 2.0])[:, None, None]
    onp.testing.assert_allclose(n, expected, rtol=1e-5)
    with pytest.raises(kiln.KilnError, match="mean has 2 values for 3 channels"):
        T.Normalize(mean=(0.1, 0.2))(t)
    assert T.Cast("float16")(arr).dtype == onp.float16
    with pytest.raises(kiln.KilnError, match=r"expected an image \(H, W, C\)"):
        T.ToTensor()(onp.zeros(5))


def test_resize_and_center_crop():
    arr = _img(6, 8)
    out = T.Resize((4, 3))(arr)
    onp.testing.assert_array_equal(out.asnumpy(), onp.asarray(
        PIL.fromarray(arr).resize((4, 3), PIL.BILINEAR)))
    assert T.Resize(3, keep_ratio=True)(arr).shape == (3, 4, 3)
    assert T.Resize(5)(onp.stack([arr] * 2)).shape == (2, 5, 5, 3)
    onp.testing.assert_array_equal(T.CenterCrop((4, 2))(arr).asnumpy(), arr[2:4, 2:6])


def test_random_resized_crop_is_a_resized_box_of_the_image():
    arr = onp.arange(64 * 48 * 3, dtype=onp.int64).reshape(48, 64, 3).astype(onp.float32)
    out = T.RandomResizedCrop((8, 8), scale=(0.1, 0.2), interpolation=0)(arr).asnumpy()
    assert out.shape == (8, 8, 3)
    # nearest-neighbour samples of a box: rows and columns step by a constant inside it
    assert set(onp.unique(out)).issubset(set(onp.unique(arr)))
    assert onp.all(onp.diff(out[:, :, 0], axis=1) >= 0)


def test_flips():
    arr = _img()
    onp.testing.assert_array_equal(T.RandomFlipLeftRight(p=1.0)(arr).asnumpy(), arr[:, ::-1])
    onp.testing.assert_array_equal(T.RandomFlipTopBottom(p=1.0)(arr).asnumpy(), arr[::-1])
    onp.testing.assert_array_equal(T.RandomFlipLeftRight(p=0.0)(arr).asnumpy(), arr)


def test_brightness_scales_every_pixel_by_one_factor():
    arr = (_img().astype(onp.float32) + 1)
    for _ in range(5):
        ratio = T.RandomBrightness(0.3)(arr).asnumpy() / arr
        assert onp.allclose(ratio, ratio.flat[0], rtol=1e-5) and 0.7 <= ratio.flat[0] <= 1.3


def test_contrast_and_saturation_blend_with_gray():
    arr = _img().astype(onp.float32)
    luma = arr @ onp.array([0.299, 0.587, 0.114])
    out = T.RandomContrast(0.5)(arr).asnumpy()
    # out = a*x + (1-a)*mean(gray): an affine map with the same a for every value
    a = (out[0, 0, 0] - out[0, 1, 0]) / (arr[0, 0, 0] - arr[0, 1, 0])
    onp.testing.assert_allclose(out, a * arr + (1 - a) * luma.mean(), rtol=1e-4, atol=1e-3)
    out = T.RandomSaturation(0.5)(arr).asnumpy()
    # each pixel keeps its own gray value
    onp.testing.assert_allclose(out @ onp.array([0.299, 0.587, 0.114]), luma, rtol=1e-4)


def test_hue_rotates_hue_and_keeps_gray():
    gray = onp.full((2, 2, 3), 100, onp.float32)
    # MXNet's rounded YIQ coefficients leave gray unchanged to about 1e-3 relative
    onp.testing.assert_allclose(T.RandomHue(0.5)(gray).asnumpy(), gray, rtol=2e-3)
    red = onp.zeros((1, 1, 3), onp.float32)
    red[..., 0] = 0.8
    hues = [colorsys.rgb_to_hsv(*onp.clip(T.RandomHue(0.4)(red).asnumpy()[0, 0], 0, 1))[0]
            for _ in range(20)]
    assert max(abs(h - round(h)) for h in hues) > 0.02  # the hue moved away from red


def test_uint8_results_saturate():
    arr = onp.full((2, 2, 3), 250, onp.uint8)
    out = T.RandomBrightness(0.5)(arr)
    assert out.dtype == onp.uint8 and out.asnumpy().max() <= 255


def test_lighting_adds_one_colour_shift():
    arr = _img().astype(onp.float32)
    diff = T.RandomLighting(0.1)(arr).asnumpy() - arr
    onp.testing.assert_allclose(diff, onp.broadcast_to(diff[0, 0], diff.shape), atol=1e-4)
    assert onp.abs(diff[0, 0]).max() > 0


def test_color_jitter_and_compose():
    arr = _img()
    out = T.Compose([T.RandomColorJitter(0.2, 0.2, 0.2, 0.1), T.ToTensor()])(arr)
    assert out.shape == (3, 6, 8) and out.dtype == onp.float32
    assert 0.0 <= float(out.min()) and float(out.max()) <= 1.0


def test_workers_draw_their_own_random_choices():
    # all workers fork from one random state; each must draw its own flips
    arr = onp.stack([_img()] * 64)
    ds = ArrayDataset(arr, onp.zeros(64)).transform_first(T.RandomFlipLeftRight())
    loader = DataLoader(ds, batch_size=8, num_workers=2)
    flipped = [bool((x.asnumpy()[i] != arr[0]).any()) for x, _ in loader for i in range(8)]
    per_batch = [tuple(flipped[i:i + 8]) for i in range(0, 64, 8)]
    assert len(set(per_batch)) > 2
