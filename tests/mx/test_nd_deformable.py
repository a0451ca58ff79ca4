"""Deformable convolutions (v1 and the modulated v2) against MXNet 1.9.1 on the same inputs
(fixture made with real MXNet: tests/fixtures/deformable/make_fixture.py), zero offsets
against the plain convolution, gradients (data, offsets, mask, weights) against finite
differences, hybridized against eager."""
import os

import numpy as onp

from kiln import nd
from kiln.fuzz.compare import compare
from conftest import assert_close
from test_nd_legacy_names import check_grad
from paths import FIXTURES

F = onp.load(os.path.join(FIXTURES, "deformable", "deformable.npz"))


def test_equals_mxnet():
    x, w, b = nd.array(F["x"]), nd.array(F["w"]), nd.array(F["b"])
    v1 = nd.contrib.DeformableConvolution(x, nd.array(F["off"]), w, b, kernel=(3, 3),
                                          pad=(1, 1), num_filter=6, num_deformable_group=2)
    assert_close(v1, F["v1"], rtol=1e-5, atol=2e-6)
    v2 = nd.contrib.ModulatedDeformableConvolution(
        x, nd.array(F["off2"]), nd.array(F["mask"]), nd.array(F["w"][:, :2]), b, kernel=(3, 3),
        stride=(2, 2), num_filter=6, num_group=2)
    assert_close(v2, F["v2"], rtol=1e-5, atol=2e-6)
    dilated = nd.contrib.DeformableConvolution(x, nd.array(F["off"][:, :18] * 3), w,
                                               kernel=(3, 3), pad=(2, 2), dilate=(2, 2),
                                               num_filter=6, no_bias=True)
    assert_close(dilated, F["v1_dilated"], rtol=1e-5, atol=2e-6)


def test_zero_offsets_are_a_convolution():
    x, w, b = nd.array(F["x"]), nd.array(F["w"]), nd.array(F["b"])
    out = nd.contrib.DeformableConvolution(x, nd.zeros((2, 18, 5, 6)), w, b, kernel=(3, 3),
                                           pad=(1, 1), num_filter=6)
    ref = nd.Convolution(x, w, b, kernel=(3, 3), pad=(1, 1), num_filter=6)
    assert_close(out, ref, rtol=1e-5, atol=1e-5)


def test_gradients_and_hybridized():
    rng = onp.random.default_rng(2)
    x, off = rng.uniform(-1, 1, (1, 2, 3, 3)), rng.uniform(-0.4, 0.4, (1, 8, 2, 2))
    mask, w = rng.uniform(0.2, 1, (1, 4, 2, 2)), rng.uniform(-1, 1, (2, 2, 2, 2))

    def v2(data, offset, m, weight):
        return nd.contrib.ModulatedDeformableConvolution(data, offset, m, weight, kernel=(2, 2),
                                                         num_filter=2, no_bias=True)
    check_grad(v2, x, off + 0.05, mask, w)        # + 0.05: no sample on a pixel edge

    def v1(data, offset, weight):
        return nd.contrib.DeformableConvolution(data, offset, weight, kernel=(2, 2),
                                                num_filter=2, no_bias=True)
    check_grad(v1, x, off + 0.05, w)
    assert not compare(v1, [nd.array(v) for v in (x, off, w)], strict=True)
