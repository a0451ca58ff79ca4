"""gluon.contrib.cnn Deformable/ModulatedDeformableConvolution equal MXNet 1.9.1's outputs
(and for v1 its gradients of the input, the offsets' weights and the weights; MXNet's v2
backward is GPU-only, so v2's gradients are checked against finite differences) on offsets
of a few pixels, some outside the image (fixture made with MXNet), eager and hybridized;
zero offsets give a convolution."""
import os

import numpy as onp
import pytest

from kiln import autograd
from kiln import gluon, np
from kiln.base import KilnError
from kiln.gluon.contrib import cnn
from paths import FIXTURES

FIXTURE = onp.load(os.path.join(FIXTURES, "mxnet_infra",
                                "deformable.npz"))
CASES = {
    "v1": lambda: cnn.DeformableConvolution(4, 3, padding=1, in_channels=4),
    "v1_strided": lambda: cnn.DeformableConvolution(3, (3, 2), strides=2, dilation=(1, 2),
                                                    num_deformable_group=2, in_channels=4),
    "v2": lambda: cnn.ModulatedDeformableConvolution(4, 3, padding=1, in_channels=4),
    "v2_groups": lambda: cnn.ModulatedDeformableConvolution(4, 3, padding=2, dilation=2,
                                                            groups=2, num_deformable_group=2,
                                                            in_channels=4),
}


# hybridized for two cases only: each compiles a forward and backward program (slow cold)
@pytest.mark.parametrize("case,hybrid", [(c, False) for c in sorted(CASES)]
                         + [("v1_strided", True), ("v2_groups", True)])
def test_equals_mxnet(case, hybrid):
    block = CASES[case]()
    block.initialize()
    params = block.collect_params()
    prefix = f"{case}/param/"
    assert sorted(params) == sorted(k[len(prefix):] for k in FIXTURE if k.startswith(prefix))
    for name, p in params.items():
        p.set_data(np.array(FIXTURE[prefix + name]))
    if hybrid:
        block.hybridize(strict=True)
    x = np.array(FIXTURE[f"{case}/x"])
    x.attach_grad()
    with autograd.record():
        y = block(x)
        total = (y * y).sum()
    total.backward()
    onp.testing.assert_allclose(y.asnumpy(), FIXTURE[f"{case}/y"], rtol=1e-4, atol=1e-4)
    if f"{case}/grad" not in FIXTURE:
        return
    onp.testing.assert_allclose(x.grad.asnumpy(), FIXTURE[f"{case}/grad"], rtol=1e-3,
                                atol=1e-3)
    for name, p in params.items():
        onp.testing.assert_allclose(p.grad().asnumpy(), FIXTURE[f"{case}/pgrad/{name}"],
                                    rtol=1e-3, atol=2e-3, err_msg=name)


def test_zero_offsets_are_a_convolution():
    x = np.array(onp.random.RandomState(0).rand(2, 3, 5, 6).astype(onp.float32))
    deform = cnn.DeformableConvolution(4, 3, padding=1, strides=2)
    deform.initialize()
    conv = gluon.nn.Conv2D(4, 3, padding=1, strides=2)
    conv.initialize()
    deform(x)
    conv(x)
    conv.weight.set_data(deform.deformable_conv_weight.data())
    onp.testing.assert_allclose(deform(x).asnumpy(), conv(x).asnumpy(), rtol=1e-5, atol=1e-6)
    with pytest.raises(KilnError, match="NCHW"):
        cnn.DeformableConvolution(4, 3, layout="NHWC")


@pytest.mark.parametrize("modulated", [False, True])
def test_sampling_gradients_match_finite_differences(modulated):
    rng = onp.random.RandomState(2)
    x = rng.randn(1, 2, 4, 5)
    offset = rng.uniform(-1.5, 1.5, (1, 2 * 4, 3, 4))      # 2x2 kernel, stride 1, pad 0
    mask = rng.uniform(0, 2, (1, 4, 3, 4)) if modulated else None
    proj = rng.randn(1, 2 * 4, 12)

    def value(xv, ov, mv):
        cols, _ = cnn.deformable_columns(np.array(xv), np.array(ov),
                                         None if mv is None else np.array(mv), (2, 2),
                                         (1, 1), (0, 0), (1, 1), 1)
        return cols, float((cols.asnumpy() * proj).sum())

    arrays = [np.array(x), np.array(offset)] + ([np.array(mask)] if modulated else [])
    for a in arrays:
        a.attach_grad()
    with autograd.record():
        cols, _ = cnn.deformable_columns(arrays[0], arrays[1],
                                         arrays[2] if modulated else None, (2, 2), (1, 1),
                                         (0, 0), (1, 1), 1)
        total = (cols * np.array(proj)).sum()
    total.backward()
    base = [x, offset] + ([mask] if modulated else [])
    for k, a in enumerate(arrays):
        numeric = onp.zeros_like(base[k])
        for i in range(base[k].size):
            hi = [b.copy() for b in base]
            lo = [b.copy() for b in base]
            hi[k].flat[i] += 1e-6
            lo[k].flat[i] -= 1e-6
            numeric.flat[i] = (value(*(hi + [None] * (3 - len(hi))))[1]
                               - value(*(lo + [None] * (3 - len(lo))))[1]) / 2e-6
        onp.testing.assert_allclose(a.grad.asnumpy(), numeric, rtol=1e-4, atol=1e-6)
