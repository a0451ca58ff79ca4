"""npx.multibox_prior / npx.roi_pooling / npx.batch_flatten, against MXNet 1.9.1's outputs
(recorded from a run of the real MXNet) and against loop references written from its spec."""
import math

import numpy as onp
import pytest

from kiln import autograd
from kiln import np, npx


def _prior_reference(h, w, sizes, ratios, steps=(-1, -1), offsets=(0.5, 0.5), clip=False):
    """MXNet's MultiBoxPrior, pixel by pixel."""
    sy = 1.0 / h if steps[0] <= 0 else steps[0]
    sx = 1.0 / w if steps[1] <= 0 else steps[1]
    out = []
    for r in range(h):
        cy = (r + offsets[0]) * sy
        for c in range(w):
            cx = (c + offsets[1]) * sx
            shapes = [(s, math.sqrt(ratios[0])) for s in sizes]
            shapes += [(sizes[0], math.sqrt(q)) for q in ratios[1:]]
            for s, q in shapes:
                hw, hh = s * h / w * q / 2, s / q / 2
                out.append([cx - hw, cy - hh, cx + hw, cy + hh])
    out = onp.array(out, onp.float32)[None]
    return onp.clip(out, 0, 1) if clip else out


@pytest.mark.parametrize("h,w,sizes,ratios,kw", [
    (5, 7, [0.75, 0.5, 0.25], [1, 2, 0.5], {}),
    (4, 3, [0.9], [1, 3], dict(clip=True, steps=(0.3, 0.2), offsets=(0.2, 0.7))),
    (1, 1, [0.8], [1], {}),
])
def test_multibox_prior_matches_the_spec(h, w, sizes, ratios, kw):
    got = npx.multibox_prior(np.zeros((1, 3, h, w)), sizes=sizes, ratios=ratios, **kw)
    assert got.dtype == onp.float32
    assert got.shape == (1, h * w * (len(sizes) + len(ratios) - 1), 4)
    onp.testing.assert_allclose(got.asnumpy(), _prior_reference(h, w, sizes, ratios, **kw),
                                atol=1e-6)


def test_multibox_prior_first_pixel_as_mxnet():
    # MXNet 1.9.1: npx.multibox_prior(np.zeros((1, 3, 5, 7)), sizes=[0.75, 0.5, 0.25],
    # ratios=[1, 2, 0.5])[0, :2]
    got = npx.multibox_prior(np.zeros((1, 3, 5, 7)), sizes=[0.75, 0.5, 0.25],
                             ratios=[1, 2, 0.5]).asnumpy()[0, :2]
    cx, cy = 0.5 / 7, 0.5 / 5
    onp.testing.assert_allclose(got, [[cx - 0.75 * 5 / 7 / 2, cy - 0.375, cx + 0.75 * 5 / 7 / 2,
                                       cy + 0.375],
                                      [cx - 0.5 * 5 / 7 / 2, cy - 0.25, cx + 0.5 * 5 / 7 / 2,
                                       cy + 0.25]], atol=1e-6)


def test_roi_pooling_as_mxnet():
    X = np.arange(16).reshape(1, 1, 4, 4).astype("float32")
    rois = np.array([[0, 0, 0, 20, 20], [0, 0, 10, 30, 30], [0, 5, 5, 25, 38],
                     [0, -10, -4, 6, 2]])
    got = npx.roi_pooling(X, rois, pooled_size=(2, 2), spatial_scale=0.1)
    # the output of MXNet 1.9.1 on the same call
    expected = [[[[5, 6], [9, 10]]], [[[9, 11], [13, 15]]], [[[10, 11], [14, 15]]],
                [[[0, 1], [0, 1]]]]
    onp.testing.assert_array_equal(got.asnumpy(), onp.array(expected, onp.float32))


def test_roi_pooling_gradient_goes_to_each_bins_maximum():
    rs = onp.random.RandomState(0)
    data = rs.permutation(2 * 3 * 6 * 5).reshape(2, 3, 6, 5).astype(onp.float32)
    X = np.array(data)
    X.attach_grad()
    rois = np.array([[1, 0, 0, 40, 50], [0, 8, 8, 30, 30]])
    with autograd.record():
        Y = npx.roi_pooling(X, rois, pooled_size=(2, 3), spatial_scale=0.1)
    Y.backward()
    expected = onp.zeros_like(data)
    for out, (b, *_) in zip(Y.asnumpy(), rois.asnumpy().astype(int)):
        for c, plane in enumerate(out):
            for v in plane.ravel():  # values are distinct, so each bin's max has one home
                expected[b, c][data[b, c] == v] += 1
    onp.testing.assert_array_equal(X.grad.asnumpy(), expected)


def test_roi_pooling_bad_rois_say_what_was_expected():
    with pytest.raises(Exception, match="rois must be"):
        npx.roi_pooling(np.zeros((1, 1, 4, 4)), np.zeros((2, 4)), (2, 2), 1.0)
    with pytest.raises(Exception, match="batch index 3"):
        npx.roi_pooling(np.zeros((1, 1, 4, 4)), np.array([[3, 0, 0, 2, 2]]), (2, 2), 1.0)


def test_batch_flatten_and_clip_keywords():
    assert npx.batch_flatten(np.ones((2, 3, 4))).shape == (2, 12)
    assert npx.batch_flatten(np.ones((5,))).shape == (5, 1)
    a = np.array([-1.0, 0.5, 3.0])
    onp.testing.assert_array_equal(a.clip(min=0).asnumpy(), [0, 0.5, 3])
    onp.testing.assert_array_equal(a.clip(max=1).asnumpy(), [-1, 0.5, 1])
    onp.testing.assert_array_equal(a.clip(0, 1).asnumpy(), [0, 0.5, 1])


def test_set_printoptions_controls_array_text():
    saved = np.get_printoptions()
    try:
        np.set_printoptions(precision=2)
        assert "1.23" in str(np.array([1.23456])) and "1.2345" not in str(np.array([1.23456]))
    finally:
        np.set_printoptions(**saved)
